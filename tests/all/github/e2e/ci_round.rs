//! CI results reopen the work (issue 37): a failing CI run on Replan's pull request branch is
//! the next cycle's input and its fix goes to the same branch; a passing run ends the thread
//! `completed` with the run's link; a run on a branch Replan did not open is not acted on.

use super::{World, text};
use crate::support::fake_github::Job;
use crate::support::gfm;
use replan::history::entry::EntryBody;
use replan::history::jsonl;
use serde_json::json;
use std::path::PathBuf;

const OWN_WORKFLOW: &str = "octo/widgets/.github/workflows/replan.yml@refs/heads/main";
pub const FAILURE_LINE: &str = "error: hello.md must say 'hello, world'";

/// The model reads the CI failure while revising the tasks and plans one fix and the push (the
/// GitLab runs use it too).
pub const FIXES_THE_FAILURE: &str = r#"
mode: matched
steps:
  - when: { contains: "hello.md must say" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Make CI pass", "success_criteria": ["CI passes"], "constraints": []},
       "task_decomposition": {"reasoning": "fix, then push", "subtasks": [
          {"id": "fix_1", "description": "Make hello.md say hello, world", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]},
          {"id": "fix_2", "description": "Push the fix", "dependencies": ["fix_1"], "estimated_complexity": "low", "required_tools": ["open_pull_request"]}]},
       "action_plan": {"execution_order": ["fix_1", "fix_2"], "actions": [
          {"task_id": "fix_1", "action_type": "tool_call", "tool": "write_file", "purpose": "fix", "expected_outcome": "file fixed"},
          {"task_id": "fix_2", "action_type": "tool_call", "tool": "open_pull_request", "purpose": "push", "expected_outcome": "pushed"}]},
       "self_check": {"goal_understanding": {"ok": true, "notes": "clear"}, "task_decomposition": {"ok": true, "notes": "ids unique"}, "action_plan": {"ok": true, "notes": "tools exist"}},
       "comment": "Fixing the CI failure.",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
  - when: { contains: "Execute subtask `fix_1`" }
    tool_calls: [ { name: write_file, arguments: { path: hello.md, content: "hello, world\n" } } ]
  - when: { contains: "Execute subtask `fix_2`" }
    tool_calls: [ { name: open_pull_request, arguments: { title: "Fix hello.md" } } ]
  - when: { contains: "pushed commit" }
    reply: |
      {"report": "Pushed the fix.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
"#;

impl World {
    /// A `workflow_run` `completed` event for `branch` at `head_sha`.
    fn workflow_run(&self, run_id: u64, branch: &str, head_sha: &str, conclusion: &str) -> PathBuf {
        let repo = self.fake.repo();
        self.payload("workflow_run.completed.0", |v| {
            let run = &mut v["workflow_run"];
            run["id"] = json!(run_id);
            run["head_branch"] = json!(branch);
            run["head_sha"] = json!(head_sha);
            run["conclusion"] = json!(conclusion);
            run["html_url"] = json!(format!("https://github.com/{repo}/actions/runs/{run_id}"));
            run["head_repository"]["full_name"] = json!(repo);
            run["repository"]["full_name"] = json!(repo);
        })
    }

    fn ci_env(&self, payload: &std::path::Path) -> std::collections::BTreeMap<String, String> {
        let mut env = self.env("workflow_run", payload);
        env.insert("GITHUB_WORKFLOW_REF".into(), OWN_WORKFLOW.into());
        env
    }

    /// A finished first cycle on Alice's issue: its pull request is open from
    /// `replan/issue-<n>`, whose tip on the fake is returned.
    fn pull_request_opened(&self) -> (u64, String, String) {
        let number = self.alices_issue("Add a hello file", "Please add hello.md.");
        let first = self.run(&self.env("issues", &self.issue_opened(number, "alice")));
        assert_eq!(first.status.code(), Some(0), "{}", text(&first));
        assert_eq!(self.fake.pull_requests().len(), 1);
        let branch = format!("replan/issue-{number}");
        let tip = self.fake.ref_sha(&branch).expect("the branch on the fake");
        (number, branch, tip)
    }

    fn ci_results(&self, number: u64) -> Vec<replan::history::entry::CiResult> {
        jsonl::parse(&self.history(number))
            .entries
            .into_iter()
            .filter_map(|e| match e.body {
                EntryBody::CiResult(ci) => Some(*ci),
                _ => None,
            })
            .collect()
    }

    fn failing_run(&self, run_id: u64) {
        self.fake.seed_workflow_run(
            run_id,
            vec![
                Job {
                    id: run_id * 10,
                    name: "build".into(),
                    conclusion: "success".into(),
                    log: "compiled\n".into(),
                },
                Job {
                    id: run_id * 10 + 1,
                    name: "test (ubuntu-latest)".into(),
                    conclusion: "failure".into(),
                    log: format!(
                        "running 3 tests\n{FAILURE_LINE}\nProcess completed with exit code 1.\n"
                    ),
                },
            ],
        );
    }
}

fn llm_saw(world: &World, needle: &str) -> bool {
    world
        .llm
        .requests()
        .iter()
        .any(|r| r.texts().iter().any(|t| t.contains(needle)))
}

#[test]
fn github_e2e_a_ci_failure_is_fixed_on_the_same_branch_without_a_second_pull_request() {
    let world = World::new(FIXES_THE_FAILURE);
    let (number, branch, tip) = world.pull_request_opened();
    let before = world._origin.run_git(&["rev-list", "--count", &branch]);
    world.failing_run(7001);

    let output = world.run(&world.ci_env(&world.workflow_run(7001, &branch, &tip, "failure")));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    if std::env::var("E2E_DEBUG").is_ok() {
        eprintln!("{}\n{}", text(&output), world.history(number));
    }
    // The failing job's name and the end of its log, read from the signed URL without the
    // token (the log host refuses credentials), were the model's input.
    assert!(llm_saw(&world, FAILURE_LINE), "{}", text(&output));
    assert!(llm_saw(&world, "test (ubuntu-latest)"));
    assert!(!llm_saw(&world, &world.fake.token()));
    // The fix is a new commit on the same branch; still one pull request.
    assert_eq!(
        world._origin.show(&format!("{branch}:hello.md")),
        "hello, world\n"
    );
    let after = world._origin.run_git(&["rev-list", "--count", &branch]);
    assert_eq!(
        after.trim().parse::<u32>().unwrap(),
        before.trim().parse::<u32>().unwrap() + 1,
        "one commit on top of the pull request's"
    );
    assert_eq!(world.fake.pull_requests().len(), 1);
    let ci = world.ci_results(number);
    assert_eq!(ci.len(), 1, "{ci:?}");
    assert_eq!(ci[0].round, 1);
    assert!(!ci[0].passed);
    assert_eq!(ci[0].failed_jobs, vec!["test (ubuntu-latest)".to_owned()]);
}

#[test]
fn github_e2e_a_ci_success_ends_the_thread_completed_with_the_run_in_the_checklist() {
    let world = World::new("");
    let (number, branch, tip) = world.pull_request_opened();
    let llm_calls = world.llm.requests().len();

    let output = world.run(&world.ci_env(&world.workflow_run(7002, &branch, &tip, "success")));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        world.llm.requests().len(),
        llm_calls,
        "no model call for a pass"
    );
    assert_eq!(world.outputs()["status"], "completed");
    let checklist = super::checklist_of(&world, number);
    assert!(
        checklist.contains(&format!(
            "✅ CI passed on `{}` ([CI run](https://github.com/octo/widgets/actions/runs/7002))",
            &tip[..7]
        )),
        "{checklist}"
    );
    let ci = world.ci_results(number);
    assert!(ci.len() == 1 && ci[0].passed, "{ci:?}");
    let types = world.types(number);
    assert_eq!(
        types.last().map(String::as_str),
        Some("run_finished"),
        "{types:?}"
    );
}

/// A branch named like Replan's that the thread's history does not record as its pull request
/// branch, Replan's own workflow, and a run of an older commit: nothing is written.
#[test]
fn github_e2e_ci_runs_replan_did_not_start_are_not_acted_on() {
    let world = World::new("");
    let (number, branch, tip) = world.pull_request_opened();
    // Someone else's branch with Replan's naming, for the same issue.
    let foreign = format!("{branch}-2");
    world.fake.set_ref(&foreign, &tip);
    world.failing_run(7003);
    let own = {
        let payload = world.workflow_run(7004, &branch, &tip, "failure");
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&payload).unwrap()).unwrap();
        value["workflow_run"]["path"] = json!(".github/workflows/replan.yml");
        std::fs::write(&payload, value.to_string()).unwrap();
        payload
    };
    let stale = world.workflow_run(7005, &branch, &"0".repeat(40), "failure");
    let history = world.history(number);
    world.fake.clear_requests();
    let llm_calls = world.llm.requests().len();

    for (why, payload) in [
        (
            "a branch the history does not record",
            world.workflow_run(7003, &foreign, &tip, "failure"),
        ),
        ("Replan's own workflow", own),
        ("not the branch's tip", stale),
    ] {
        let output = world.run(&world.ci_env(&payload));
        assert_eq!(output.status.code(), Some(0), "{why}: {}", text(&output));
        let writes: Vec<String> = world
            .fake
            .requests()
            .iter()
            .filter(|r| r.method != "GET")
            .map(|r| r.line())
            .collect();
        assert!(writes.is_empty(), "{why}: {writes:?}");
    }
    assert_eq!(world.history(number), history, "nothing recorded");
    assert_eq!(world.llm.requests().len(), llm_calls, "no model call");
}

#[test]
fn github_e2e_ci_failures_reopen_the_work_at_most_ci_rounds_times() {
    let world = World::new(FIXES_THE_FAILURE);
    let (number, branch, tip) = world.pull_request_opened();
    world.failing_run(7006);
    let mut env = world.ci_env(&world.workflow_run(7006, &branch, &tip, "failure"));
    env.insert("REPLAN_VERIFY__CI_ROUNDS".into(), "1".into());
    let first = world.run(&env);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let pushed = world._origin.run_git(&["rev-parse", &branch]);

    // The fix's own CI fails too: the round is used up, so it is recorded and left.
    let fixed = world
        ._origin
        .run_git(&["rev-parse", &branch])
        .trim()
        .to_owned();
    world.fake.set_ref(&branch, &fixed);
    world.failing_run(7007);
    let llm_calls = world.llm.requests().len();
    let mut env = world.ci_env(&world.workflow_run(7007, &branch, &fixed, "failure"));
    env.insert("REPLAN_VERIFY__CI_ROUNDS".into(), "1".into());
    let second = world.run(&env);

    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    assert_eq!(
        world.llm.requests().len(),
        llm_calls,
        "no second fixing cycle"
    );
    assert_eq!(world._origin.run_git(&["rev-parse", &branch]), pushed);
    let ci = world.ci_results(number);
    assert_eq!(ci.iter().map(|c| c.round).collect::<Vec<_>>(), vec![1, 0]);
    let checklist = super::checklist_of(&world, number);
    assert!(
        checklist.contains("no fixing round left (`verify.ci_rounds`)"),
        "{checklist}"
    );
}

/// A final check whose program is missing: it cannot run, so the cycle ends `unverified`.
const CANNOT_RUN: &str =
    "verify:\n  - name: suite\n    argv: [no-such-test-runner-37]\n    when: final\n";

fn section_count(body: &str) -> usize {
    body.matches("<!-- replan:verification -->").count()
}

/// Issue 37, points 5 and 6: the pull request body carries the final verification the checklist
/// shows (the check that could not run, the history file's link) below the model's text; the
/// repository's CI passing on the same head then proves the thread, which ends `completed`
/// proven by that run, and the body's section is replaced in place.
#[test]
fn github_e2e_ci_success_proves_a_thread_whose_checks_could_not_run_and_the_pr_body_says_so() {
    let world = World::new("");
    world.checkout.write(".replan.yml", CANNOT_RUN);
    world.checkout.commit_all("replan config");
    world.checkout.run_git(&["push", "-q", "origin", "main"]);
    let (number, branch, tip) = world.pull_request_opened();
    assert_eq!(world.outputs()["status"], "unverified");
    let body = world.fake.pull_requests()[0].body.clone();
    let history_url = format!(
        "https://github.com/octo/widgets/blob/replan-history/planning_history/issues/{number}.jsonl"
    );
    assert_eq!(section_count(&body), 1, "{body}");
    let (above, _) = body.split_once("<!-- replan:verification -->").unwrap();
    assert!(above.contains(&format!("Closes #{number}")), "{body}");
    assert!(
        body.contains("**Status**: ⚠️ Unverified: the checks do not prove the work — not proven"),
        "{body}"
    );
    assert!(body.contains("- ❌ `suite` could not run on `"), "{body}");
    let rendered = gfm::render(&body);
    assert_eq!(rendered.headings, vec!["Verification"], "{body}");
    assert_eq!(rendered.links, vec![history_url.clone()], "{body}");
    rendered.assert_only_tags(&[], &body);
    assert!(rendered.tasks.is_empty(), "{body}");

    let run_url = "https://github.com/octo/widgets/actions/runs/7010";
    let output = world.run(&world.ci_env(&world.workflow_run(7010, &branch, &tip, "success")));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "completed", "{}", text(&output));
    let after = world.fake.pull_requests()[0].body.clone();
    assert_eq!(section_count(&after), 1, "{after}");
    assert!(after.starts_with(above), "the text above is kept:\n{after}");
    assert!(
        after.contains(&format!(
            "**Status**: ✅ Completed — proven by the repository's [CI run]({run_url})"
        )),
        "{after}"
    );
    assert!(
        after.contains(&format!(
            "✅ CI passed on `{}` ([CI run]({run_url}))",
            &tip[..7]
        )),
        "{after}"
    );
    let rendered = gfm::render(&after);
    assert_eq!(rendered.headings, vec!["Verification"], "{after}");
    assert_eq!(
        rendered.links,
        vec![run_url.to_owned(), run_url.to_owned(), history_url],
        "{after}"
    );
    let history = world.history(number);
    assert!(history.contains("\"status\":\"completed\""), "{history}");
}
