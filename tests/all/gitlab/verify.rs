//! Issue 37 on the fake GitLab: the repository's committed Makefile gives a detected `make test`,
//! which proves the subtask on its tree; the checklist note shows the proof.

use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;

use super::ci_job::{ONE_TASK, text};
use super::world::World;

#[test]
fn gitlab_pipeline_proves_the_subtask_with_the_detected_make_test() {
    // The plan maps its criterion to the detected check.
    let mapped = ONE_TASK.replace(
        r#""constraints": []}"#,
        r#""constraints": [], "criteria_evidence": [{"criterion": "hello.md exists", "evidence": "make test"}]}"#,
    );
    assert_ne!(mapped, ONE_TASK);
    let world = World::new(&mapped);
    let iid = world.alices_issue();
    world
        .checkout
        .write("Makefile", "test:\n\ttest -f hello.md\n");
    world.checkout.commit_all("a Makefile");

    let output = world.start_issue(iid);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("checks detected: `make test`"),
        "{}",
        text(&output)
    );
    let entries = jsonl::parse(&world.history(iid)).entries;
    let proof = entries
        .iter()
        .find_map(|e| match &e.body {
            EntryBody::Check(c) if c.task_id.is_some() => Some(c.clone()),
            _ => None,
        })
        .expect("a check proved the subtask");
    assert!(proof.passed() && proof.name == "make test", "{proof:?}");
    let short: String = proof.tree.as_deref().unwrap().chars().take(7).collect();
    let checklist = world.checklist(iid);
    assert!(
        checklist.contains(&format!("✅ `make test` on `{short}`")),
        "{checklist}"
    );
    let status = entries.iter().rev().find_map(|e| match &e.body {
        EntryBody::RunFinished { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(status, Some(RunStatus::Completed));
}

/// A model that claims success while the final check fails does not end `completed` on GitLab
/// either: `unverified`, with the failing check in the checklist note.
#[test]
fn gitlab_a_failing_final_check_ends_unverified_whatever_the_model_claims() {
    let world = World::new(ONE_TASK);
    let iid = world.alices_issue();
    world.checkout.write(
        ".replan.yml",
        "verify:\n  - name: greets\n    argv: [grep, -q, goodbye, hello.md]\n    when: final\n",
    );
    world.checkout.commit_all("replan config");

    let output = world.start_issue(iid);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let entries = jsonl::parse(&world.history(iid)).entries;
    let status = entries.iter().rev().find_map(|e| match &e.body {
        EntryBody::RunFinished { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(status, Some(RunStatus::Unverified), "{}", text(&output));
    let checklist = world.checklist(iid);
    assert!(checklist.contains("❌ `greets` failed on `"), "{checklist}");
}

/// A model that changes nothing ends `no_changes` on GitLab too.
#[test]
fn gitlab_a_model_that_changes_nothing_ends_no_changes() {
    let world = World::new(&crate::engine::verify::changes_nothing());
    let iid = world.alices_issue();

    let output = world.start_issue(iid);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let entries = jsonl::parse(&world.history(iid)).entries;
    let status = entries.iter().rev().find_map(|e| match &e.body {
        EntryBody::RunFinished { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(status, Some(RunStatus::NoChanges), "{}", text(&output));
}
