//! Issue 37 on the fake GitLab: the repository's committed Makefile gives a detected `make test`,
//! which proves the subtask on its tree; the checklist note shows the proof.

use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;

use super::ci_job::{ONE_TASK, run, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, access};
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

#[test]
fn gitlab_pipeline_proves_the_subtask_with_the_detected_make_test() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    // The plan maps its criterion to the detected check.
    let mapped = ONE_TASK.replace(
        r#""constraints": []}"#,
        r#""constraints": [], "criteria_evidence": [{"criterion": "hello.md exists", "evidence": "make test"}]}"#,
    );
    assert_ne!(mapped, ONE_TASK);
    let llm = LlmServer::start(scenario(&mapped));
    let checkout = TestRepo::new();
    checkout.write("Makefile", "test:\n\ttest -f hello.md\n");
    checkout.commit_all("a Makefile");

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("checks detected: `make test`"),
        "{}",
        text(&output)
    );
    let history = fake
        .file_at_ref(
            "replan-history",
            &format!("planning_history/issues/{iid}.jsonl"),
        )
        .expect("history committed to the branch");
    let entries = jsonl::parse(&history).entries;
    let proof = entries
        .iter()
        .find_map(|e| match &e.body {
            EntryBody::Check(c) if c.task_id.is_some() => Some(c.clone()),
            _ => None,
        })
        .expect("a check proved the subtask");
    assert!(proof.passed() && proof.name == "make test", "{proof:?}");
    let short: String = proof.tree.as_deref().unwrap().chars().take(7).collect();
    let notes = fake.notes(Noteable::Issue(iid));
    let checklist = notes
        .iter()
        .find(|n| n.body.starts_with("<!-- replan:checklist -->"))
        .expect("the checklist note");
    assert!(
        checklist
            .body
            .contains(&format!("✅ `make test` on `{short}`")),
        "{}",
        checklist.body
    );
    let status = entries.iter().rev().find_map(|e| match &e.body {
        EntryBody::RunFinished { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(status, Some(RunStatus::Completed));
}
