//! When a save's push goes without `git push` and when it is left to git: a publisher whose
//! `git push` is counted, pushing to a bare repository on this machine.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone)]
struct Counted {
    remote: PathBuf,
    pushes: Arc<AtomicUsize>,
    resolved: Arc<std::sync::OnceLock<Option<Remote>>>,
}

impl GitPush for Counted {
    fn push_refspec(&self, repo: &Path, refspec: &str) -> Result<(), ToolError> {
        self.pushes.fetch_add(1, Ordering::SeqCst);
        let remote = self.remote.to_str().unwrap();
        git(repo, &["push", "--quiet", remote, refspec], &[]).map(drop)
    }

    fn remote(&self, repo: &Path) -> Option<Remote> {
        let settings = PushSettings::read(repo)?;
        Remote::resolve(repo, &settings, self.remote.to_str()?, Vec::new())
    }

    fn resolved(&self) -> &std::sync::OnceLock<Option<Remote>> {
        &self.resolved
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    work: PathBuf,
    remote: PathBuf,
    publisher: Counted,
}

const BRANCH: &str = "replan/work/issue-8";

/// A checkout with `a.txt` on `main`, pushed to a bare repository.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (work, remote) = super::token_push_tests::work_and_bare_remote(dir.path());
    super::token_push_tests::run(&work, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let publisher = Counted {
        remote: remote.clone(),
        pushes: Arc::default(),
        resolved: Arc::default(),
    };
    Setup {
        _dir: dir,
        work,
        remote,
        publisher,
    }
}

impl Setup {
    /// Write `files`, commit them on the snapshots and push the commit as the work branch does.
    async fn save(&self, snapshots: &mut Snapshots, files: &[(&str, &str)]) -> SavedPush {
        self.save_through(snapshots, files, None).await
    }

    /// [`Setup::save`] through a push started before the files were written.
    async fn save_through(
        &self,
        snapshots: &mut Snapshots,
        files: &[(&str, &str)],
        opened: Option<Opened>,
    ) -> SavedPush {
        for (path, text) in files {
            let path = self.work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let commit = snapshots
            .commit(&self.work, "save", &CommitAuthor::default())
            .unwrap()
            .unwrap();
        let outgoing = snapshots.take_outgoing();
        snapshots.advance(&self.work, BRANCH, &commit).unwrap();
        let before = self.pushes();
        let pushed = self
            .publisher
            .publish_commit(&self.work, &commit, BRANCH, outgoing.as_ref(), opened)
            .await;
        snapshots.pushed(pushed.is_ok());
        SavedPush {
            commit,
            packed: outgoing.is_some(),
            git_push: self.pushes() > before,
            pushed: pushed.is_ok(),
        }
    }

    fn pushes(&self) -> usize {
        self.publisher.pushes.load(Ordering::SeqCst)
    }

    fn remote_git(&self, args: &[&str]) -> String {
        git(&self.remote, args, &[]).unwrap()
    }
}

#[derive(Debug, PartialEq)]
struct SavedPush {
    commit: String,
    packed: bool,
    git_push: bool,
    pushed: bool,
}

#[tokio::test]
async fn saves_go_without_git_push_until_the_remote_branch_is_not_where_they_left_it() {
    let s = setup();
    let mut snapshots = Snapshots::open_for_push(&s.work, BRANCH).unwrap();
    let first = s.save(&mut snapshots, &[("b.txt", "b\n")]).await;
    let second = s
        .save(
            &mut snapshots,
            &[("a.txt", "A\n"), ("src/deep/c.rs", "c\n")],
        )
        .await;
    for saved in [&first, &second] {
        assert!(saved.packed && saved.pushed && !saved.git_push, "{saved:?}");
    }
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), second.commit);
    assert_eq!(
        s.remote_git(&["ls-tree", "-r", "--name-only", BRANCH]),
        "a.txt\nb.txt\nsrc/deep/c.rs"
    );
    assert_eq!(s.remote_git(&["show", &format!("{BRANCH}:a.txt")]), "A");
    s.remote_git(&["fsck", "--strict", "--no-dangling"]);

    // Someone else moves the remote branch: the in-process push refuses to start from
    // elsewhere, and `git push` refuses a non-fast-forward.
    let identity = CommitAuthor::default();
    let tree = "main^{tree}";
    let moved = git(
        &s.remote,
        &["commit-tree", tree, "-p", "main", "-m", "other"],
        &identity.identity(),
    )
    .unwrap();
    s.remote_git(&["update-ref", &format!("refs/heads/{BRANCH}"), &moved]);
    let third = s.save(&mut snapshots, &[("d.txt", "d\n")]).await;
    assert!(third.packed && third.git_push && !third.pushed, "{third:?}");
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), moved);
    // What the remote holds is unknown now: the next save is git's too.
    let fourth = s.save(&mut snapshots, &[("e.txt", "e\n")]).await;
    assert!(!fourth.packed && fourth.git_push, "{fourth:?}");
}

#[tokio::test]
async fn a_checkout_whose_index_is_not_its_head_pushes_the_first_save_with_git() {
    let s = setup();
    std::fs::write(s.work.join("staged.txt"), "staged\n").unwrap();
    git(&s.work, &["add", "staged.txt"], &[]).unwrap();
    let mut snapshots = Snapshots::open_for_push(&s.work, BRANCH).unwrap();
    let first = s.save(&mut snapshots, &[("b.txt", "b\n")]).await;
    assert!(!first.packed && first.git_push && first.pushed, "{first:?}");
    // That push tells what the remote holds: the next save goes without git.
    let second = s.save(&mut snapshots, &[("c.txt", "c\n")]).await;
    assert!(
        second.packed && !second.git_push && second.pushed,
        "{second:?}"
    );
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), second.commit);
    s.remote_git(&["fsck", "--strict", "--no-dangling"]);
}

/// A setup whose checkout keeps the blob of "packed\n" in a pack only.
fn setup_with_a_packed_blob() -> Setup {
    let s = setup();
    let run = |args: &[&str]| git(&s.work, args, &[]).unwrap();
    run(&["switch", "-q", "-c", "side"]);
    std::fs::write(s.work.join("x.txt"), "packed\n").unwrap();
    run(&["add", "x.txt"]);
    run(&["commit", "-q", "-m", "x"]);
    run(&["switch", "-q", "main"]);
    run(&["gc", "-q"]);
    s
}

#[tokio::test]
async fn a_file_whose_blob_git_keeps_packed_is_left_to_git_push() {
    let s = setup_with_a_packed_blob();
    // An attributes file leaves the add to git, which finds the blob in the pack and does not
    // store it again.
    let attributes = s.work.join(".git/info/attributes");
    std::fs::create_dir_all(attributes.parent().unwrap()).unwrap();
    std::fs::write(&attributes, "").unwrap();
    let mut snapshots = Snapshots::open_for_push(&s.work, BRANCH).unwrap();
    let saved = s.save(&mut snapshots, &[("x.txt", "packed\n")]).await;
    assert!(!saved.packed && saved.git_push && saved.pushed, "{saved:?}");
    assert_eq!(
        s.remote_git(&["show", &format!("{BRANCH}:x.txt")]),
        "packed"
    );
    // The add without git stores it loose, and the push goes without git too.
    let s = setup_with_a_packed_blob();
    let mut snapshots = Snapshots::open_for_push(&s.work, BRANCH).unwrap();
    let saved = s.save(&mut snapshots, &[("y.txt", "packed\n")]).await;
    assert!(saved.packed && !saved.git_push && saved.pushed, "{saved:?}");
    assert_eq!(
        s.remote_git(&["show", &format!("{BRANCH}:y.txt")]),
        "packed"
    );
    s.remote_git(&["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn a_pre_push_hook_or_push_settings_leave_the_push_to_git() {
    let s = setup();
    let url = s.remote.to_str().unwrap();
    let resolve = |url: &str| {
        let settings = PushSettings::read(&s.work).unwrap();
        Remote::resolve(&s.work, &settings, url, Vec::new())
    };
    let set = |key: &str, value: &str| git(&s.work, &["config", key, value], &[]).unwrap();
    let unset = |key: &str| git(&s.work, &["config", "--unset", key], &[]).unwrap();
    assert!(matches!(resolve(url), Some(Remote::Local(_))));
    assert!(resolve("relative/path.git").is_none());
    assert!(resolve("git@github.com:o/r.git").is_none());
    assert!(resolve("https://u:p@example.com/o/r.git").is_none());
    for key in [
        "push.gpgSign",
        "push.pushOption",
        "remote.origin.receivepack",
    ] {
        set(key, "x");
        assert!(resolve(url).is_none(), "{key}");
        unset(key);
    }
    let hook = s.work.join(".git/hooks/pre-push");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    assert!(resolve(url).is_none(), "a pre-push hook");
    std::fs::remove_file(&hook).unwrap();
    std::fs::create_dir_all(s.work.join(".husky")).unwrap();
    std::fs::write(s.work.join(".husky/pre-push"), "#!/bin/sh\n").unwrap();
    set("core.hooksPath", ".husky");
    assert!(resolve(url).is_none(), "a pre-push hook in core.hooksPath");
    unset("core.hooksPath");
    let https = "https://example.com/o/r.git";
    set("http.https://example.com/.proxy", "http://p:3128");
    assert!(resolve(https).is_none(), "a proxy for the remote");
    unset("http.https://example.com/.proxy");
    set(
        "http.https://example.com/.extraheader",
        "AUTHORIZATION: basic abc",
    );
    let Some(Remote::Http(remote)) = resolve(https) else {
        panic!("an https remote with an extra header is pushed to in-process");
    };
    assert_eq!(
        remote.headers,
        [("AUTHORIZATION".to_owned(), "basic abc".to_owned())]
    );
    assert!(
        !format!("{remote:?}").contains("abc"),
        "the header stays out of debug output"
    );
}

#[test]
fn origin_is_read_from_the_settings_unless_git_rewrites_it() {
    let s = setup();
    let publisher = GitPushPublisher::default();
    assert!(publisher.remote(&s.work).is_none(), "no origin: no push");
    let url = s.remote.to_str().unwrap();
    git(&s.work, &["remote", "add", "origin", "/elsewhere.git"], &[]).unwrap();
    git(&s.work, &["config", "remote.origin.pushurl", url], &[]).unwrap();
    let settings = PushSettings::read(&s.work).unwrap();
    assert_eq!(settings.origin_push_url().as_deref(), Some(url));
    let rewrite = format!("url.{url}.pushInsteadOf");
    git(
        &s.work,
        &["config", "--unset", "remote.origin.pushurl"],
        &[],
    )
    .unwrap();
    git(&s.work, &["config", &rewrite, "/elsewhere.git"], &[]).unwrap();
    assert_eq!(PushSettings::read(&s.work).unwrap().origin_push_url(), None);
    let Some(Remote::Local(path)) = GitPushPublisher::default().remote(&s.work) else {
        panic!("git resolves the rewritten URL");
    };
    assert_eq!(path, s.remote);
}

#[test]
fn saves_for_a_publisher_that_sends_no_pack_make_none() {
    let s = setup();
    assert!(!NoPublish.sends_packs() && GitPushPublisher::default().sends_packs());
    let mut snapshots = Snapshots::open(&s.work, BRANCH).unwrap();
    std::fs::write(s.work.join("b.txt"), "b\n").unwrap();
    let commit = snapshots.commit(&s.work, "save", &CommitAuthor::default());
    assert!(commit.unwrap().is_some());
    assert!(snapshots.take_outgoing().is_none());
}

/// A save starts its push before `git add` and the commit (the remote's `git receive-pack`
/// waits with its advertisement): the pack goes through it, and a branch someone else moved in
/// between is refused by the remote, not overwritten.
#[tokio::test]
async fn a_push_started_before_its_commit_sends_it_and_never_overwrites_a_moved_branch() {
    let s = setup();
    let mut snapshots = Snapshots::open_for_push(&s.work, BRANCH).unwrap();
    assert!(snapshots.packs_next());
    let first = s.save(&mut snapshots, &[("b.txt", "b\n")]).await;
    assert!(first.pushed && !first.git_push, "{first:?}");

    let opened = s.publisher.open_push(&s.work).await;
    assert!(opened.is_some(), "a local remote's push starts ahead");
    let second = s
        .save_through(&mut snapshots, &[("c.txt", "c\n")], opened)
        .await;
    assert!(second.pushed && !second.git_push, "{second:?}");
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), second.commit);
    s.remote_git(&["fsck", "--strict", "--no-dangling"]);

    // The remote branch moves after the advertisement, before the pack is sent.
    let opened = s.publisher.open_push(&s.work).await;
    let identity = CommitAuthor::default();
    let moved = git(
        &s.remote,
        &["commit-tree", "main^{tree}", "-p", "main", "-m", "other"],
        &identity.identity(),
    )
    .unwrap();
    s.remote_git(&["update-ref", &format!("refs/heads/{BRANCH}"), &moved]);
    let third = s
        .save_through(&mut snapshots, &[("d.txt", "d\n")], opened)
        .await;
    assert!(
        !third.pushed && third.git_push,
        "refused in-process, then by git: {third:?}"
    );
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), moved);

    // Started and never used: the waiting receive-pack is told there is nothing to push.
    drop(s.publisher.open_push(&s.work).await.expect("started"));
    assert_eq!(s.remote_git(&["rev-parse", BRANCH]), moved);
}
