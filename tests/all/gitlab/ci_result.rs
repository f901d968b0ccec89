//! A finished pipeline on Replan's merge request branch (issue 37, point 6), on the fake GitLab:
//! the failed jobs and the ends of their traces are read through the API with the token, and a
//! pipeline on a branch whose merge request the thread's history does not record is not acted
//! on at all.

use super::ci_job::{ONE_TASK, run, text};
use super::{client, forge};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::access;
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};
use replan::forge::Forge;
use replan::forge::gitlab::GitLabForge;
use replan::trigger::CiRun;
use serde_json::json;

fn failed_pipeline(id: u64, branch: &str, sha: &str) -> CiRun {
    CiRun {
        branch: branch.into(),
        conclusion: "failed".into(),
        run_id: Some(id),
        check_suite_id: None,
        url: None,
        head_sha: sha.into(),
        workflow_path: None,
        workflow_name: None,
        report: None,
    }
}

#[tokio::test]
async fn gitlab_a_failed_pipeline_s_failed_jobs_and_their_trace_tails_are_read_with_the_token() {
    let fake = FakeGitLab::start();
    let tip = fake.commit_file("replan/issue-1", "hello.md", "hello\n");
    let long = format!(
        "{}\nerror: hello.md must say 'hello, world'\n",
        "noise\n".repeat(4000)
    );
    fake.seed_pipeline(
        31,
        &[
            (380, "test", "failed", &long),
            (377, "build-image", "success", "built\n"),
        ],
    );
    let forge = forge(&fake);

    assert_eq!(
        forge.branch_tip("replan/issue-1").await.unwrap(),
        Some(tip.clone())
    );
    assert_eq!(forge.branch_tip("replan/issue-9").await.unwrap(), None);
    let failures = forge
        .ci_failures(&failed_pipeline(31, "replan/issue-1", &tip))
        .await
        .unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].job, "test");
    assert!(
        failures[0]
            .log_tail
            .ends_with("error: hello.md must say 'hello, world'\n")
    );
    assert!(failures[0].log_tail.len() <= 6 * 1024, "the tail only");

    let wrong = GitLabForge::new(client(&fake, "glpat-wrong"), None);
    assert!(
        wrong
            .ci_failures(&failed_pipeline(31, "replan/issue-1", &tip))
            .await
            .is_err(),
        "the fake refuses the jobs without the token"
    );
}

#[test]
fn gitlab_e2e_a_pipeline_on_a_branch_the_history_does_not_record_is_not_acted_on() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();
    let first = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    // A branch named like Replan's, at its tip, with a failed pipeline: but this thread's history
    // records no merge request opened from it.
    let branch = format!("replan/issue-{iid}");
    let tip = fake.commit_file(&branch, "evil.sh", "echo hi\n");
    fake.seed_pipeline(44, &[(500, "test", "failed", "boom\n")]);
    let original = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gitlab-events/pipeline_hook.failed.json"),
    )
    .unwrap();
    let mut payload: serde_json::Value = serde_json::from_str(&original).unwrap();
    payload["object_attributes"]["id"] = json!(44);
    payload["object_attributes"]["ref"] = json!(branch);
    payload["object_attributes"]["sha"] = json!(tip);
    payload["merge_request"]["source_branch"] = json!(branch);
    payload["project"]["id"] = json!(fake.project_id());
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("pipeline.json");
    std::fs::write(&path, payload.to_string()).unwrap();
    fake.clear_requests();
    let calls = llm.requests().len();

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("CI_PIPELINE_SOURCE", "trigger".to_owned()),
            ("TRIGGER_PAYLOAD", path.display().to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let writes: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "{writes:?}\n{}", text(&output));
    assert_eq!(llm.requests().len(), calls, "no model call");
    assert!(
        text(&output).contains("not the branch of a pull request Replan opened"),
        "{}",
        text(&output)
    );
}
