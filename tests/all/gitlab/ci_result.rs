//! A finished pipeline on Replan's merge request branch (issue 37, point 6), on the fake GitLab:
//! the failed jobs and the ends of their traces are read through the API with the token, and a
//! pipeline on a branch whose merge request the thread's history does not record is not acted
//! on at all.

use super::ci_job::{ONE_TASK, text};
use super::world::{self, World};
use super::{client, forge};
use crate::support::FakeGitLab;
use replan::forge::Forge;
use replan::forge::gitlab::GitLabForge;
use replan::trigger::CiRun;

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

/// The sweep's read and the hook's read-back: the merge request's newest pipeline, and one
/// pipeline by id, through the API with the token; Replan's own (trigger) pipelines and
/// unfinished ones are no result.
#[tokio::test]
async fn gitlab_a_merge_request_s_pipelines_are_read_back_with_the_token() {
    let fake = FakeGitLab::start();
    let tip = fake.commit_file("replan/issue-1", "hello.md", "hello\n");
    fake.seed_merge_request("Add hello", "replan/issue-1", "main", "replan-bot");
    let forge = forge(&fake);
    assert_eq!(forge.latest_ci_run("replan/issue-1").await.unwrap(), None);
    assert_eq!(forge.latest_ci_run("replan/issue-9").await.unwrap(), None);

    fake.seed_branch_pipeline(world::run(31, "replan/issue-1", &tip, "failed"), &[]);
    let latest = forge
        .latest_ci_run("replan/issue-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            latest.run_id,
            latest.conclusion.as_str(),
            latest.head_sha.as_str()
        ),
        (Some(31), "failed", tip.as_str())
    );
    assert_eq!(
        forge.confirm_ci_run(&latest).await.unwrap(),
        Some(latest.clone())
    );
    let mut claimed = latest.clone();
    claimed.conclusion = "success".into();
    assert_eq!(
        forge
            .confirm_ci_run(&claimed)
            .await
            .unwrap()
            .unwrap()
            .conclusion,
        "failed",
        "the API's status counts, not the payload's"
    );
    claimed.run_id = Some(32);
    assert_eq!(forge.confirm_ci_run(&claimed).await.unwrap(), None);

    for (id, status, source) in [(33, "running", "push"), (34, "success", "trigger")] {
        let mut run = world::run(id, "replan/issue-1", &tip, status);
        run.source = source.into();
        fake.seed_branch_pipeline(run, &[]);
        assert_eq!(
            forge.latest_ci_run("replan/issue-1").await.unwrap(),
            None,
            "{status} {source}"
        );
    }

    let wrong = GitLabForge::new(client(&fake, "glpat-wrong"), None);
    assert!(wrong.latest_ci_run("replan/issue-1").await.is_err());
    assert!(wrong.confirm_ci_run(&latest).await.is_err());
}

/// A branch named like Replan's, at its tip, with a failed pipeline, whose merge request the
/// thread's history does not record (the first run opened none): nothing is written.
#[test]
fn gitlab_e2e_a_pipeline_on_a_branch_the_history_does_not_record_is_not_acted_on() {
    let world = World::new(ONE_TASK);
    let iid = world.alices_issue();
    let first = world.start_issue(iid);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let branch = format!("replan/issue-{iid}");
    let tip = world.fake.commit_file(&branch, "evil.sh", "echo hi\n");
    world.failed_pipeline(44, &branch, &tip, "boom");
    let hook = world.pipeline_hook(44, &branch, &tip, "failed", |_| {});
    world.fake.clear_requests();
    let calls = world.llm.requests().len();

    let output = world.run(&World::hook_vars(&hook));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        world.writes().is_empty(),
        "{:?}\n{}",
        world.writes(),
        text(&output)
    );
    assert_eq!(world.llm.requests().len(), calls, "no model call");
    assert!(
        text(&output).contains("not the branch of a pull request Replan opened"),
        "{}",
        text(&output)
    );
}
