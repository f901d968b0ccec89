//! CI results reopen the work on GitLab (issue 37, point 6): a failed pipeline of Replan's merge
//! request branch, delivered by the project's pipeline webhook through the trigger URL, is the
//! next cycle's input and its fix is pushed to the same branch; a passed one ends the thread
//! `completed` with the pipeline's link; pipelines Replan did not start are not acted on.

use serde_json::json;

use super::ci_job::text;
use super::world::World;
use crate::github::e2e_support::{FAILURE_LINE, FIXES_THE_FAILURE};
use crate::support::fake_gitlab::PipelineRun;

fn commits_on(world: &World, branch: &str) -> u32 {
    world
        .origin_git(&["rev-list", "--count", branch])
        .parse()
        .unwrap()
}

#[test]
fn gitlab_e2e_a_failed_pipeline_is_fixed_on_the_same_branch_without_a_second_merge_request() {
    let world = World::new(FIXES_THE_FAILURE);
    let (iid, branch, tip) = world.merge_request_opened();
    let before = commits_on(&world, &branch);
    world.failed_pipeline(7001, &branch, &tip, FAILURE_LINE);
    let hook = world.pipeline_hook(7001, &branch, &tip, "failed", |_| {});

    let output = world.run(&World::hook_vars(&hook));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    if std::env::var("E2E_DEBUG").is_ok() {
        for r in world.llm.requests() {
            for t in r.texts() {
                if t.contains("open_pull_request") || t.contains("pushed") || t.contains("commit") {
                    eprintln!("---- {}", &t[t.len().saturating_sub(600)..]);
                }
            }
        }
        eprintln!("{}", world.origin_git(&["log", "--oneline", "--all"]));
        eprintln!("{:?}", world.types(iid));
    }
    // The failing job's name and the end of its trace, read through the API, were the input.
    assert!(world.llm_saw(FAILURE_LINE), "{}", text(&output));
    assert!(world.llm_saw("Failed job: test"), "{}", text(&output));
    assert!(!world.llm_saw(&world.fake.token()));
    // One more commit on the merge request's branch, pushed with GITLAB_TOKEN; one MR still.
    assert_eq!(
        world.origin_git(&["show", &format!("{branch}:hello.md")]),
        "hello, world",
        "{}",
        text(&output)
    );
    assert_eq!(commits_on(&world, &branch), before + 1, "{}", text(&output));
    assert_eq!(world.fake.merge_requests().len(), 1);
    let ci = world.ci_results(iid);
    assert_eq!(ci.len(), 1, "{ci:?}");
    assert_eq!((ci[0].round, ci[0].passed), (1, false));
    assert_eq!(ci[0].failed_jobs, ["test"]);
    assert_eq!(ci[0].head_sha, tip);
    assert!(
        world.checklist(iid).contains("❌ CI failed on"),
        "{}",
        world.checklist(iid)
    );
}

#[test]
fn gitlab_e2e_a_passed_pipeline_ends_the_thread_completed_with_the_pipeline_in_the_checklist() {
    let world = World::new("");
    let (iid, branch, tip) = world.merge_request_opened();
    let calls = world.llm.requests().len();
    world.passed_pipeline(7002, &branch, &tip);
    let hook = world.pipeline_hook(7002, &branch, &tip, "success", |_| {});

    let output = world.run(&World::hook_vars(&hook));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        world.llm.requests().len(),
        calls,
        "no model call for a pass"
    );
    let checklist = world.checklist(iid);
    assert!(
        checklist.contains(&format!(
            "✅ CI passed on `{}` ([CI run]({}))",
            &tip[..7],
            world.pipeline_url(7002)
        )),
        "{checklist}"
    );
    let ci = world.ci_results(iid);
    assert!(ci.len() == 1 && ci[0].passed, "{ci:?}");
    let history = replan::history::jsonl::parse(&world.history(iid));
    let last = history.entries.last().map(|e| &e.body);
    assert!(
        matches!(
            last,
            Some(replan::history::entry::EntryBody::RunFinished {
                status: replan::history::entry::RunStatus::Completed,
                ..
            })
        ),
        "{:?}",
        world.types(iid)
    );
}

/// The attack: pipelines that look like Replan's but are not — a branch named like Replan's that
/// the thread's history does not record as its merge request's, a fork's merge request with a
/// branch of the same name, Replan's own pipeline (started by the trigger), a pipeline of an
/// older commit. None may write anything or reach the model.
#[test]
fn gitlab_e2e_pipelines_replan_did_not_start_are_not_acted_on() {
    let world = World::new("");
    let (iid, branch, tip) = world.merge_request_opened();
    let foreign = format!("{branch}-2");
    let foreign_tip = world.fake.commit_file(&foreign, "evil.sh", "echo owned\n");
    world.failed_pipeline(7003, &foreign, &foreign_tip, FAILURE_LINE);
    world.failed_pipeline(7004, &branch, &tip, FAILURE_LINE);
    let history = world.history(iid);
    world.fake.clear_requests();
    let calls = world.llm.requests().len();

    let cases = [
        (
            "a branch the history does not record",
            world.pipeline_hook(7003, &foreign, &foreign_tip, "failed", |_| {}),
        ),
        (
            "a branch under Replan's that names no thread",
            world.pipeline_hook(7003, &format!("{branch}/x"), &foreign_tip, "failed", |_| {}),
        ),
        (
            "a fork's merge request from a branch of the same name",
            world.pipeline_hook(7004, &branch, &tip, "failed", |hook| {
                hook["merge_request"]["source_project_id"] = json!(999);
            }),
        ),
        (
            "Replan's own pipeline, started by the trigger",
            world.pipeline_hook(7004, &branch, &tip, "failed", |hook| {
                hook["object_attributes"]["source"] = json!("trigger");
            }),
        ),
        (
            "not the branch's tip",
            world.pipeline_hook(7004, &branch, &"0".repeat(40), "failed", |_| {}),
        ),
    ];
    for (why, hook) in cases {
        let output = world.run(&World::hook_vars(&hook));
        assert_eq!(output.status.code(), Some(0), "{why}: {}", text(&output));
        assert!(
            world.writes().is_empty(),
            "{why}: {:?}\n{}",
            world.writes(),
            text(&output)
        );
    }
    assert_eq!(world.history(iid), history, "nothing recorded");
    assert_eq!(world.llm.requests().len(), calls, "no model call");
}

#[test]
fn gitlab_e2e_failed_pipelines_reopen_the_work_at_most_ci_rounds_times() {
    let world = World::new(FIXES_THE_FAILURE);
    let (iid, branch, tip) = world.merge_request_opened();
    world.failed_pipeline(7006, &branch, &tip, FAILURE_LINE);
    let mut vars = World::hook_vars(&world.pipeline_hook(7006, &branch, &tip, "failed", |_| {}));
    vars.push(("REPLAN_VERIFY__CI_ROUNDS", "1".to_owned()));
    let first = world.run(&vars);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let pushed = world.origin_git(&["rev-parse", &branch]);

    // The fix's own pipeline fails too: the round is used up, so it is recorded and left.
    let fixed = world
        .fake
        .commit_file(&branch, "hello.md", "hello, world\n");
    world.failed_pipeline(7007, &branch, &fixed, FAILURE_LINE);
    let calls = world.llm.requests().len();
    let mut vars = World::hook_vars(&world.pipeline_hook(7007, &branch, &fixed, "failed", |_| {}));
    vars.push(("REPLAN_VERIFY__CI_ROUNDS", "1".to_owned()));
    let second = world.run(&vars);

    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    assert_eq!(world.llm.requests().len(), calls, "no second fixing cycle");
    assert_eq!(world.origin_git(&["rev-parse", &branch]), pushed);
    let ci = world.ci_results(iid);
    assert_eq!(ci.iter().map(|c| c.round).collect::<Vec<_>>(), [1, 0]);
    let checklist = world.checklist(iid);
    assert!(
        checklist.contains("no fixing round left (`verify.ci_rounds`)"),
        "{checklist}"
    );
}

/// The attack on the payload: the trigger URL starts a pipeline for whatever JSON its token is
/// sent with, so a hook's word on a pipeline is a claim. Replan reads the pipeline back from
/// the project's API: a pass claimed for a pipeline still running, for a pipeline the project
/// does not have, or for another commit than the one it ran on is not recorded.
#[test]
fn gitlab_e2e_a_pipeline_hook_is_a_claim_checked_against_the_project_s_pipeline() {
    let world = World::new("");
    let (iid, branch, tip) = world.merge_request_opened();
    let older = world.fake.branch_sha("main").unwrap();
    for (id, sha, status) in [(7010, &tip, "running"), (7012, &older, "success")] {
        world.fake.seed_branch_pipeline(
            PipelineRun {
                id,
                branch: branch.clone(),
                sha: sha.to_string(),
                status: status.to_owned(),
                source: "push".to_owned(),
            },
            &[(id * 10, "test", status, "ok\n")],
        );
    }
    let history = world.history(iid);
    world.fake.clear_requests();
    let calls = world.llm.requests().len();

    for (why, id) in [
        ("a pass claimed for a pipeline still running", 7010),
        ("a pipeline the project does not have", 7011),
        ("a pipeline of another commit", 7012),
    ] {
        let hook = world.pipeline_hook(id, &branch, &tip, "success", |_| {});
        let output = world.run(&World::hook_vars(&hook));
        assert_eq!(output.status.code(), Some(0), "{why}: {}", text(&output));
        assert!(
            world.writes().is_empty(),
            "{why}: {:?}\n{}",
            world.writes(),
            text(&output)
        );
    }
    assert_eq!(world.history(iid), history, "nothing recorded");
    assert_eq!(world.llm.requests().len(), calls, "no model call");
}

/// The templates' split trust: the agent job (`run --bundle`, the read-only token's reads)
/// writes nothing; the publish job, from its own copy of the hook, pushes the fix to the merge
/// request's branch and records the round.
#[test]
fn gitlab_e2e_split_trust_a_failed_pipeline_is_fixed_by_the_publish_job() {
    let world = World::new(FIXES_THE_FAILURE);
    let (iid, branch, tip) = world.merge_request_opened();
    let before = commits_on(&world, &branch);
    world.failed_pipeline(7020, &branch, &tip, FAILURE_LINE);
    let vars = World::hook_vars(&world.pipeline_hook(7020, &branch, &tip, "failed", |_| {}));
    let bundle = tempfile::TempDir::new().unwrap();
    world.fake.clear_requests();

    let agent = world
        .command(&vars)
        .args(["run", "--bundle"])
        .arg(bundle.path())
        .output()
        .unwrap();

    assert_eq!(agent.status.code(), Some(0), "{}", text(&agent));
    assert!(world.llm_saw(FAILURE_LINE), "{}", text(&agent));
    assert!(world.writes().is_empty(), "{:?}", world.writes());
    assert_eq!(
        commits_on(&world, &branch),
        before,
        "the agent pushes nothing"
    );
    let calls = world.llm.requests().len();

    let publish = world
        .command(&vars)
        .env_remove("OPENAI_API_KEY")
        .env_remove("REPLAN_LLM__BASE_URL")
        .arg("publish")
        .arg(bundle.path())
        .output()
        .unwrap();

    assert_eq!(publish.status.code(), Some(0), "{}", text(&publish));
    assert_eq!(world.llm.requests().len(), calls, "publish calls no model");
    assert_eq!(
        commits_on(&world, &branch),
        before + 1,
        "{}",
        text(&publish)
    );
    assert_eq!(
        world.origin_git(&["show", &format!("{branch}:hello.md")]),
        "hello, world"
    );
    assert_eq!(world.fake.merge_requests().len(), 1);
    let ci = world.ci_results(iid);
    assert_eq!(ci.len(), 1, "{ci:?}");
    assert_eq!(
        (ci[0].round, ci[0].failed_jobs.as_slice()),
        (1, ["test".to_owned()].as_slice())
    );
}
