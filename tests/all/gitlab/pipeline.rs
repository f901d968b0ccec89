//! The same `replan run` CI path on GitLab: pipeline variables, the fake GitLab API, the
//! scripted LLM server.

use replan::history::jsonl;

use super::ci_job::{ONE_TASK, run, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, access};
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

#[test]
fn gitlab_pipeline_for_an_issue_plans_executes_and_commits_history() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();

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
    let notes = fake.notes(Noteable::Issue(iid));
    let checklist = notes
        .iter()
        .find(|n| n.body.starts_with("<!-- replan:checklist -->"))
        .expect("the checklist note");
    assert!(
        checklist.body.contains("Write hello.md"),
        "{}",
        checklist.body
    );
    assert!(checklist.body.contains("jobs/99"), "{}", checklist.body);
    let history = fake
        .file_at_ref(
            "replan-history",
            &format!("planning_history/issues/{iid}.jsonl"),
        )
        .expect("history committed to the branch");
    let types: Vec<String> = jsonl::parse(&history)
        .entries
        .iter()
        .map(|e| e.body.type_name().to_owned())
        .collect();
    assert!(
        types.contains(&"plan".to_owned()) && types.contains(&"run_finished".to_owned()),
        "{types:?}"
    );
    assert_eq!(checkout.read("hello.md"), "hello\n");
}

#[test]
fn gitlab_pipeline_by_a_reporter_is_refused_silently_or_with_one_reply_when_configured() {
    for reply in [false, true] {
        let fake = FakeGitLab::start();
        fake.add_member("rita", access::REPORTER);
        let iid = fake.seed_issue("Title", "Body", "rita");
        let llm = LlmServer::start(scenario(""));
        let checkout = TestRepo::new();

        let output = run(
            &fake,
            &llm,
            &checkout,
            &[
                ("REPLAN_ISSUE_IID", iid.to_string()),
                ("GITLAB_USER_LOGIN", "rita".to_owned()),
                ("REPLAN_GATE__REPLY_TO_OUTSIDERS", reply.to_string()),
            ],
        );

        assert_eq!(output.status.code(), Some(0));
        let writes: Vec<_> = fake
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        let notes = fake.notes(Noteable::Issue(iid));
        if reply {
            assert_eq!(writes.len(), 1, "one writing request: {writes:?}");
            assert_eq!(notes.len(), 1, "{notes:#?}");
            assert!(notes[0].body.contains("@rita"), "{}", notes[0].body);
            assert!(notes[0].body.chars().count() <= 400);
        } else {
            assert!(writes.is_empty(), "{writes:?}");
            assert!(notes.is_empty(), "{notes:#?}");
        }
        assert!(llm.requests().is_empty());
    }
}

/// Issue 35 on GitLab: the git-metadata attack of `security::git_metadata` (hooks, a
/// `commondir`, fsmonitors, filter drivers and a gitlink planted through the detected
/// `make test`) in a pipeline job holding `GITLAB_TOKEN`; no payload runs outside the sandbox.
#[test]
fn gitlab_pipeline_runs_no_planted_git_payload() {
    let marker =
        std::path::PathBuf::from(format!("/tmp/replan-gl-git-marker-{}", fastrand::u64(..)));
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(&crate::security::git_metadata::hostile_steps(
        &marker,
    )));
    let checkout = TestRepo::new();
    checkout.write("Makefile", "test:\n\ttrue\n");
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

    let ran = std::fs::read_to_string(&marker).ok();
    let _ = std::fs::remove_file(&marker);
    assert_eq!(
        ran,
        None,
        "a payload ran outside the sandbox:\n{}",
        text(&output)
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let bodies: String = llm.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        bodies.contains("planted-42-everything"),
        "the planting command ran"
    );
}
