//! `replan run --stage plan|subtask|join`: one cycle split over CI jobs (issue 19). The plan job
//! plans and writes the ready subtasks as a matrix; each subtask job runs one of them in its own
//! checkout and pushes its changes to `replan/<thread>-tasks/<ID>`; the join job merges those
//! branches into the work branch in plan order and goes on: the next matrix, or completion. The
//! stages share nothing but the `origin` remote and the history (locally: one `--local-dir`).

mod branches;
mod matrix;
mod output_file;
mod pipeline;
mod published;

pub use pipeline::child_pipeline;
pub use published::write_next_wave;

use super::exit::CliError;
use crate::engine::Scope;
use crate::engine::step::runnable;
use crate::history::SessionState;
use crate::history::entry::RunStatus;
use crate::plan::TaskState;
use crate::trigger::{Request, ThreadRef};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `--stage`, as the command line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageName {
    Plan,
    Subtask,
    Join,
}

/// The stage flags of `replan run`, unchecked.
#[derive(Debug, Clone, Default)]
pub struct StageOptions {
    pub stage: Option<StageName>,
    pub subtask: Option<String>,
    pub matrix_out: Option<PathBuf>,
    pub pipeline_out: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    Plan,
    Subtask(String),
    Join,
}

/// A checked stage and where its matrix goes.
#[derive(Debug, Clone)]
pub struct StageRun {
    pub stage: Stage,
    pub matrix_out: Option<PathBuf>,
    pub pipeline_out: Option<PathBuf>,
}

impl StageOptions {
    /// The stage to run, or None for a whole run; flag combinations that cannot work are usage
    /// errors naming the flag and the fix.
    pub fn resolve(&self) -> Result<Option<StageRun>, CliError> {
        let outputs = self.matrix_out.is_some() || self.pipeline_out.is_some();
        let stage = match (self.stage, &self.subtask) {
            (None, None) if outputs => {
                return Err(CliError::usage(
                    "--matrix-out and --pipeline-out are written by `--stage plan` and `--stage join`; add `--stage plan` (or drop them for a whole run)",
                ));
            }
            (None, None) => return Ok(None),
            (Some(StageName::Subtask), Some(id)) => {
                matrix::check_id(id)?;
                Stage::Subtask(id.clone())
            }
            (Some(StageName::Subtask), None) => {
                return Err(CliError::usage(
                    "--stage subtask needs --subtask ID: one id of the matrix that `replan run --stage plan` wrote, e.g. `--stage subtask --subtask task_1`",
                ));
            }
            (_, Some(_)) => {
                return Err(CliError::usage(
                    "--subtask ID only goes with --stage subtask: run `replan run --stage subtask --subtask ID`, or drop --subtask",
                ));
            }
            (Some(StageName::Plan), None) => Stage::Plan,
            (Some(StageName::Join), None) => Stage::Join,
        };
        if outputs && matches!(stage, Stage::Subtask(_)) {
            return Err(CliError::usage(
                "--matrix-out and --pipeline-out are written by `--stage plan` and `--stage join`, not by `--stage subtask`; drop them from the subtask job",
            ));
        }
        Ok(Some(StageRun {
            stage,
            matrix_out: self.matrix_out.clone(),
            pipeline_out: self.pipeline_out.clone(),
        }))
    }
}

impl StageRun {
    /// How much of the cycle this stage runs: planning (and, for the join, whatever follows the
    /// merged subtasks) up to the next subtask, or the one subtask.
    pub fn scope(&self) -> Scope {
        match &self.stage {
            Stage::Plan | Stage::Join => Scope::UntilExecution,
            Stage::Subtask(id) => Scope::Subtask(id.clone()),
        }
    }

    /// The subtask and join jobs continue the plan whatever event started the workflow: a
    /// `/replan` comment is the plan job's to act on, not once more in every job.
    pub fn request(&self, request: &Request) -> Request {
        match self.stage {
            Stage::Plan => request.clone(),
            Stage::Subtask(_) | Stage::Join => Request::Start {
                title: String::new(),
                body: String::new(),
            },
        }
    }

    /// Whether this process saves the thread's work branch (the subtask jobs push their own
    /// branches instead: several of them saving one branch would overwrite each other).
    pub fn saves_work_branch(&self) -> bool {
        !matches!(self.stage, Stage::Subtask(_))
    }

    /// How many jobs share what is left of the thread's budget with this one: a subtask job
    /// runs beside the other ready subtasks of its wave and cannot see their spend.
    pub fn ledger_share(&self, state: &SessionState) -> u32 {
        match (&self.stage, &state.plan) {
            (Stage::Subtask(_), Some(plan)) => {
                u32::try_from(runnable(plan, state).len()).unwrap_or(u32::MAX)
            }
            _ => 1,
        }
    }

    /// The thread's history must allow this stage: a plan for subtask and join, a known and
    /// ready subtask, a join only after some subtask ran.
    pub fn check(&self, state: &SessionState, thread: ThreadRef) -> Result<(), CliError> {
        let name = match &self.stage {
            Stage::Plan => return Ok(()),
            Stage::Subtask(_) => "--stage subtask",
            Stage::Join => "--stage join",
        };
        let Some(plan) = &state.plan else {
            return Err(CliError::usage(format!(
                "{name} found no plan for {thread}: run `replan run --stage plan` first (with the same history: `--local-dir` locally)"
            )));
        };
        match &self.stage {
            Stage::Subtask(id) => {
                let Some(task) = plan.subtask(id) else {
                    let ids: Vec<&str> = plan.subtask_ids().collect();
                    return Err(CliError::usage(format!(
                        "--subtask {id} is not a subtask of the plan for {thread} (its subtasks: {}); pass one id of the matrix that `--stage plan` wrote",
                        ids.join(", ")
                    )));
                };
                if runnable(plan, state).contains(id) {
                    return Ok(());
                }
                let waiting: Vec<&str> = task
                    .dependencies
                    .iter()
                    .filter(|d| {
                        !matches!(state.task_state(d), TaskState::Done | TaskState::Cancelled)
                    })
                    .map(String::as_str)
                    .collect();
                let why = if waiting.is_empty() {
                    format!("it is {:?}", state.task_state(id)).to_lowercase()
                } else {
                    format!("it waits for {}", waiting.join(", "))
                };
                Err(CliError::usage(format!(
                    "--subtask {id} is not ready in the plan for {thread} ({why}); run only the ids of the latest matrix (`--stage plan` or `--stage join` writes it)"
                )))
            }
            _ => {
                let started = plan
                    .subtask_ids()
                    .any(|id| state.task_state(id) != TaskState::Ready)
                    || !state.judgements.is_empty();
                if started {
                    Ok(())
                } else {
                    Err(CliError::usage(format!(
                        "--stage join found no subtask of {thread} that ran: run `replan run --stage subtask --subtask ID` for each id of the matrix first"
                    )))
                }
            }
        }
    }

    /// After the cycle: the next matrix where the run fanned out (plan and join).
    pub fn emit_matrix(
        &self,
        env: &BTreeMap<String, String>,
        status: RunStatus,
        state: &SessionState,
    ) -> Result<Option<Vec<String>>, CliError> {
        if matches!(self.stage, Stage::Subtask(_)) {
            return Ok(None);
        }
        if status != RunStatus::FannedOut {
            // The GitLab template's trigger job starts whatever the stage wrote.
            if let Some(path) = &self.pipeline_out {
                write_file(path, &child_pipeline(&[], env)?, "--pipeline-out")?;
            }
            return Ok(None);
        }
        let ready = state
            .plan
            .as_ref()
            .map(|plan| runnable(plan, state))
            .unwrap_or_default();
        for id in &ready {
            matrix::check_id(id)?;
        }
        matrix::write(env, &ready, self.matrix_out.as_deref())?;
        if let Some(path) = &self.pipeline_out {
            write_file(path, &child_pipeline(&ready, env)?, "--pipeline-out")?;
        }
        Ok(Some(ready))
    }
}

use branches::{join_subtask_branches, prepare_checkout, push_subtask, settle_join_checkout};

mod conflict;

use output_file::write_file;

use crate::history::HistoryBackend;
use crate::history::store::LoadedThread;
use crate::tools::git::{CommitAuthor, Publisher};
use std::sync::Arc;

/// The job's checkout and how it pushes.
pub struct Checkout {
    pub workspace: PathBuf,
    pub thread: ThreadRef,
    pub publisher: Arc<dyn Publisher>,
    pub author: CommitAuthor,
}

/// What the stage does to the checkout (and, for the join, the history) before the cycle: start
/// from the work branch; the join merges the finished subtasks' branches and records conflicts.
/// Returns the thread as the cycle must see it.
pub async fn before_cycle(
    run: &StageRun,
    checkout: &Checkout,
    loaded: LoadedThread,
    backend: &dyn HistoryBackend,
    run_id: &str,
) -> Result<LoadedThread, CliError> {
    if run.stage == Stage::Plan {
        return Ok(loaded);
    }
    let (workspace, thread) = (&checkout.workspace, checkout.thread);
    let (publisher, author) = (checkout.publisher.clone(), checkout.author.clone());
    prepare_checkout(workspace.clone(), thread).await?;
    if run.stage != Stage::Join {
        return Ok(loaded);
    }
    let state = &loaded.state;
    let done: Vec<String> = state
        .plan
        .as_ref()
        .map(|plan| {
            crate::engine::step::execution_order(plan)
                .into_iter()
                .filter(|id| state.task_state(id) == TaskState::Done)
                .collect()
        })
        .unwrap_or_default();
    let joined = join_subtask_branches(workspace.clone(), thread, done, publisher, author).await?;
    tracing::info!(merged = ?joined.merged, conflicts = joined.conflicts.len(), "joined the subtask branches");
    if joined.conflicts.is_empty() {
        return Ok(loaded);
    }
    let mut entries = Vec::new();
    let mut state = loaded.state.clone();
    for (id, files) in &joined.conflicts {
        let batch = conflict::conflict_entries(&state, run_id, id, files, &joined.merged);
        for e in &batch {
            crate::history::apply(&mut state, e);
        }
        entries.extend(batch);
    }
    backend
        .append(&thread, &entries)
        .await
        .map_err(|e| CliError::failure(format!("could not record the merge conflicts: {e}")))?;
    crate::history::store::load(backend, &thread)
        .await
        .map_err(|e| CliError::failure(format!("could not read the history of {thread}: {e}")))
}

/// What the stage leaves behind after the cycle: a subtask job's branch, the join's checkout on
/// the work branch, the next matrix.
pub async fn after_cycle(
    run: &StageRun,
    env: &BTreeMap<String, String>,
    checkout: Checkout,
    outcome: &crate::engine::CycleOutcome,
) -> Result<(), CliError> {
    let Checkout {
        workspace,
        thread,
        publisher,
        author,
    } = checkout;
    match &run.stage {
        Stage::Subtask(id) => {
            let branch = push_subtask(
                workspace.to_path_buf(),
                thread,
                id.clone(),
                publisher,
                author,
            )
            .await?;
            tracing::info!("subtask {id}: its changes are on `{branch}` for the join");
        }
        Stage::Join => settle_join_checkout(workspace, thread).await?,
        Stage::Plan => {}
    }
    run.emit_matrix(env, outcome.status, &outcome.state)?;
    Ok(())
}
