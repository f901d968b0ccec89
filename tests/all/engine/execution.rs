//! Execution as the engine runs it: the seed 004 task judge (continue, split with re-wired
//! dependents, chain limit, blocked), reflection and the error levels of seed 001 §7.8.

use super::fixtures::*;
use async_trait::async_trait;
use replan::engine::journal::MemorySink;
use replan::engine::run_cycle;
use replan::history::entry::{EntryBody, JudgeOutcome, RunStatus};
use replan::history::replay;
use replan::llm::{ChatRequest, ChatResponse, Llm, LlmError};
use replan::plan::TaskState;
use replan::report::Notice;
use std::sync::Arc;

fn outcomes(thread: &Thread) -> Vec<(String, JudgeOutcome)> {
    thread.state().judgements
}

const SPLIT: &str = r#"{"subtasks": [
  {"id": "task_1_1", "description": "Open the file", "dependencies": [], "estimated_complexity": "low", "required_tools": ["note"]},
  {"id": "task_1_2", "description": "Write the line", "dependencies": ["task_1_1"], "estimated_complexity": "low", "required_tools": ["note"]},
  {"id": "task_1_3", "description": "Check the line", "dependencies": ["task_1_2"], "estimated_complexity": "low", "required_tools": ["note"]}],
  "reasoning": "smaller steps"}"#;

const REPLAN: &str = r#"{"success": false, "shouldContinue": false, "shouldReplan": true, "reason": "too big", "missingRequirements": ["file"]}"#;

#[tokio::test]
async fn needs_continuation_runs_the_same_subtask_again() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![reply(
        "judge",
        Some("Attempt:** 1 of"),
        r#"{"success": false, "shouldContinue": true, "reason": "half done"}"#,
    )]);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        outcomes(&thread),
        [
            ("task_1".to_string(), JudgeOutcome::NeedsContinuation),
            ("task_1".to_string(), JudgeOutcome::Done),
            ("task_2".to_string(), JudgeOutcome::NeedsContinuation),
            ("task_2".to_string(), JudgeOutcome::Done),
        ]
    );
    let second = llm
        .requests()
        .into_iter()
        .filter(|r| r.purpose == "execute.task_1")
        .nth(2)
        .unwrap();
    assert!(second.messages[0].content.contains("continuation #1"));
}

#[tokio::test]
async fn continuation_is_bounded_and_ends_blocked_until_resume() {
    let mut thread = Thread::new();
    let steps = || {
        vec![reply(
            "judge",
            Some("`task_2`"),
            r#"{"success": false, "shouldContinue": true, "reason": "still half done"}"#,
        )]
    };
    let out = thread.run(FirstMatch::with_steps(steps()), start()).await;
    assert_eq!(out.status, RunStatus::Blocked);
    assert_eq!(thread.state().task_state("task_2"), TaskState::Blocked);
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::HumanNeeded { reason, .. } if reason.contains("task_2")))
    );

    let llm = FirstMatch::new("");
    let out = thread
        .run(
            llm.clone(),
            replan::engine::EngineInput::Resume {
                author: "bob".into(),
            },
        )
        .await;
    assert_eq!(
        out.status,
        RunStatus::Completed,
        "the resumed task finished"
    );
    assert!(thread.bodies().any(|b| matches!(b, EntryBody::TaskState { task_id, state: TaskState::Ready, note: Some(n), .. } if task_id == "task_2" && n.contains("resumed by @bob"))));
    assert!(llm.count("execute.task_2") > 0);
    assert_eq!(llm.count("execute.task_1"), 0, "done work is not repeated");
}

#[tokio::test]
async fn a_replan_verdict_splits_the_task_and_rewires_its_dependents() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![
        reply("judge", Some("subtask `task_1` is"), REPLAN),
        reply("task_split", None, SPLIT),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert!(thread.types().contains(&"task_split"));
    let state = thread.state();
    assert_eq!(state.task_state("task_1"), TaskState::ReplacedByReplan);
    let info = state.tasks["task_1"].replanning_info.clone().unwrap();
    assert_eq!(info.replaced_by, ["task_1_1", "task_1_2", "task_1_3"]);
    assert_eq!(info.replan_reason.as_deref(), Some("too big"));
    let child = state.tasks["task_1_2"].replanning_info.clone().unwrap();
    assert_eq!(
        (child.iteration, child.original_task_id.as_deref()),
        (1, Some("task_1"))
    );
    let plan = state.plan.unwrap();
    assert_eq!(plan.subtask("task_2").unwrap().dependencies, ["task_1_3"]);
    assert_eq!(
        (out.tasks_done, out.tasks_total),
        (4, 4),
        "the replaced task no longer counts"
    );
    let checklist = thread.reporter.last_checklist();
    // The split task leaves the plan (its state stays REPLACED_BY_REPLAN); its parts are ticked.
    assert!(
        checklist.contains("- [x] task_1_3: Check the line") && !checklist.contains("task_1:"),
        "{checklist}"
    );
}

#[tokio::test]
async fn the_replan_chain_limit_counts_along_the_chain_and_blocks() {
    let mut thread = Thread::new();
    thread.config.replanning.max_iterations = 2;
    let llm = FirstMatch::with_steps(vec![
        // task_1 and every task split off it ask for a replan.
        reply("judge", Some("subtask `task_1"), REPLAN),
        reply(
            "task_split",
            Some("`task_1_1`"),
            &SPLIT.replace("task_1_", "task_1_1_"),
        ),
        reply("task_split", None, SPLIT),
    ]);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Blocked);
    let state = thread.state();
    assert_eq!(state.task_state("task_1"), TaskState::ReplacedByReplan);
    assert_eq!(
        state.task_state("task_1_1"),
        TaskState::Blocked,
        "second generation hits max_iterations 2"
    );
    assert_eq!(llm.count("task_split"), 1);
    let note = state.tasks["task_1_1"].note.clone().unwrap();
    assert!(note.contains("max_iterations"), "{note}");
}

#[tokio::test]
async fn the_revision_limit_stops_with_requires_human_intervention() {
    let mut thread = Thread::new();
    thread.config.planning.revision.max_revisions = 0;
    let out = thread
        .run(
            FirstMatch::from_file("engine_replan_revision.yaml"),
            start(),
        )
        .await;
    assert_eq!(out.status, RunStatus::RequiresHumanIntervention);
    let completion = thread.state().completion.unwrap();
    assert_eq!(
        completion.status.as_deref(),
        Some("requires_human_intervention")
    );
    assert!(!completion.summary.goal_achieved);
    assert!(completion.summary.reason.unwrap().contains("max_revisions"));
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::HumanNeeded { .. }))
    );
}

#[tokio::test]
async fn a_failed_reflection_is_logged_and_execution_goes_on() {
    let mut thread = Thread::new();
    thread.config.planning.reflection.trigger_interval = 1;
    let llm = FirstMatch::with_steps(vec![reply(
        "reflection",
        None,
        "I cannot reflect right now.",
    )]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    let reflections = thread.state().reflections;
    assert_eq!(reflections.len(), 2, "one per action");
    assert!(
        reflections[0]
            .evaluation
            .starts_with("reflection unavailable")
    );
}

#[tokio::test]
async fn a_fatal_llm_error_posts_a_failure_records_it_and_returns_an_error() {
    let thread = Thread::new();
    let mut steps = vec![replan::llm::scenario::Step {
        when: Some(replan::llm::scenario::When {
            purpose: Some("execute".into()),
            contains: None,
        }),
        fault: Some(replan::llm::scenario::Fault {
            kind: replan::llm::scenario::FaultKind::Status,
            status: Some(500),
            retry_after: None,
            times: 1,
            bytes: None,
            chunked: false,
        }),
        ..Default::default()
    }];
    steps.truncate(1);
    let llm = FirstMatch::with_steps(steps);
    let sink = Arc::new(MemorySink::new(vec![]));
    let input = start();
    let deps = thread.deps(llm, sink.clone(), "run-1", &input);
    let err = run_cycle(&deps, replay(&[]), &input).await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    let entries = sink.entries();
    assert!(matches!(
        entries.last().unwrap().body,
        EntryBody::RunFinished {
            status: RunStatus::Failed,
            ..
        }
    ));
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::Failure { message } if message.contains("500")))
    );
}

/// Says the budget is spent once `after` calls were made.
struct Budget {
    inner: Arc<FirstMatch>,
    after: usize,
}

#[async_trait]
impl Llm for Budget {
    fn describe(&self) -> String {
        "budget".into()
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.inner.requests().len() >= self.after {
            return Err(LlmError::BudgetExhausted(
                "token cap of 1000 reached".into(),
            ));
        }
        self.inner.chat(request).await
    }
}

#[tokio::test]
async fn an_exhausted_budget_stops_the_cycle_cleanly_and_keeps_the_usage() {
    let mut thread = Thread::new();
    let inner = FirstMatch::new("");
    let out = thread
        .run(
            Arc::new(Budget {
                inner: inner.clone(),
                after: 5,
            }),
            start(),
        )
        .await;
    assert_eq!(out.status, RunStatus::BudgetExhausted);
    assert_eq!(
        thread.state().usage.calls,
        5,
        "every call made is accounted for"
    );
    assert_eq!(thread.types().last(), Some(&"run_finished"));
}

const BLOCKED: &str = r#"{"success": false, "shouldContinue": false, "shouldReplan": false, "reason": "the file is locked"}"#;

#[tokio::test]
async fn a_blocked_task_is_replaced_by_its_best_alternative_when_the_score_is_high() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![
        reply("judge", Some("subtask `task_2` is"), BLOCKED),
        reply(
            "alternatives",
            None,
            r#"{"alternatives": [
              {"description": "Write the second note to a new file", "approach": "avoid the lock", "llm_confidence": 0.9, "required_tools": ["note"], "complexity": "low"},
              {"description": "Wait for the lock", "approach": "poll", "llm_confidence": 0.2, "required_tools": ["sleep"], "complexity": "high"}]}"#,
        ),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    let state = thread.state();
    assert_eq!(state.task_state("task_2"), TaskState::ReplacedByReplan);
    assert_eq!(state.task_state("task_2_alt1"), TaskState::Done);
    let plan = state.plan.unwrap();
    assert_eq!(
        plan.subtask("task_2_alt1").unwrap().description,
        "Write the second note to a new file"
    );
    assert!(thread.reporter.notices().iter().any(
        |n| matches!(n, Notice::Info { text } if text.contains("Best alternative (score 0.8"))
    ));
}

#[tokio::test]
async fn a_low_scoring_alternative_waits_for_approval() {
    let mut thread = Thread::new();
    let steps = || {
        vec![
            reply("judge", Some("subtask `task_2` is"), BLOCKED),
            reply(
                "alternatives",
                None,
                r#"{"alternatives": [{"description": "Teleport the note", "approach": "magic", "llm_confidence": 0.1, "required_tools": ["teleport"], "complexity": "high"}]}"#,
            ),
        ]
    };
    let out = thread.run(FirstMatch::with_steps(steps()), start()).await;
    assert_eq!(out.status, RunStatus::WaitingForApproval);
    assert_eq!(thread.state().task_state("task_2"), TaskState::Blocked);
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::ApprovalRequest { confidence, .. } if *confidence < 0.5))
    );

    let out = thread
        .run(
            FirstMatch::with_steps(steps()),
            replan::engine::EngineInput::Approve {
                author: "bob".into(),
                hash: None,
            },
        )
        .await;
    assert_eq!(out.status, RunStatus::Completed);
    let state = thread.state();
    assert_eq!(state.task_state("task_2"), TaskState::ReplacedByReplan);
    assert_eq!(state.task_state("task_2_alt1"), TaskState::Done);
}

/// A history that holds the entries `holds` picks until `signal` is notified (or 5 s), and says
/// whether it was.
struct HoldsUntil {
    inner: MemorySink,
    holds: fn(&EntryBody) -> bool,
    signal: Arc<tokio::sync::Notify>,
    held_until_signalled: std::sync::Mutex<Option<bool>>,
}

impl HoldsUntil {
    fn new(holds: fn(&EntryBody) -> bool, signal: Arc<tokio::sync::Notify>) -> Self {
        HoldsUntil {
            inner: MemorySink::new(vec![]),
            holds,
            signal,
            held_until_signalled: std::sync::Mutex::new(None),
        }
    }
}

#[async_trait]
impl replan::engine::journal::EntrySink for HoldsUntil {
    async fn append(
        &self,
        entries: &[replan::history::Entry],
    ) -> Result<(), replan::history::HistoryError> {
        if entries.iter().any(|e| (self.holds)(&e.body)) {
            let signalled =
                tokio::time::timeout(std::time::Duration::from_secs(5), self.signal.notified())
                    .await
                    .is_ok();
            *self.held_until_signalled.lock().unwrap() = Some(signalled);
        }
        self.inner.append(entries).await
    }
}

/// Sends the final checklist: says so, and keeps the state it was given.
struct SignalsFinish {
    checklist_sent: Arc<tokio::sync::Notify>,
    finished_with: std::sync::Mutex<Option<(usize, usize)>>,
}

#[async_trait]
impl replan::report::Reporter for SignalsFinish {
    async fn progress(&self, _state: &replan::history::SessionState) -> Option<String> {
        None
    }

    async fn notice(&self, _state: &replan::history::SessionState, _n: &Notice) -> Option<String> {
        None
    }

    async fn finish(&self, state: &replan::history::SessionState) {
        *self.finished_with.lock().unwrap() = Some((state.tasks_done(), state.tasks_total()));
        self.checklist_sent.notify_one();
    }
}

/// The run's last history commit and the final checklist go to different places on the forge:
/// neither waits for the other (each is a forge round trip at the end of every run).
#[tokio::test]
async fn the_last_history_entry_and_the_final_checklist_go_out_together() {
    let thread = Thread::new();
    let llm = FirstMatch::new("");
    let input = start();
    let sent = Arc::new(tokio::sync::Notify::new());
    let store = Arc::new(HoldsUntil::new(
        |b| matches!(b, EntryBody::RunFinished { .. }),
        sent.clone(),
    ));
    let reporter = Arc::new(SignalsFinish {
        checklist_sent: sent,
        finished_with: std::sync::Mutex::new(None),
    });
    let mut deps = thread.deps(llm, Arc::new(MemorySink::new(vec![])), "run-1", &input);
    deps.store = store.clone();
    deps.reporter = reporter.clone();

    let outcome = run_cycle(&deps, thread.state(), &input).await.unwrap();

    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(
        *store.held_until_signalled.lock().unwrap(),
        Some(true),
        "the run_finished entry waited for the final checklist, which waited for it"
    );
    assert_eq!(*reporter.finished_with.lock().unwrap(), Some((2, 2)));
    let entries = store.inner.entries();
    assert!(matches!(
        entries.last().map(|e| &e.body),
        Some(EntryBody::RunFinished { .. })
    ));
}

/// Shows the checklist once a plan exists: says so, and names the comment it posted.
struct SignalsThePlan {
    shown: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl replan::report::Reporter for SignalsThePlan {
    async fn progress(&self, state: &replan::history::SessionState) -> Option<String> {
        if state.plan.is_some() {
            self.shown.notify_one();
        }
        Some("checklist-1".into())
    }

    async fn notice(&self, _state: &replan::history::SessionState, _n: &Notice) -> Option<String> {
        None
    }

    async fn finish(&self, _state: &replan::history::SessionState) {}
}

/// The plan's history commit (a flush point: several forge requests) and the checklist that
/// shows the plan go out together: the first task does not wait for both in turn.
#[tokio::test]
async fn the_plan_commit_and_the_checklist_showing_it_go_out_together() {
    let thread = Thread::new();
    let input = start();
    let shown = Arc::new(tokio::sync::Notify::new());
    let store = Arc::new(HoldsUntil::new(
        |b| matches!(b, EntryBody::Plan { .. }),
        shown.clone(),
    ));
    let mut deps = thread.deps(
        FirstMatch::new(""),
        Arc::new(MemorySink::new(vec![])),
        "run-1",
        &input,
    );
    deps.store = store.clone();
    deps.reporter = Arc::new(SignalsThePlan { shown });

    let outcome = run_cycle(&deps, thread.state(), &input).await.unwrap();

    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(
        *store.held_until_signalled.lock().unwrap(),
        Some(true),
        "the plan's entries waited for the checklist, which waited for them"
    );
    // The checklist's comment is recorded once, after the plan, in sequence order.
    let entries = store.inner.entries();
    let position = |pred: &dyn Fn(&EntryBody) -> bool| entries.iter().position(|e| pred(&e.body));
    let plan = position(&|b| matches!(b, EntryBody::Plan { .. })).unwrap();
    let checklist = position(&|b| matches!(b, EntryBody::Checklist { .. })).unwrap();
    assert!(plan < checklist, "{entries:?}");
    let checklists = entries
        .iter()
        .filter(|e| matches!(e.body, EntryBody::Checklist { .. }))
        .count();
    assert_eq!(checklists, 1);
    assert!(entries.windows(2).all(|w| w[0].seq < w[1].seq));
}
