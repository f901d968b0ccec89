//! The kill test: a local cycle that posts a comment (`post_comment`) and opens a pull request is
//! killed with SIGKILL while it waits for each of its model replies in turn — every point at
//! which its history has grown — and resumed with the identical `replan run` command. Every time
//! it ends in the same state: the cycle completed, exactly one such comment, one pull request.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use replan::forge::Forge;
use replan::forge::local::LocalForge;
use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;
use replan::llm::scenario::Scenario;
use replan::trigger::ThreadRef;
use tempfile::TempDir;

use super::e2e_support::scenario;
use super::local_run::{checkout, local_command};
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

const COMMENT: &str = "Wrote hello.md; a pull request follows.";

/// The base cycle (write hello.md, open a pull request), with a comment posted in task 1.
fn commenting_scenario() -> Scenario {
    scenario(&format!(
        r#"
steps:
  - when: {{ contains: "Execute subtask `task_1`" }}
    tool_calls:
      - {{ name: write_file, arguments: {{ path: hello.md, content: "hello\n" }} }}
      - {{ name: post_comment, arguments: {{ body: "{COMMENT}" }} }}
"#
    ))
}

struct Workspace {
    origin: TestRepo,
    checkout: TestRepo,
    state: TempDir,
    /// Environment added to every `replan run` (config overrides).
    env: Vec<(&'static str, &'static str)>,
}

fn workspace() -> Workspace {
    let (origin, checkout) = checkout();
    Workspace {
        origin,
        checkout,
        state: TempDir::new().unwrap(),
        env: Vec::new(),
    }
}

/// Saves the work branch after every finished task (by default a run younger than
/// `history.save_work_every_seconds` saves it only when the history commits a finished task).
const SAVE_AFTER_EVERY_TASK: (&str, &str) = ("REPLAN_HISTORY__SAVE_WORK_EVERY_SECONDS", "0");

/// The identical command every time: `replan run --issue 7 --title … --body …`.
fn replan_run(llm: &LlmServer, workspace: &Workspace) -> Command {
    let mut command = local_command(llm, &workspace.checkout, Some(workspace.state.path()));
    command
        .envs(workspace.env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The index of the model request that executes task 2 (the kill point after task 1).
fn request_of_task_2(llm: &LlmServer) -> usize {
    llm.requests()
        .iter()
        .position(|r| {
            r.texts()
                .iter()
                .any(|t| t.contains("Execute subtask `task_2`"))
        })
        .expect("task 2 is executed")
}

/// Commits the work branch holds beyond `main` on the origin (None: it was never pushed).
fn work_branch_saves(workspace: &Workspace) -> Option<String> {
    workspace
        .origin
        .try_git(&["rev-list", "--count", "replan/work/issue-7", "^main"])
        .ok()
        .map(|n| n.trim().to_owned())
}

fn run_to_the_end(workspace: &Workspace) -> usize {
    run_to_the_end_with(workspace).requests().len()
}

fn run_to_the_end_with(workspace: &Workspace) -> LlmServer {
    run_scenario_to_the_end(workspace, commenting_scenario())
}

fn run_scenario_to_the_end(workspace: &Workspace, scenario: Scenario) -> LlmServer {
    let llm = LlmServer::start(scenario);
    let output = replan_run(&llm, workspace).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    llm
}

/// SIGKILL the run while it waits for model reply `index` (0-based).
fn run_killed_at(workspace: &Workspace, index: usize) {
    run_scenario_killed_at(workspace, index, commenting_scenario())
}

fn run_scenario_killed_at(workspace: &Workspace, index: usize, scenario: Scenario) {
    let llm = LlmServer::start(scenario);
    llm.hold_from(index);
    let mut child = replan_run(&llm, workspace)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.requests().len() <= index {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("kill point {index}: the run ended ({status}) before reaching it");
        }
        assert!(
            Instant::now() < deadline,
            "kill point {index} never reached"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[derive(Debug, PartialEq)]
struct FinalState {
    status: Option<RunStatus>,
    comments: usize,
    pull_requests: Vec<String>,
    hello_on_the_branch: String,
}

/// The comments and pull requests the local forge holds now.
fn forge_contents(
    workspace: &Workspace,
) -> (
    Vec<replan::forge::Comment>,
    Vec<replan::forge::local::RecordedPullRequest>,
) {
    let forge = LocalForge::new(workspace.state.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        (
            forge.comments(&ThreadRef::issue(7)).await.unwrap(),
            forge.pull_requests().await.unwrap(),
        )
    })
}

fn final_state(workspace: &Workspace) -> FinalState {
    let (comments, pulls) = forge_contents(workspace);
    let history = std::fs::read_to_string(
        workspace
            .state
            .path()
            .join("planning_history/issues/7.jsonl"),
    )
    .unwrap();
    let status = jsonl::parse(&history)
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EntryBody::RunFinished { status, .. } => Some(*status),
            _ => None,
        });
    let head = pulls.first().map(|p| p.request.head.clone());
    FinalState {
        status,
        comments: comments.iter().filter(|c| c.body.contains(COMMENT)).count(),
        pull_requests: pulls.iter().map(|p| p.request.title.clone()).collect(),
        hello_on_the_branch: head
            .map(|head| workspace.checkout.show(&format!("{head}:hello.md")))
            .unwrap_or_default(),
    }
}

fn origin_branches(workspace: &Workspace) -> String {
    workspace
        .checkout
        .run_git(&["ls-remote", "--heads", "origin", "replan/issue-*"])
}

#[test]
fn a_cycle_killed_at_any_point_resumes_to_one_comment_and_one_pull_request() {
    let reference = workspace();
    let replies = run_to_the_end(&reference);
    let expected = final_state(&reference);
    assert_eq!(
        expected,
        FinalState {
            status: Some(RunStatus::Completed),
            comments: 1,
            pull_requests: vec!["Add hello.md".to_owned()],
            hello_on_the_branch: "hello\n".to_owned(),
        }
    );
    // Folded decisions (the default) make this cycle 7 model replies; the assertion below checks
    // that kill points fall on both sides of the comment and of the PR.
    assert!(
        replies > 4,
        "a cycle long enough to be interesting: {replies}"
    );

    // Kill points after which the resumed run had to find the comment / the PR, not make it.
    let (mut comment_found, mut pull_found) = (0, 0);
    for index in 1..replies {
        let workspace = workspace();
        run_killed_at(&workspace, index);
        let (comments, pulls) = forge_contents(&workspace);
        comment_found += usize::from(comments.iter().any(|c| c.body.contains(COMMENT)));
        pull_found += usize::from(!pulls.is_empty());
        run_to_the_end(&workspace);
        assert_eq!(
            final_state(&workspace),
            expected,
            "killed while waiting for model reply {index} of {replies}"
        );
        let branches = origin_branches(&workspace);
        assert_eq!(
            branches.lines().count(),
            1,
            "kill point {index}: one pushed branch: {branches}"
        );
    }
    assert!(
        comment_found > 0 && pull_found > 0,
        "some kill points come after the comment ({comment_found}) and the PR ({pull_found})"
    );
}

/// A CI re-run starts from a fresh clone: the finished task's changes come back from the work
/// branch pushed after it.
#[test]
fn finished_tasks_changes_survive_a_rerun_on_a_fresh_checkout() {
    let reference = workspace();
    let llm = run_to_the_end_with(&reference);
    let task_2 = request_of_task_2(&llm);

    let mut first = workspace();
    first.env.push(SAVE_AFTER_EVERY_TASK);
    run_killed_at(&first, task_2);
    assert!(
        first
            .checkout
            .try_git(&["ls-remote", "--exit-code", "origin", "replan/work/issue-7"])
            .is_ok(),
        "the work branch was pushed after task 1"
    );
    let fresh = Workspace {
        checkout: TestRepo::clone_from(&first.origin),
        origin: first.origin,
        state: first.state,
        env: first.env,
    };
    let _ = fresh.checkout.try_git(&["checkout", "-q", "main"]);
    assert!(!fresh.checkout.path().join("hello.md").exists());

    // The re-run restores the work branch before it asks the model anything: stopped at its
    // first model request, the fresh checkout already holds task 1's file. (With
    // `history.commit_every` batching, default 20, task 1's entries may not have reached the
    // history before the SIGKILL, so task 1 may run again, on the restored tree.)
    run_killed_at(&fresh, 0);
    assert_eq!(
        std::fs::read_to_string(fresh.checkout.path().join("hello.md")).ok(),
        Some("hello\n".to_owned()),
        "task 1's file is restored from the work branch"
    );
    run_to_the_end_with(&fresh);
    let state = final_state(&fresh);
    assert_eq!(state.status, Some(RunStatus::Completed));
    assert_eq!(state.pull_requests.len(), 1);
    assert_eq!(
        state.hello_on_the_branch, "hello\n",
        "the pull request holds task 1's file"
    );
}

/// By default the work branch is saved at most every 10 s counted from the start of the run: a
/// run shorter than that pushes it once, when the history records the finished tasks, and a run
/// killed before then has pushed nothing (its finished tasks were not committed either, so a
/// re-run redoes them: nothing is claimed done without its files).
#[test]
fn a_short_run_saves_the_work_branch_once() {
    let reference = workspace();
    let llm = run_to_the_end_with(&reference);
    assert_eq!(
        work_branch_saves(&reference).as_deref(),
        Some("1"),
        "one save of the work branch in a run shorter than the interval"
    );
    let task_2 = request_of_task_2(&llm);

    let killed = workspace();
    run_killed_at(&killed, task_2);
    assert_eq!(work_branch_saves(&killed), None, "nothing pushed yet");
    run_to_the_end_with(&killed);
    let state = final_state(&killed);
    assert_eq!(state.status, Some(RunStatus::Completed));
    assert_eq!(state.hello_on_the_branch, "hello\n");
}

#[test]
fn the_last_save_reaches_origin_while_the_model_writes_the_final_review() {
    let reference = workspace();
    let llm = run_to_the_end_with(&reference);
    let final_review = llm
        .requests()
        .iter()
        .position(|r| {
            r.texts()
                .iter()
                .any(|t| t.contains("You have completed the execution of planned actions"))
        })
        .expect("the run asks for a final review");

    // The final review is never answered: whatever reaches origin got there while the run waited.
    let held = workspace();
    let llm = LlmServer::start(commenting_scenario());
    llm.hold_from(final_review);
    let mut child = replan_run(&llm, &held)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let saved = loop {
        let on_origin = held.origin.try_show("replan/work/issue-7:hello.md");
        if on_origin.is_some() || Instant::now() > deadline {
            break on_origin;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) while its final review was held");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        llm.requests().len() > final_review,
        "the final review was asked for"
    );
    assert_eq!(saved.as_deref(), Some("hello\n"));
}

/// Task 1's turn decides a partial replan (a "Plan Revision Decided" notice), then the plan is
/// made again: the notice comment is posted before the model is asked for the new plan.
fn replanning_scenario() -> Scenario {
    scenario(
        r#"
steps:
  - when: { contains: "created `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": true, "confidence": 0.95, "reasoning": "NOTICE-ONCE: propose it with a clearer title",
       "replan_type": "partial_replan", "target_phase": "action_sequence", "replan_level": 2, "issues_found": ["title"], "recommended_actions": ["retitle"],
       "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}}
"#,
    )
}

/// Notice comments carrying the decision of the replanning scenario.
fn decision_notices(workspace: &Workspace) -> usize {
    let (comments, _) = forge_contents(workspace);
    comments
        .iter()
        .filter(|c| c.body.contains("Plan Revision Decided") && c.body.contains("NOTICE-ONCE"))
        .count()
}

#[test]
fn an_engine_notice_posted_before_a_kill_is_not_posted_again_on_resume() {
    let reference = workspace();
    let replies = run_scenario_to_the_end(&reference, replanning_scenario())
        .requests()
        .len();
    assert_eq!(decision_notices(&reference), 1);
    let (comments, _) = forge_contents(&reference);
    let notice = comments
        .iter()
        .find(|c| c.body.contains("Plan Revision Decided"))
        .unwrap();
    assert!(
        replan::forge::marker::key_in(&notice.body).is_some(),
        "the notice carries its idempotency key: {}",
        notice.body
    );

    let mut killed_after_the_notice = 0;
    for index in 1..replies {
        let workspace = workspace();
        run_scenario_killed_at(&workspace, index, replanning_scenario());
        let posted = decision_notices(&workspace);
        killed_after_the_notice += posted;
        run_scenario_to_the_end(&workspace, replanning_scenario());
        // (Killed before task 1's turn was answered, the resumed run finds `hello.md` already
        // there, "replaced" rather than "created": no replan, no notice at all.)
        let expected = if posted == 1 { 1..=1 } else { 0..=1 };
        assert!(
            expected.contains(&decision_notices(&workspace)),
            "killed while waiting for model reply {index} of {replies} (notice posted: {posted}): the decision notice at most once, got {}",
            decision_notices(&workspace)
        );
    }
    assert!(
        killed_after_the_notice > 0,
        "some kill points come after the notice"
    );
}

/// The lines a killed run left in its spool (batched entries not committed yet).
fn spooled_lines(workspace: &Workspace) -> Vec<String> {
    let dir = workspace.state.path().join("spool/issues/7");
    let mut lines = Vec::new();
    for file in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(file.path()).unwrap();
        lines.extend(text.lines().map(str::to_owned));
    }
    lines
}

#[test]
fn batched_entries_of_a_sigkilled_run_reach_the_history_exactly_once() {
    let reference = workspace();
    let replies = run_to_the_end(&reference);
    let mut spooled_total = 0;
    for index in [replies / 2, replies - 1] {
        let workspace = workspace();
        run_killed_at(&workspace, index);
        let spooled = spooled_lines(&workspace);
        spooled_total += spooled.len();
        let history_file = workspace
            .state
            .path()
            .join("planning_history/issues/7.jsonl");
        let before = std::fs::read_to_string(&history_file).unwrap_or_default();
        for line in &spooled {
            let key = jsonl::idempotency_key(line).unwrap();
            assert!(
                !before
                    .lines()
                    .any(|l| jsonl::idempotency_key(l).as_deref() == Some(&key)),
                "kill point {index}: a spooled entry is not committed yet: {line}"
            );
        }
        run_to_the_end(&workspace);
        let after = std::fs::read_to_string(&history_file).unwrap();
        for line in &spooled {
            let key = jsonl::idempotency_key(line).unwrap();
            let found = after
                .lines()
                .filter(|l| jsonl::idempotency_key(l).as_deref() == Some(&key))
                .count();
            assert_eq!(found, 1, "kill point {index}: once on the history: {line}");
        }
        let parsed = jsonl::parse(&after);
        assert!(parsed.corrupt.is_empty(), "{:?}", parsed.corrupt);
        let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        assert!(spooled_lines(&workspace).is_empty(), "the spool is emptied");
        assert_eq!(final_state(&workspace).status, Some(RunStatus::Completed));
    }
    assert!(spooled_total > 0, "the kills did catch batched entries");
}
