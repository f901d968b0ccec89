//! Evidence before "done" (issue 37), on the local forge with the binary and the scripted model:
//! the checks of `verify` run on the tree each subtask leaves and on the final tree, the run ends
//! `completed` only with passing evidence, and the history holds the proof.

use replan::history::check::CheckStatus;
use replan::history::entry::{EntryBody, JudgeOutcome, RunStatus};
use replan::history::{Entry, jsonl};
use tempfile::TempDir;

use crate::github::e2e_support::scenario;
use crate::github::local_run::{checkout, local_command_on};
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

/// A passing check costs no model call (the 20-subtask bench's economy, issue 37).
mod round_trips;

/// The base plan with its criteria mapped to evidence: `hello.md exists` by the `hello` check,
/// the pull request by a person.
const MAPPED_PLAN: &str = r#"
steps:
  - when: { contains: "Produce the planning phases" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Add a hello file and propose it", "success_criteria": ["hello.md exists", "a pull request is open"], "constraints": [],
         "criteria_evidence": [{"criterion": "hello.md exists", "evidence": "hello"}, {"criterion": "a pull request is open", "evidence": "manual", "reason": "a person reviews it"}]},
       "task_decomposition": {"reasoning": "write, then propose", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]},
          {"id": "task_2", "description": "Open a pull request", "dependencies": ["task_1"], "estimated_complexity": "low", "required_tools": ["open_pull_request"]}]},
       "action_plan": {"execution_order": ["task_1", "task_2"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write hello.md", "expected_outcome": "file written"},
          {"task_id": "task_2", "action_type": "tool_call", "tool": "open_pull_request", "purpose": "propose the change", "expected_outcome": "pull request open"}]},
       "self_check": {"goal_understanding": {"ok": true, "notes": "clear"}, "task_decomposition": {"ok": true, "notes": "ids unique"}, "action_plan": {"ok": true, "notes": "tools exist"}},
       "comment": "Plan completed. Starting execution.",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
"#;

/// A blocked subtask's alternatives: none (the run then waits for a person).
const NO_ALTERNATIVES: &str = r#"
steps:
  - when: { contains: "Propose up to three alternative ways" }
    reply: '{"alternatives": []}'
"#;

/// The model's final word after looking around without changing anything: done.
const LOOKED: &str = r#"{"report": "Looked at the files; all done.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []}, "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}}"#;

struct Run {
    entries: Vec<Entry>,
    status: RunStatus,
    /// Every comment body on the local thread (checklist and notices).
    comments: String,
    stderr: String,
    llm: LlmServer,
    checkout: TestRepo,
}

/// A checkout whose `.replan.yml` says `verify`, run on issue 7 against `overrides` in front of
/// the base scenario; the binary must exit 0.
fn run_with(verify_yaml: &str, overrides: &str) -> Run {
    let llm = LlmServer::start(scenario(overrides));
    let (_origin, checkout) = checkout();
    if !verify_yaml.is_empty() {
        checkout.write(".replan.yml", verify_yaml);
        checkout.commit_all("replan config");
    }
    let state = TempDir::new().unwrap();
    let temp = TempDir::new().unwrap();
    let mut command = local_command_on(&llm.openai_base(), &checkout, Some(state.path()), 7);
    command.env("TMPDIR", temp.path());
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text =
        std::fs::read_to_string(state.path().join("planning_history/issues/7.jsonl")).unwrap();
    let parsed = jsonl::parse(&text);
    assert!(parsed.corrupt.is_empty());
    let entries = parsed.entries;
    let status = entries
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EntryBody::RunFinished { status, .. } => Some(*status),
            _ => None,
        })
        .expect("run_finished");
    let thread: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(state.path().join("threads/issues-7.json")).unwrap(),
    )
    .unwrap();
    let comments = thread["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n----\n");
    Run {
        entries,
        status,
        comments,
        stderr,
        llm,
        checkout,
    }
}

fn checks(entries: &[Entry]) -> Vec<&replan::history::check::CheckRecord> {
    entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Check(c) => Some(c.as_ref()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_model_that_claims_success_while_the_check_fails_does_not_end_completed() {
    // hello.md says "hello": the check wants "goodbye", and the model keeps claiming success.
    let run = run_with(
        "verify:\n  - name: greets\n    argv: [grep, -q, goodbye, hello.md]\n",
        NO_ALTERNATIVES,
    );
    assert_ne!(run.status, RunStatus::Completed, "{}", run.stderr);
    let task_checks: Vec<_> = checks(&run.entries)
        .into_iter()
        .filter(|c| c.task_id.as_deref() == Some("task_1"))
        .collect();
    assert!(!task_checks.is_empty(), "no check ran for task_1");
    assert!(task_checks.iter().all(|c| c.status == CheckStatus::Failed));
    assert!(
        task_checks
            .iter()
            .all(|c| c.tree.as_ref().is_some_and(|t| t.len() >= 40))
    );
    assert_eq!(task_checks[0].argv, ["grep", "-q", "goodbye", "hello.md"]);
    // The judge saw the failure and filled missingRequirements from it; never DONE.
    let judged: Vec<_> = run
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Judge {
                task_id,
                outcome,
                missing_requirements,
                ..
            } if task_id == "task_1" => Some((*outcome, missing_requirements.clone())),
            _ => None,
        })
        .collect();
    assert!(!judged.is_empty());
    assert!(
        judged.iter().all(|(o, _)| *o != JudgeOutcome::Done),
        "{judged:?}"
    );
    assert!(
        judged[0].1[0].contains("check `greets` must pass"),
        "{judged:?}"
    );
    // The next attempt was given the failure as its input.
    let retried = run
        .llm
        .requests()
        .iter()
        .filter(|r| r.texts().join("\n").contains("Execute subtask `task_1`"))
        .skip(1)
        .any(|r| r.texts().join("\n").contains("check `greets` must pass"));
    assert!(
        retried,
        "the second attempt was not told about the failing check"
    );
    assert!(
        run.comments
            .contains("**task_1**: Write hello.md ⛔ *blocked* — ❌ `greets` failed on `"),
        "{}",
        run.comments
    );
}

/// In front of the base scenario: task_1 only lists the files, then says it is done.
pub(crate) fn changes_nothing() -> String {
    format!(
        "steps:\n  - when: {{ contains: \"README.md\" }}\n    reply: '{LOOKED}'\n  - when: {{ contains: \"Execute subtask `task_1`\" }}\n    tool_calls: [ {{ name: list_files, arguments: {{}} }} ]\n"
    )
}

#[test]
fn a_model_that_changes_nothing_ends_no_changes() {
    let run = run_with("", &changes_nothing());
    assert_eq!(
        run.status,
        RunStatus::NoChanges,
        "{}\n{:#?}",
        run.stderr,
        run.entries
            .iter()
            .filter(|e| matches!(
                e.body,
                EntryBody::Verification { .. } | EntryBody::Action { .. }
            ))
            .collect::<Vec<_>>()
    );
    assert!(!run.checkout.path().join("hello.md").exists());
    assert!(
        run.comments
            .contains("the final tree is the tree the run started from"),
        "{}",
        run.comments
    );
}

#[test]
fn a_passing_check_and_a_manual_criterion_complete_with_their_evidence_shown() {
    let run = run_with(
        "verify:\n  - name: hello\n    argv: [test, -f, hello.md]\n",
        MAPPED_PLAN,
    );
    assert_eq!(run.status, RunStatus::Completed, "{}", run.stderr);
    let all = checks(&run.entries);
    let task = all
        .iter()
        .find(|c| c.task_id.as_deref() == Some("task_1"))
        .expect("task_1 checked");
    assert_eq!(task.status, CheckStatus::Passed);
    let last = all.last().unwrap();
    assert_eq!(last.task_id, None, "the final verification comes last");
    assert!(last.passed());
    let criteria = run
        .entries
        .iter()
        .find_map(|e| match &e.body {
            EntryBody::Verification { criteria, .. } => Some(criteria.clone()),
            _ => None,
        })
        .expect("verification entry");
    assert_eq!(criteria.len(), 2);
    assert_eq!(criteria[0].check.as_deref(), Some("hello"));
    assert_eq!(criteria[0].status, Some(CheckStatus::Passed));
    assert_eq!(criteria[1].check, None);
    assert!(
        run.comments
            .contains("manual — not verified (a person reviews it)"),
        "{}",
        run.comments
    );
    // The checklist's task line carries the proof, the footer the final verification.
    let short: String = task.tree.as_deref().unwrap().chars().take(7).collect();
    assert!(
        run.comments.contains(&format!(
            "**task_1**: Write hello.md — ✅ `hello` on `{short}`, "
        )),
        "{}",
        run.comments
    );
    assert!(
        run.comments
            .contains("*Final verification (configured checks): ✅ `hello` on `"),
        "{}",
        run.comments
    );
}

#[test]
fn verify_off_runs_no_check_and_the_checklist_says_so() {
    let run = run_with("verify: []\n", "");
    assert_eq!(run.status, RunStatus::Completed, "{}", run.stderr);
    assert!(checks(&run.entries).is_empty());
    assert!(run.stderr.contains("verification is off"), "{}", run.stderr);
    assert!(
        run.comments.contains("*Verification: off (`verify: []`)*"),
        "{}",
        run.comments
    );
}

#[test]
fn a_check_that_times_out_leaves_the_run_unverified() {
    let run = run_with(
        "verify:\n  - name: slow\n    argv: [sleep, \"30\"]\n    timeout_seconds: 1\n    when: final\n",
        "",
    );
    assert_eq!(run.status, RunStatus::Unverified, "{}", run.stderr);
    let all = checks(&run.entries);
    assert_eq!(all.len(), 1, "a final check runs once, on the final tree");
    assert_eq!(all[0].status, CheckStatus::TimedOut);
    assert!(all[0].duration_ms < 20_000);
    assert!(
        run.comments.contains("`slow` timed out"),
        "{}",
        run.comments
    );
}

#[test]
fn a_flaky_check_that_passes_on_the_next_attempt_completes() {
    // Fails the first time it runs, passes afterwards (the flag lives outside the work tree).
    let flaky = "verify:\n  - name: hello\n    argv: [sh, -c, 'test -f \"$TMPDIR/ran\" || { : > \"$TMPDIR/ran\"; exit 1; }']\n";
    let run = run_with(flaky, MAPPED_PLAN);
    assert_eq!(run.status, RunStatus::Completed, "{}", run.stderr);
    let statuses: Vec<_> = checks(&run.entries)
        .iter()
        .filter(|c| c.task_id.as_deref() == Some("task_1"))
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, [CheckStatus::Failed, CheckStatus::Passed]);
}

/// The attack: a `Makefile` the model left in the checkout (written in an earlier run, never
/// committed) must not decide which checks Replan runs. Detection reads the starting commit.
#[test]
fn a_makefile_the_model_left_in_the_work_tree_is_not_a_detected_check() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    checkout.write("Makefile", "test:\n\ttouch planted-by-check\n");
    let state = TempDir::new().unwrap();
    let output = local_command_on(&llm.openai_base(), &checkout, Some(state.path()), 7)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("none detected in the repository"),
        "{stderr}"
    );
    let text =
        std::fs::read_to_string(state.path().join("planning_history/issues/7.jsonl")).unwrap();
    let entries = jsonl::parse(&text).entries;
    assert!(
        checks(&entries).is_empty(),
        "a check ran: {:?}",
        checks(&entries)
    );
    assert!(!checkout.path().join("planted-by-check").exists());
}

/// The same `Makefile` committed before the run is the repository's own: `make test` is detected,
/// said in the log, and proves the subtask.
#[test]
fn a_committed_makefile_gives_a_detected_make_test_check() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    checkout.write("Makefile", "test:\n\ttest -f hello.md\n");
    checkout.commit_all("a Makefile");
    let state = TempDir::new().unwrap();
    let output = local_command_on(&llm.openai_base(), &checkout, Some(state.path()), 7)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("checks detected: `make test`"), "{stderr}");
    let text =
        std::fs::read_to_string(state.path().join("planning_history/issues/7.jsonl")).unwrap();
    let entries = jsonl::parse(&text).entries;
    let ran = checks(&entries);
    assert!(
        ran.iter()
            .any(|c| c.task_id.as_deref() == Some("task_1") && c.name == "make test" && c.passed()),
        "{ran:?}"
    );
}

/// A plan whose criteria name no check is re-asked with the problem; the mapped answer stands.
#[test]
fn a_criterion_without_evidence_is_reasked_and_the_mapped_plan_is_used() {
    let reask = MAPPED_PLAN.replace(
        "when: { contains: \"Produce the planning phases\" }",
        "when: { contains: \"has no evidence\" }",
    );
    let run = run_with(
        "verify:\n  - name: hello\n    argv: [test, -f, hello.md]\n",
        &reask,
    );
    assert_eq!(run.status, RunStatus::Completed, "{}", run.stderr);
    let problems: Vec<String> = run
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Draft { problems, .. } => Some(problems.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("\"hello.md exists\" has no evidence")),
        "{problems:?}"
    );
    let plan = run
        .entries
        .iter()
        .find_map(|e| match &e.body {
            EntryBody::Plan { plan, .. } => Some(plan.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(plan.goal_understanding.criteria_evidence.len(), 2);
}
