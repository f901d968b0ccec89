//! `execution.max_parallel`: independent subtasks of one run at the same time, each in its own
//! worktree, against the scripted model and a real git checkout — they overlap in time, their
//! files all reach the workspace, a conflict is a failed attempt of the later subtask, the
//! checklist shows them running, and the token budget holds across them.

use chrono::{DateTime, Duration, Utc};
use replan::history::entry::{ActionOutcome, EntryBody, RunStatus};
use replan::history::{Entry, jsonl, replay};
use replan::plan::TaskState;
use tempfile::TempDir;

use crate::github::e2e_support::{checkout, scenario};
use crate::github::local_run::local_command;
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

/// A folded final report: the subtask is done.
const REPORT: &str = r#"{"report": "Done.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []}, "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}, "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}"#;

/// A plan of `n` subtasks (`task_1`..), each using `tool`; with `chain` each needs the one
/// before it, else they are independent.
fn plan_step(n: usize, tool: &str, usage: &str, chain: bool) -> String {
    plan_needing(n, tool, usage, |i| (chain && i > 1).then(|| i - 1))
}

/// A plan of `n` subtasks using `tool` where `task_i` needs `task_{needs(i)}`, if any.
fn plan_needing(
    n: usize,
    tool: &str,
    usage: &str,
    needs: impl Fn(usize) -> Option<usize>,
) -> String {
    let subtasks: Vec<String> = (1..=n)
        .map(|i| {
            let needs = needs(i)
                .map(|d| format!("\"task_{d}\""))
                .unwrap_or_default();
            format!(
                r#"{{"id": "task_{i}", "description": "Part {i}", "dependencies": [{needs}], "estimated_complexity": "low", "required_tools": ["{tool}"]}}"#
            )
        })
        .collect();
    let order: Vec<String> = (1..=n).map(|i| format!("\"task_{i}\"")).collect();
    let actions: Vec<String> = (1..=n)
        .map(|i| {
            format!(
                r#"{{"task_id": "task_{i}", "action_type": "tool_call", "tool": "{tool}", "purpose": "part {i}", "expected_outcome": "done"}}"#
            )
        })
        .collect();
    let reply = format!(
        r#"{{"phase": "planning", "goal_understanding": {{"main_objective": "Do {n} independent parts", "success_criteria": ["all parts done"], "constraints": []}}, "task_decomposition": {{"reasoning": "independent parts", "subtasks": [{}]}}, "action_plan": {{"execution_order": [{}], "actions": [{}]}}, "self_check": {{"goal_understanding": {{"ok": true, "notes": "clear"}}, "task_decomposition": {{"ok": true, "notes": "ids unique"}}, "action_plan": {{"ok": true, "notes": "tools exist"}}}}, "comment": "Plan completed.", "replan_decision": {{"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []}}, "quality": {{"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}}}"#,
        subtasks.join(", "),
        order.join(", "),
        actions.join(", ")
    );
    format!(
        "  - when: {{ contains: \"Produce the planning phases\" }}\n    usage: {usage}\n    reply: {}\n",
        serde_json::to_string(&reply).unwrap()
    )
}

/// A step answering an execute turn that contains `contains`.
fn execute_step(contains: &str, tool_call: Option<&str>, usage: &str) -> String {
    let answer = match tool_call {
        Some(call) => format!("    tool_calls: [ {call} ]\n"),
        None => format!("    reply: {}\n", serde_json::to_string(REPORT).unwrap()),
    };
    format!(
        "  - when: {{ contains: {} }}\n    usage: {usage}\n{answer}",
        serde_json::to_string(contains).unwrap()
    )
}

const SMALL: &str = "{ prompt_tokens: 10, completion_tokens: 0 }";

/// `n` independent subtasks that each run `sleep 3` (issue 19 names a 3-second command) and then report done.
fn sleeping_plan(n: usize, first_turn_usage: &str) -> String {
    sleeping_steps(n, first_turn_usage, false)
}

fn sleeping_steps(n: usize, first_turn_usage: &str, chain: bool) -> String {
    let mut steps = String::from("steps:\n");
    steps.push_str(&plan_step(n, "run_command", SMALL, chain));
    for _ in 0..n {
        steps.push_str(&execute_step("exited with status 0", None, SMALL));
    }
    for i in 1..=n {
        steps.push_str(&execute_step(
            &format!("Execute subtask `task_{i}`"),
            Some(r#"{ name: run_command, arguments: { argv: ["sleep", "3"] } }"#),
            first_turn_usage,
        ));
    }
    steps
}

/// A checkout with `.replan.yml` allowing `sleep 3`.
fn repo() -> (TestRepo, TestRepo) {
    let (origin, checkout) = checkout();
    checkout.write(".replan.yml", "tools:\n  allowed_commands: [\"sleep 3\"]\n");
    checkout.commit_all("replan config");
    (origin, checkout)
}

fn run(
    llm: &LlmServer,
    checkout: &TestRepo,
    dir: &TempDir,
    extra: &[&str],
) -> std::process::Output {
    let mut command = local_command(llm, checkout, Some(dir.path()));
    command.args(extra);
    command.output().unwrap()
}

/// A run that exits 0, with what it left behind.
struct Ran {
    entries: Vec<Entry>,
    checkout: TestRepo,
    _origin: TestRepo,
    _dir: TempDir,
}

fn run_ok(plan: &str, extra: &[&str]) -> Ran {
    let llm = LlmServer::start(scenario(plan));
    let (origin, checkout) = repo();
    let dir = TempDir::new().unwrap();
    let out = run(&llm, &checkout, &dir, extra);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    Ran {
        entries: history(&dir),
        checkout,
        _origin: origin,
        _dir: dir,
    }
}

fn history(dir: &TempDir) -> Vec<Entry> {
    let path = dir.path().join("planning_history/issues/7.jsonl");
    let parsed = jsonl::parse(&std::fs::read_to_string(path).unwrap());
    assert!(parsed.corrupt.is_empty());
    parsed.entries
}

fn finished_status(entries: &[Entry]) -> RunStatus {
    entries
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EntryBody::RunFinished { status, .. } => Some(*status),
            _ => None,
        })
        .expect("the run finished")
}

/// When each `tool` action ran: (task, start, end), the entry stamped when the call returned.
fn action_spans(entries: &[Entry], tool: &str) -> Vec<(String, DateTime<Utc>, DateTime<Utc>)> {
    entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action {
                task_id,
                tool: t,
                duration_ms,
                outcome: ActionOutcome::Ok,
                ..
            } if t == tool => Some((
                task_id.clone(),
                e.ts - Duration::milliseconds(*duration_ms as i64),
                e.ts,
            )),
            _ => None,
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn four_independent_sleeps_run_at_the_same_time_and_the_run_completes() {
    let ran = run_ok(
        &sleeping_plan(4, SMALL),
        &["--set", "execution.max_parallel=4"],
    );
    let entries = ran.entries;
    assert_eq!(finished_status(&entries), RunStatus::Completed);
    let spans = action_spans(&entries, "run_command");
    let mut tasks: Vec<&str> = spans.iter().map(|(t, _, _)| t.as_str()).collect();
    tasks.sort_unstable();
    assert_eq!(tasks, ["task_1", "task_2", "task_3", "task_4"]);
    // All four sleeps were running at one moment: the last to start began before the first
    // to end had ended.
    let last_start = spans.iter().map(|(_, s, _)| *s).max().unwrap();
    let first_end = spans.iter().map(|(_, _, e)| *e).min().unwrap();
    assert!(last_start < first_end, "{spans:?}");
    // From the first sleep's start to the last one's end took under half of what the four
    // take one after another (at least the sum of their durations).
    let first_start = spans.iter().map(|(_, s, _)| *s).min().unwrap();
    let last_end = spans.iter().map(|(_, _, e)| *e).max().unwrap();
    let sequential: chrono::Duration = spans.iter().map(|(_, s, e)| *e - *s).sum();
    assert!(last_end - first_start < sequential / 2, "{spans:?}");

    // Replay gives every subtask done, and `seq` runs 1, 2, 3... with no gap or repeat.
    let state = replay(&entries);
    for id in ["task_1", "task_2", "task_3", "task_4"] {
        assert_eq!(state.task_state(id), TaskState::Done, "{id}");
    }
    let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=entries.len() as u64).collect();
    assert_eq!(seqs, expected);
    // Within a subtask its entries keep their order: the action before its judgement.
    for id in ["task_1", "task_2", "task_3", "task_4"] {
        let at = |pred: &dyn Fn(&EntryBody) -> bool| entries.iter().position(|e| pred(&e.body));
        let action = at(&|b| matches!(b, EntryBody::Action { task_id, .. } if task_id == id));
        let judged = at(&|b| matches!(b, EntryBody::Judge { task_id, .. } if task_id == id));
        assert!(action.unwrap() < judged.unwrap(), "{id}");
    }
}

#[test]
fn with_max_parallel_1_the_sleeps_run_one_after_another_in_plan_order() {
    let ran = run_ok(
        &sleeping_plan(2, SMALL),
        &["--set", "execution.max_parallel=1"],
    );
    let entries = ran.entries;
    assert_eq!(finished_status(&entries), RunStatus::Completed);
    let spans = action_spans(&entries, "run_command");
    let order: Vec<&str> = spans.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(order, ["task_1", "task_2"]);
    assert!(spans[0].2 <= spans[1].1, "{spans:?}");
}

#[test]
fn a_dependency_chain_stays_sequential_with_max_parallel_4() {
    let ran = run_ok(
        &sleeping_steps(3, SMALL, true),
        &["--set", "execution.max_parallel=4"],
    );
    assert_eq!(finished_status(&ran.entries), RunStatus::Completed);
    let spans = action_spans(&ran.entries, "run_command");
    let order: Vec<&str> = spans.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(order, ["task_1", "task_2", "task_3"]);
    for pair in spans.windows(2) {
        assert!(pair[0].2 <= pair[1].1, "{spans:?}");
    }
}

/// Issue 40: a subtask starts the moment its own dependencies are done, not when everything
/// started before it is. `task_1` sleeps 3 s; `task_2` is quick and `task_3` needs only
/// `task_2`: it runs while `task_1` still sleeps.
#[test]
fn a_subtask_starts_when_its_dependencies_are_done_not_when_earlier_subtasks_are() {
    let mut steps = String::from("steps:\n");
    steps.push_str(&plan_needing(3, "run_command", SMALL, |i| {
        (i == 3).then_some(2)
    }));
    for _ in 0..3 {
        steps.push_str(&execute_step("exited with status 0", None, SMALL));
    }
    for (i, seconds) in [(1, "3"), (2, "0"), (3, "0")] {
        steps.push_str(&execute_step(
            &format!("Execute subtask `task_{i}`"),
            Some(&format!(
                r#"{{ name: run_command, arguments: {{ argv: ["sleep", "{seconds}"] }} }}"#
            )),
            SMALL,
        ));
    }
    let llm = LlmServer::start(scenario(&steps));
    let (_origin, checkout) = checkout();
    checkout.write(
        ".replan.yml",
        "tools:\n  allowed_commands: [\"sleep 3\", \"sleep 0\"]\n",
    );
    checkout.commit_all("replan config");
    let dir = TempDir::new().unwrap();
    let out = run(
        &llm,
        &checkout,
        &dir,
        &["--set", "execution.max_parallel=4"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let entries = history(&dir);
    assert_eq!(finished_status(&entries), RunStatus::Completed);
    let spans = action_spans(&entries, "run_command");
    let span = |id: &str| spans.iter().find(|(t, _, _)| t == id).cloned().unwrap();
    let (_, _, first_end) = span("task_1");
    let (_, third_start, _) = span("task_3");
    assert!(
        third_start < first_end,
        "task_3 waited for task_1, which it does not need: {spans:?}"
    );
    let state = replay(&entries);
    for id in ["task_1", "task_2", "task_3"] {
        assert_eq!(state.task_state(id), TaskState::Done, "{id}");
    }
}

/// Two subtasks writing files: `first` and `second` are what task_1 and task_2 write.
fn writing_plan(first: (&str, &str), second: (&str, &str), redo: (&str, &str)) -> String {
    let call = |(path, content): (&str, &str)| {
        format!(r#"{{ name: write_file, arguments: {{ path: "{path}", content: "{content}" }} }}"#)
    };
    let mut steps = String::from("steps:\n");
    steps.push_str(&plan_step(2, "write_file", SMALL, false));
    for _ in 0..3 {
        steps.push_str(&execute_step("created `", None, SMALL));
    }
    // The second attempt of a subtask (after a merge conflict) is told so.
    steps.push_str(&execute_step("continuation #1", Some(&call(redo)), SMALL));
    steps.push_str(&execute_step(
        "Execute subtask `task_1`",
        Some(&call(first)),
        SMALL,
    ));
    steps.push_str(&execute_step(
        "Execute subtask `task_2`",
        Some(&call(second)),
        SMALL,
    ));
    steps
}

#[test]
fn two_parallel_subtasks_writing_different_files_both_reach_the_workspace() {
    let plan = writing_plan(("a.txt", "alpha"), ("b.txt", "beta"), ("unused.txt", "x"));
    let ran = run_ok(&plan, &[]);
    let checkout = &ran.checkout;
    assert_eq!(finished_status(&ran.entries), RunStatus::Completed);
    assert_eq!(checkout.read("a.txt"), "alpha");
    assert_eq!(checkout.read("b.txt"), "beta");
    assert!(!checkout.path().join("unused.txt").exists());
    // Nothing of the worktrees is left registered in the repository.
    let worktrees = checkout.run_git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

#[test]
fn a_conflict_is_a_failed_attempt_of_the_later_subtask_and_the_earlier_change_stays() {
    let plan = writing_plan(
        ("same.txt", "one"),
        ("same.txt", "two"),
        ("two.txt", "redone"),
    );
    let ran = run_ok(&plan, &[]);
    let (entries, checkout) = (ran.entries, ran.checkout);
    let merge_failures: Vec<(String, String)> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action {
                task_id,
                tool,
                outcome: ActionOutcome::FAILED,
                summary,
                ..
            } if tool == "merge" => Some((task_id.clone(), summary.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(merge_failures.len(), 1, "{merge_failures:?}");
    // Results are merged in the order the subtasks finish: either may be the later one.
    let later = merge_failures[0].0.clone();
    let (earlier, earlier_text) = match later.as_str() {
        "task_2" => ("task_1", "one"),
        _ => ("task_2", "two"),
    };
    let merged_at = |id: &str| {
        entries
            .iter()
            .position(|e| matches!(&e.body, EntryBody::Judge { task_id, .. } if task_id == id))
            .unwrap()
    };
    assert!(merged_at(earlier) < merged_at(&later), "{merge_failures:?}");
    assert!(
        merge_failures[0].1.contains("merge conflict"),
        "{merge_failures:?}"
    );
    assert!(
        merge_failures[0].1.contains("same.txt"),
        "{merge_failures:?}"
    );
    // The later one ran again on the merged tree and the run went on to completion.
    assert_eq!(finished_status(&entries), RunStatus::Completed);
    let state = replay(&entries);
    assert_eq!(state.task_state(&later), TaskState::Done);
    assert_eq!(state.continuations.get(&later), Some(&1));
    assert_eq!(checkout.read("same.txt"), earlier_text);
    assert_eq!(checkout.read("two.txt"), "redone");
}

#[test]
fn the_checklist_shows_running_subtasks_while_they_run() {
    let llm = LlmServer::start(scenario(&sleeping_plan(2, SMALL)));
    let (_origin, checkout) = repo();
    let dir = TempDir::new().unwrap();
    let mut child = local_command(&llm, &checkout, Some(dir.path()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let thread = dir.path().join("threads/issues-7.json");
    let mut seen_running = None;
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 60 {
        let body = std::fs::read_to_string(&thread).unwrap_or_default();
        if seen_running.is_none() && body.contains("🔄") {
            seen_running = Some(body);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    let seen = seen_running.expect("a checklist with running subtasks");
    let body: serde_json::Value = serde_json::from_str(&seen).unwrap();
    let comments = body["comments"].as_array().unwrap();
    let checklists: Vec<&str> = comments
        .iter()
        .filter_map(|c| c["body"].as_str())
        .filter(|b| b.contains("Execution Plan"))
        .collect();
    assert_eq!(checklists.len(), 1, "one checklist comment: {checklists:?}");
    assert_eq!(
        checklists[0].matches("🔄 *running*").count(),
        2,
        "{}",
        checklists[0]
    );
    // At the end the same one comment shows both done.
    let end: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&thread).unwrap()).unwrap();
    let finals: Vec<&str> = end["comments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["body"].as_str())
        .filter(|b| b.contains("Execution Plan"))
        .collect();
    assert_eq!(finals.len(), 1);
    assert!(!finals[0].contains("🔄"), "{}", finals[0]);
}

#[test]
fn the_token_budget_holds_across_parallel_subtasks() {
    // Each subtask's first turn costs 1000 tokens; four start at once under a budget that
    // allows about two and a half of them.
    let heavy = "{ prompt_tokens: 1000, completion_tokens: 0 }";
    let llm = LlmServer::start(scenario(&sleeping_plan(4, heavy)));
    let (_origin, checkout) = repo();
    let dir = TempDir::new().unwrap();
    let out = run(
        &llm,
        &checkout,
        &dir,
        &["--set", "llm.budget.max_tokens=2510"],
    );
    let entries = history(&dir);
    assert_eq!(
        finished_status(&entries),
        RunStatus::BudgetExhausted,
        "{}",
        text(&out.stderr)
    );
    let used = entries
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EntryBody::RunFinished { usage, .. } => {
                Some(usage.prompt_tokens + usage.completion_tokens)
            }
            _ => None,
        })
        .unwrap();
    // As in a sequential run, the limit is checked before every call and only the last call
    // may pass it: never four heavy calls in flight at once.
    assert!(used < 2510 + 1000, "{used} tokens used");
    let heavy_calls = llm
        .requests()
        .iter()
        .filter(|r| r.texts().iter().any(|t| t.contains("Execute subtask")))
        .filter(|r| !r.texts().iter().any(|t| t.contains("exited with status")))
        .count();
    assert!(heavy_calls <= 3, "{heavy_calls} first turns were sent");
}

/// Issue 39, point 3: a token budget no longer makes parallel subtasks take turns at the model.
/// Every reply takes 800 ms; the four subtasks' first turns reach the server within one reply's
/// time of each other, where calls taken one at a time would arrive at least 2.4 s apart.
#[test]
fn model_calls_of_parallel_subtasks_overlap_under_a_budget() {
    let delay = std::time::Duration::from_millis(800);
    let llm = LlmServer::start(scenario(&sleeping_plan(4, SMALL)));
    llm.delay_replies(delay);
    let (_origin, checkout) = repo();
    let dir = TempDir::new().unwrap();
    let out = run(
        &llm,
        &checkout,
        &dir,
        &[
            "--set",
            "execution.max_parallel=4",
            "--set",
            "llm.budget.max_tokens=1000000",
        ],
    );
    let entries = history(&dir);
    assert_eq!(
        finished_status(&entries),
        RunStatus::Completed,
        "{}",
        text(&out.stderr)
    );
    let first_turns: Vec<std::time::Instant> = llm
        .requests()
        .iter()
        .filter(|r| r.texts().iter().any(|t| t.contains("Execute subtask")))
        .filter(|r| !r.texts().iter().any(|t| t.contains("exited with status")))
        .map(|r| r.received_at)
        .collect();
    assert_eq!(first_turns.len(), 4);
    let spread = *first_turns.iter().max().unwrap() - *first_turns.iter().min().unwrap();
    assert!(
        spread < delay,
        "the four first turns arrived {spread:?} apart: the model calls were serialised"
    );
    let spans = action_spans(&entries, "run_command");
    let last_start = spans.iter().map(|(_, s, _)| *s).max().unwrap();
    let first_end = spans.iter().map(|(_, _, e)| *e).min().unwrap();
    assert!(last_start < first_end, "{spans:?}");
}

/// Issue 35, point 7: a subtask's commands rewrite its worktree's `.git` file to point at a git
/// directory of theirs (with an fsmonitor that records that it ran outside the sandbox) and write
/// into the sibling subtask's worktree. Replan's merge reaches each worktree through the
/// administrative directory its private git made, so the planted one is never read; and a
/// subtask may write only its own worktree and temporary directory, so nothing reaches the
/// sibling's changes (or the workspace through them).
#[test]
fn a_subtask_cannot_redirect_replans_git_or_write_into_a_sibling_worktree() {
    let marker =
        std::path::PathBuf::from(format!("/tmp/replan-worktree-marker-{}", fastrand::u64(..)));
    let payload = format!(
        "#!/bin/sh\ngrep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status && exit 0\necho \"ran: $0\" >> {m}\nenv >> {m}\n",
        m = marker.display()
    );
    let evil = format!(
        "set -e; export GIT_CONFIG_GLOBAL=/dev/null; evil=\"${{TMPDIR:-/tmp}}/evil-wt\"; rm -rf \"$evil\"; mkdir -p \"$evil\"; \
         printf '%s' '{payload}' > \"$evil/run.sh\"; chmod +x \"$evil/run.sh\"; \
         common=$(sed -n 's/^gitdir: //p' .git || true); cp -r \"$common\"/* \"$evil\"/ 2>/dev/null || true; \
         printf '[core]\\n\\tfsmonitor = %s\\n' \"$evil/run.sh\" > \"$evil/config\"; \
         printf 'gitdir: %s\\n' \"$evil\" > .git; \
         for i in 1 2 3 4 5 6 7 8 9 10; do for d in ../*task_2*/; do echo pwned > \"$d/pwned.txt\" 2>/dev/null || true; done; sleep 0.2; done; \
         echo alpha > a.txt; echo \"planted-$((2 * 3))-wt\""
    );
    let first = format!(
        "{{ name: run_command, arguments: {{ argv: [\"sh\", \"-c\", {}] }} }}",
        serde_json::to_string(&evil).unwrap()
    );
    let second =
        r#"{ name: run_command, arguments: { argv: ["sh", "-c", "sleep 2; echo beta > b.txt"] } }"#;
    let mut steps = String::from("steps:\n");
    steps.push_str(&plan_step(2, "run_command", SMALL, false));
    for _ in 0..2 {
        steps.push_str(&execute_step("exited with status 0", None, SMALL));
    }
    steps.push_str(&execute_step(
        "Execute subtask `task_1`",
        Some(&first),
        SMALL,
    ));
    steps.push_str(&execute_step(
        "Execute subtask `task_2`",
        Some(second),
        SMALL,
    ));
    let llm = LlmServer::start(scenario(&steps));
    let (_origin, checkout) = checkout();
    checkout.write(".replan.yml", "tools:\n  allowed_commands: [\"sh -c *\"]\n");
    checkout.commit_all("replan config");
    let dir = TempDir::new().unwrap();
    let out = run(
        &llm,
        &checkout,
        &dir,
        &["--set", "execution.max_parallel=4"],
    );
    let ran = std::fs::read_to_string(&marker).ok();
    let _ = std::fs::remove_file(&marker);
    assert_eq!(
        ran,
        None,
        "a payload ran outside the sandbox: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bodies: String = llm.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        bodies.contains("planted-6-wt"),
        "the subtask's command ran: {bodies}"
    );
    assert_eq!(
        checkout.read("a.txt"),
        "alpha\n",
        "task 1's own change is merged"
    );
    assert_eq!(checkout.read("b.txt"), "beta\n");
    assert!(
        !checkout.path().join("pwned.txt").exists(),
        "a file written into the sibling's worktree reached the workspace"
    );
}
