//! Issue 35, point 3: the work-branch restore is exact, and a save never builds on a branch
//! tip whose files were not restored. Both lost work before: an overlay checkout brought back
//! files the saved tree had deleted or renamed away, and a refused restore left the fetched
//! branch as the base of the next save, which then pushed a tree without the earlier work.

use crate::support::TestRepo;
use replan::tools::git::{
    CommitAuthor, GitPushPublisher, Publisher, Snapshots, restore_working_tree,
};

const BRANCH: &str = "replan/work/issue-3";

/// (origin, first checkout): `main` with `old.txt` and `keep.txt`; the first run deleted
/// `old.txt`, renamed `keep.txt` to `kept.txt` and added `new.txt`, and saved that on the work
/// branch (pushed to origin).
fn saved_work() -> (TestRepo, TestRepo) {
    let origin = TestRepo::bare();
    let first = TestRepo::clone_from(&origin);
    let _ = first.try_git(&["checkout", "-q", "-b", "main"]);
    first.write("old.txt", "old\n");
    first.write("keep.txt", "keep\n");
    first.commit_all("init");
    first.run_git(&["push", "-q", "origin", "main"]);
    std::fs::remove_file(first.path().join("old.txt")).unwrap();
    std::fs::rename(first.path().join("keep.txt"), first.path().join("kept.txt")).unwrap();
    first.write("new.txt", "new\n");
    let mut snapshots = Snapshots::open(first.path(), BRANCH).unwrap();
    snapshots
        .save(first.path(), BRANCH, "work", &CommitAuthor::default())
        .unwrap()
        .expect("the work is a change");
    first.run_git(&["push", "-q", "origin", BRANCH]);
    (origin, first)
}

fn fresh_checkout(origin: &TestRepo) -> TestRepo {
    let fresh = TestRepo::clone_from(origin);
    let _ = fresh.try_git(&["checkout", "-q", "main"]);
    fresh
}

#[test]
fn a_restore_brings_back_exactly_the_saved_tree() {
    let (origin, _first) = saved_work();
    let fresh = fresh_checkout(&origin);
    assert!(restore_working_tree(fresh.path(), BRANCH).unwrap());
    assert_eq!(fresh.read("kept.txt"), "keep\n");
    assert_eq!(fresh.read("new.txt"), "new\n");
    for gone in ["old.txt", "keep.txt"] {
        assert!(
            !fresh.path().join(gone).exists(),
            "{gone}, deleted or renamed away in the saved tree, came back"
        );
    }
}

#[tokio::test]
async fn a_refused_restore_never_becomes_the_base_of_a_save() {
    let (origin, _first) = saved_work();
    let saved = origin.rev_parse(BRANCH).unwrap();
    let fresh = fresh_checkout(&origin);
    // An untracked file: the restore is refused.
    fresh.write("stray.txt", "stray\n");
    assert!(!restore_working_tree(fresh.path(), BRANCH).unwrap());
    // The run goes on and saves what its working tree holds.
    fresh.write("later.txt", "later\n");
    let mut snapshots = Snapshots::open(fresh.path(), BRANCH).unwrap();
    let commit = snapshots
        .save(fresh.path(), BRANCH, "later", &CommitAuthor::default())
        .unwrap()
        .expect("a change");
    let pushed = GitPushPublisher
        .publish_commit(fresh.path(), &commit, BRANCH)
        .await;
    // The earlier work stays on origin's work branch: the push is refused, not a fast-forward
    // to a tree without it.
    assert!(
        pushed.is_err(),
        "the save built on the unrestored tip was pushed"
    );
    assert_eq!(origin.rev_parse(BRANCH), Some(saved.clone()));
    let files = origin.run_git(&["ls-tree", "-r", "--name-only", BRANCH]);
    assert!(
        files.contains("kept.txt") && files.contains("new.txt"),
        "kept.txt lost: {files}"
    );
}
