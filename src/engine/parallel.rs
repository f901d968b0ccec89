//! Subtasks that can run at the same time do (`execution.max_parallel`): each attempt runs in
//! its own worktree with its own tools and its own batch; they share the one metered LLM (so the
//! budget holds across them), the reporter and the journal.
//!
//! Results are taken in the order the subtasks finish, and a subtask starts the moment its own
//! dependencies are appended: one slow subtask never holds back an unrelated chain (issue 40).
//! Each result is merged into the workspace and its entries appended, renumbered after everything
//! before them; the others keep running while that happens. A merge conflict is a failed attempt
//! of the subtask that finished later (`phases::judge::merge_failed`), which runs again on the
//! merged tree. A result that replans, pauses or ends the run stops the others: what they did is
//! dropped except the model usage it cost.

use super::append::{commit, keep_usage, show_progress};
use super::batch::Batch;
use super::cx::{Cx, CycleError, StepEffects};
use super::phases;
use super::step::{Step, steps_now};
use super::worktree::{Checkouts, Worktree};
use crate::history::SessionState;
use crate::history::entry::RunStatus;
use crate::llm::LlmError;
use crate::plan::TaskState;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::VecDeque;

/// One attempt that ran in its own checkout.
struct Attempt {
    task_id: String,
    batch: Batch,
    result: Result<StepEffects, CycleError>,
    worktree: Worktree,
}

/// Run the subtasks that can run now, and those that become runnable while they do, until none
/// is left or one ends the wave; `Some(status)` ends the run.
pub async fn run_wave(
    cx: &Cx<'_>,
    checkouts: &Checkouts,
    state: &mut SessionState,
) -> Result<Option<RunStatus>, CycleError> {
    let mut running = FuturesUnordered::new();
    // Started and not yet appended, in start order.
    let mut busy: Vec<String> = Vec::new();
    // Finished while another was being appended, in the order they finished.
    let mut finished: VecDeque<Attempt> = VecDeque::new();
    loop {
        // A finished subtask waiting to be appended holds no slot.
        let room = (cx.cfg().execution.max_parallel as usize).saturating_sub(running.len());
        let starting: Vec<String> = steps_now(state, cx.input, cx.cfg(), &busy)
            .into_iter()
            .take(room)
            .map_while(|step| match step {
                Step::Execute(task_id) => Some(task_id),
                _ => None,
            })
            .collect();
        let started = !starting.is_empty();
        if started {
            // The snapshot and the worktrees are git processes: on the blocking pool, while the
            // running subtasks' model calls go on.
            let opened = beside(
                open_worktrees(checkouts.clone(), starting),
                &mut running,
                &mut finished,
            )
            .await?;
            for (task_id, worktree) in opened {
                busy.push(task_id.clone());
                running.push(attempt(cx, state.clone(), task_id, worktree));
            }
        }
        if started || (finished.is_empty() && !busy.is_empty()) {
            let shown = running_shown(state, &busy);
            beside(
                show_progress(cx, state, Some(&shown)),
                &mut running,
                &mut finished,
            )
            .await?;
        }
        let next = match finished.pop_front() {
            Some(next) => next,
            None => match running.next().await {
                Some(next) => next,
                None => return Ok(None),
            },
        };
        busy.retain(|id| *id != next.task_id);
        let version = state.plan_version;
        let end = beside(
            append_attempt(cx, checkouts, state, next),
            &mut running,
            &mut finished,
        )
        .await?;
        let disrupted = end.is_some()
            || state.plan_version != version
            || state.planning.is_some()
            || state.pending.is_some();
        if disrupted {
            // The plan or the run changed under the others: keep only what they cost.
            drop(running);
            for rest in finished {
                keep_usage(cx, state, rest.batch).await?;
            }
            return Ok(end);
        }
    }
}

/// Await `work` while the running attempts go on: those that finish meanwhile wait in
/// `finished` (a history append or a checklist update is forge requests; nobody's model call
/// should wait for them).
async fn beside<T>(
    work: impl Future<Output = T>,
    running: &mut FuturesUnordered<impl Future<Output = Attempt>>,
    finished: &mut VecDeque<Attempt>,
) -> T {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            Some(done) = running.next(), if !running.is_empty() => finished.push_back(done),
        }
    }
}

/// A snapshot of the workspace now and a worktree of it for each of `task_ids`.
async fn open_worktrees(
    checkouts: Checkouts,
    task_ids: Vec<String>,
) -> Result<Vec<(String, Worktree)>, CycleError> {
    off_thread(move || {
        let base = checkouts
            .base()
            .map_err(|e| CycleError::Fatal(format!("could not snapshot the workspace: {e}")))?;
        task_ids
            .into_iter()
            .map(|task_id| {
                let worktree = checkouts.open(&task_id, &base).map_err(|e| {
                    CycleError::Fatal(format!(
                        "could not make a worktree for subtask {task_id}: {e}"
                    ))
                })?;
                Ok((task_id, worktree))
            })
            .collect()
    })
    .await?
}

/// `work` on tokio's blocking pool: the runtime has one thread, and a git process run on it
/// would hold up every other subtask's model call.
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CycleError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| CycleError::Fatal(format!("a git step of parallel subtasks failed: {e}")))
}

/// One attempt at `task_id` in its checkout, from the state as it was when it started.
async fn attempt(cx: &Cx<'_>, state: SessionState, task_id: String, worktree: Worktree) -> Attempt {
    let deps = cx
        .deps
        .with_tools(cx.deps.tools.rooted_at(&worktree.workspace));
    let mut batch = Batch::new(&state, &deps.run_id, deps.clock.clone());
    let own = Cx {
        deps: &deps,
        input: cx.input,
    };
    let step = Step::Execute(task_id.clone());
    let result = phases::perform(&own, &mut batch, &step).await;
    Attempt {
        task_id,
        batch,
        result,
        worktree,
    }
}

/// Merge an attempt's changes and append its entries after everything appended before them.
async fn append_attempt(
    cx: &Cx<'_>,
    checkouts: &Checkouts,
    state: &mut SessionState,
    done: Attempt,
) -> Result<Option<RunStatus>, CycleError> {
    let Attempt {
        task_id,
        batch,
        result,
        worktree,
    } = done;
    let mut effects = match result {
        Ok(effects) => effects,
        Err(e) => {
            if matches!(e, CycleError::Llm(LlmError::BudgetExhausted(_))) {
                keep_usage(cx, state, batch).await?;
            }
            return Err(e);
        }
    };
    let mut ordered = Batch::new(state, &cx.deps.run_id, cx.deps.clock.clone());
    for entry in batch.entries {
        ordered.adopt(entry);
    }
    let merging = checkouts.clone();
    let id = task_id.clone();
    // git processes, on the blocking pool (see `open_worktrees`); the worktree is removed there
    // too.
    let merged = off_thread(move || {
        let merged = merging.merge(&worktree, &id);
        drop(worktree);
        merged
    })
    .await?;
    if let Err(conflict) = merged {
        tracing::warn!(%task_id, %conflict, "a parallel subtask's changes could not be merged");
        phases::judge::merge_failed(&mut ordered, &task_id, &conflict, &mut effects);
    }
    commit(cx, state, ordered, effects.notices).await?;
    Ok(effects.end)
}

/// The state as the checklist shows it while `busy` subtasks run.
fn running_shown(state: &SessionState, busy: &[String]) -> SessionState {
    let mut shown = state.clone();
    for id in busy {
        shown.tasks.entry(id.clone()).or_default().state = TaskState::Running;
    }
    shown
}
