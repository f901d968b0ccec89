//! The driver: asks `next_step`, performs it (LLM call, tool calls, notices), appends the step's
//! entries in one piece, and loops until the cycle finishes or waits for a person.

use super::append::{commit, keep_usage};
use super::batch::Batch;
use super::commands;
pub use super::cx::{Clock, Cx, CycleDeps, CycleError, StepEffects};
use super::step::{Step, next_step, steps_now};
use super::worktree::Checkouts;
use super::{EngineInput, parallel, phases};
use crate::history::SessionState;
use crate::history::entry::{EntryBody, RunStatus, UsageTotals};
use crate::llm::LlmError;
use crate::report::Notice;

/// A cycle that takes more steps than this is going round in circles (every replan path is
/// bounded by limits well below it); stop it as a fatal error rather than burn the budget.
const MAX_STEPS_PER_RUN: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub struct CycleOutcome {
    pub status: RunStatus,
    pub plan_version: u32,
    pub tasks_done: usize,
    pub tasks_total: usize,
    pub pull_request: Option<String>,
    /// The state after the run, as replayed from what was appended.
    pub state: SessionState,
}

/// Run one cycle on a thread whose history replays to `state`.
pub async fn run_cycle(
    deps: &CycleDeps,
    mut state: SessionState,
    input: &EngineInput,
) -> Result<CycleOutcome, CycleError> {
    let usage_at_start = state.usage;
    let resuming = state
        .runs
        .last()
        .is_some_and(|r| r.run_id == deps.run_id && r.status.is_none());
    let cx = Cx { deps, input };

    let result = drive(&cx, &mut state, resuming).await;
    let status = match result {
        Ok(status) => status,
        Err(CycleError::Llm(LlmError::BudgetExhausted(why))) => {
            tracing::warn!(%why, "LLM budget exhausted; stopping the cycle");
            RunStatus::BudgetExhausted
        }
        Err(e) => {
            // Error level 4: tell the thread, record the failure if the history still works.
            let message = e.to_string();
            deps.reporter
                .notice(
                    &state,
                    &Notice::Failure {
                        message: message.clone(),
                    },
                )
                .await;
            if matches!(e, CycleError::History(_)) {
                deps.reporter.finish(&state).await;
            } else {
                let _ = finish(deps, &mut state, RunStatus::Failed, usage_at_start).await;
            }
            return Err(e);
        }
    };
    finish(deps, &mut state, status, usage_at_start).await?;
    Ok(CycleOutcome {
        status,
        plan_version: state.plan_version,
        tasks_done: state.tasks_done(),
        tasks_total: state.tasks_total(),
        pull_request: None,
        state,
    })
}

async fn drive(
    cx: &Cx<'_>,
    state: &mut SessionState,
    resuming: bool,
) -> Result<RunStatus, CycleError> {
    let deps = cx.deps;
    if !resuming {
        let mut batch = Batch::new(state, &deps.run_id, deps.clock.clone());
        batch.push(EntryBody::RunStarted {
            request: deps.request.clone(),
        });
        let effects = commands::handle(cx, &mut batch).await?;
        commit(cx, state, batch, effects.notices).await?;
        if let Some(end) = effects.end {
            return Ok(end);
        }
    }
    if let Some(end) = thread_budget_spent(cx, state).await {
        return Ok(end);
    }
    // Made when subtasks first can run side by side (a chain never needs them: two `git`
    // processes saved per run).
    let checkouts = std::sync::OnceLock::new();
    let checkouts = || {
        checkouts
            .get_or_init(
                || match (deps.config.execution.max_parallel, &deps.workspace) {
                    (2.., Some(workspace)) => Checkouts::new(workspace),
                    _ => None,
                },
            )
            .as_ref()
    };
    for _ in 0..MAX_STEPS_PER_RUN {
        let steps = match deps.scope {
            // A stage job runs one part of the cycle, one step at a time.
            super::Scope::Whole => steps_now(state, cx.input, &deps.config, &[]),
            _ => vec![
                deps.scope
                    .limit(next_step(state, cx.input, &deps.config), state),
            ],
        };
        tracing::debug!(?steps, "next steps");
        let step = match steps.as_slice() {
            [Step::Finish(status)] => return Ok(*status),
            [step] => step.clone(),
            [] => return Err(CycleError::Fatal("no step to perform".into())),
            [first, ..] => match checkouts() {
                Some(checkouts) => match parallel::run_wave(cx, checkouts, state).await? {
                    Some(end) => return Ok(end),
                    None => continue,
                },
                // Without a git checkout to isolate them, subtasks run one after another.
                None => first.clone(),
            },
        };
        let mut batch = Batch::new(state, &deps.run_id, deps.clock.clone());
        let effects = match phases::perform(cx, &mut batch, &step).await {
            Ok(effects) => effects,
            Err(CycleError::Llm(LlmError::BudgetExhausted(why))) => {
                keep_usage(cx, state, batch).await?;
                return Err(CycleError::Llm(LlmError::BudgetExhausted(why)));
            }
            Err(e) => return Err(e),
        };
        if batch.is_empty() && effects.end.is_none() {
            return Err(CycleError::Fatal(format!(
                "step {step:?} made no progress; refusing to loop"
            )));
        }
        commit(cx, state, batch, effects.notices).await?;
        if let Some(end) = effects.end {
            return Ok(end);
        }
    }
    Err(CycleError::Fatal(format!(
        "the cycle took more than {MAX_STEPS_PER_RUN} steps; stopping"
    )))
}

/// A run of a thread whose ledger has reached its cap does not call the model: it says so on
/// the thread and ends `budget_exhausted` (the checklist shows the blocked line).
async fn thread_budget_spent(cx: &Cx<'_>, state: &SessionState) -> Option<RunStatus> {
    let cap = crate::history::ledger::ThreadCap::of(state, &cx.deps.config.llm.budget);
    let reached = cap.reached(&state.usage)?;
    tracing::warn!(spent = %reached.words(), "the thread's budget is spent; not calling the model");
    let text = format!(
        "This thread's budget is spent ({}), so this run did not call the model. Comment {} with a higher cap to continue.",
        reached.words(),
        reached.command()
    );
    cx.deps.reporter.notice(state, &Notice::Info { text }).await;
    Some(RunStatus::BudgetExhausted)
}

/// Attempts the metered LLM made that no step recorded (calls that ended in an error, a step
/// cut short): all of them wasted, and all of them counted.
fn unrecorded_usage(deps: &CycleDeps, recorded: &UsageTotals) -> Option<UsageTotals> {
    let metered = deps.llm.metered_usage()?;
    let mut missing = metered.since(recorded);
    missing.wasted_calls = missing.calls;
    missing.wasted_ms = missing.wall_ms;
    (missing.calls > 0).then_some(missing)
}

/// Record the end of the run and show the final checklist at the same time: they go to different
/// places on the forge, and the checklist renders the state the entry leaves, so neither waits
/// for the other (a history commit is three forge requests).
async fn finish(
    deps: &CycleDeps,
    state: &mut SessionState,
    status: RunStatus,
    usage_at_start: UsageTotals,
) -> Result<(), CycleError> {
    let mut usage = state.usage.since(&usage_at_start);
    let unrecorded = unrecorded_usage(deps, &usage);
    let mut b = Batch::new(state, &deps.run_id, deps.clock.clone());
    if let Some(unrecorded) = unrecorded {
        usage.add(&unrecorded);
        b.usage(unrecorded);
    }
    b.push(EntryBody::RunFinished {
        status,
        usage,
        pull_request: None,
        structured_output: deps
            .llm
            .structured_output()
            .and_then(|mode| serde_json::to_value(mode).ok())
            .and_then(|mode| mode.as_str().map(str::to_string)),
    });
    let (appended, ()) = tokio::join!(
        deps.store.append(&b.entries),
        deps.reporter.finish(&b.state)
    );
    appended?;
    *state = b.state;
    Ok(())
}
