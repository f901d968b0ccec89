//! The scheduled sweep reads CI results itself (issue 37, point 6, for installations without a
//! pipeline webhook): the newest pipeline of each open thread's merge request, through the API;
//! a failure not yet recorded for that commit is fixed on the same branch, a pass ends the
//! thread `completed`, a recorded one is left alone.

use super::ci_job::text;
use super::world::World;
use crate::github::e2e_support::{FAILURE_LINE, FIXES_THE_FAILURE};

fn schedule() -> Vec<(&'static str, String)> {
    vec![
        ("CI_PIPELINE_SOURCE", "schedule".to_owned()),
        ("REPLAN_SWEEP", "true".to_owned()),
        ("GITLAB_USER_LOGIN", "alice".to_owned()),
    ]
}

#[test]
fn gitlab_e2e_the_scheduled_sweep_fixes_a_failed_merge_request_pipeline() {
    let world = World::new(FIXES_THE_FAILURE);
    let (iid, branch, tip) = world.merge_request_opened();
    let before = world.origin_git(&["rev-list", "--count", &branch]);
    world.failed_pipeline(7101, &branch, &tip, FAILURE_LINE);

    let output = world.run(&schedule());

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(world.llm_saw(FAILURE_LINE), "{}", text(&output));
    assert_eq!(
        world.origin_git(&["show", &format!("{branch}:hello.md")]),
        "hello, world"
    );
    let after = world.origin_git(&["rev-list", "--count", &branch]);
    assert_eq!(
        after.parse::<u32>().unwrap(),
        before.parse::<u32>().unwrap() + 1
    );
    assert_eq!(world.fake.merge_requests().len(), 1);
    let ci = world.ci_results(iid);
    assert_eq!(ci.len(), 1, "{ci:?}");
    assert_eq!((ci[0].round, ci[0].head_sha.as_str()), (1, tip.as_str()));
    assert_eq!(ci[0].failed_jobs, ["test"]);
}

#[test]
fn gitlab_e2e_the_scheduled_sweep_completes_a_thread_whose_pipeline_passed_once() {
    let world = World::new("");
    let (iid, branch, tip) = world.merge_request_opened();
    world.passed_pipeline(7102, &branch, &tip);
    let calls = world.llm.requests().len();

    let output = world.run(&schedule());

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
            world.pipeline_url(7102)
        )),
        "{checklist}"
    );
    assert_eq!(
        world.types(iid).last().map(String::as_str),
        Some("run_finished")
    );

    // The next schedule finds the result recorded for that commit: nothing is written.
    let history = world.history(iid);
    world.fake.clear_requests();
    let again = world.run(&schedule());
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        world.writes().is_empty(),
        "{:?}\n{}",
        world.writes(),
        text(&again)
    );
    assert_eq!(world.history(iid), history);
    assert_eq!(world.llm.requests().len(), calls);
}

/// A pipeline the webhook already delivered is recorded: the sweep does not act on it again.
#[test]
fn gitlab_e2e_the_scheduled_sweep_leaves_a_pipeline_the_hook_recorded() {
    let world = World::new("");
    let (iid, branch, tip) = world.merge_request_opened();
    world.passed_pipeline(7103, &branch, &tip);
    let hook = world.pipeline_hook(7103, &branch, &tip, "success", |_| {});
    let delivered = world.run(&World::hook_vars(&hook));
    assert_eq!(delivered.status.code(), Some(0), "{}", text(&delivered));
    assert_eq!(world.ci_results(iid).len(), 1);
    let history = world.history(iid);
    world.fake.clear_requests();

    let output = world.run(&schedule());

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        world.writes().is_empty(),
        "{:?}\n{}",
        world.writes(),
        text(&output)
    );
    assert_eq!(world.history(iid), history);
}
