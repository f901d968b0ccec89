//! The driver: asks `next_step`, performs it (LLM call, tool calls, notices), appends the step's
//! entries in one piece, and loops until the cycle finishes or waits for a person.

use super::batch::Batch;
use super::commands;
use super::journal::EntrySink;
use super::prompts::{PromptError, Prompts};
use super::step::{Step, next_step};
use super::{EngineInput, phases};
use crate::config::Config;
use crate::history::entry::{EntryBody, RunRequest, RunStatus, UsageTotals};
use crate::history::{HistoryError, SessionState};
use crate::llm::structured::{StructuredFailure, StructuredOptions, ask_json, schema_for};
use crate::llm::types::ResponseSchema;
use crate::llm::{ChatRequest, Llm, LlmError, Message};
use crate::report::{Notice, Reporter};
use crate::tools::ToolRegistry;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// A cycle that takes more steps than this is going round in circles (every replan path is
/// bounded by limits well below it); stop it as a fatal error rather than burn the budget.
const MAX_STEPS_PER_RUN: usize = 500;

pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct CycleDeps {
    pub llm: Arc<dyn Llm>,
    pub tools: ToolRegistry,
    pub reporter: Arc<dyn Reporter>,
    pub store: Arc<dyn EntrySink>,
    pub config: Config,
    pub clock: Clock,
    /// The seed's task uuid for this run (`<ci run id>-<attempt>`).
    pub run_id: String,
    pub prompts: Prompts,
    /// Who asked and what, as recorded in `run_started` (text already sanitized by the trigger).
    pub request: RunRequest,
}

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

#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    #[error("could not write the history: {0}")]
    History(#[from] HistoryError),
    #[error("LLM call failed: {0}")]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Prompt(#[from] PromptError),
    #[error("{0}")]
    Fatal(String),
}

/// What a performed step wants besides its entries.
#[derive(Debug, Default)]
pub struct StepEffects {
    pub notices: Vec<Notice>,
    /// End the run now with this status (the step already recorded why).
    pub end: Option<RunStatus>,
}

impl StepEffects {
    pub fn notice(mut self, n: Notice) -> Self {
        self.notices.push(n);
        self
    }
}

/// What every step needs: the dependencies and helpers for LLM calls.
pub struct Cx<'a> {
    pub deps: &'a CycleDeps,
    pub input: &'a EngineInput,
}

impl Cx<'_> {
    pub fn cfg(&self) -> &Config {
        &self.deps.config
    }

    /// Fills a template; `{example_tool}` is always a real tool of this run, because a small
    /// model copies example values literally.
    pub fn render(&self, name: &str, values: &[(&str, &str)]) -> Result<String, CycleError> {
        let example = super::context::example_tool(&self.deps.tools);
        let mut all = values.to_vec();
        all.push(("example_tool", &example));
        Ok(self.deps.prompts.render(name, &all)?)
    }

    pub fn request(&self, purpose: &str, prompt: String) -> Result<ChatRequest, CycleError> {
        Ok(ChatRequest {
            system: super::context::system_prompt(&self.deps.prompts, &self.deps.config)?,
            messages: vec![Message::user(prompt)],
            max_tokens: Some(self.cfg().llm.max_output_tokens.for_purpose(purpose)),
            purpose: purpose.to_string(),
            cache_key: Some(format!("replan-{}", self.deps.run_id)),
            ..ChatRequest::default()
        })
    }

    /// A structured call: usage is recorded; an unusable reply (after one re-ask) comes back as
    /// `Err(StructuredFailure)` for the caller's fallback.
    pub async fn ask<T: DeserializeOwned + JsonSchema>(
        &self,
        batch: &mut Batch,
        purpose: &str,
        prompt: String,
    ) -> Result<Result<T, StructuredFailure>, CycleError> {
        let mut request = self.request(purpose, prompt)?;
        request.response_schema = Some(compact_schema(schema_for::<T>()));
        let opts = StructuredOptions {
            output_ceiling: self.cfg().llm.max_output_tokens.ceiling,
            tool_names: self.deps.tools.names().map(str::to_string).collect(),
            ..StructuredOptions::default()
        };
        let reply = ask_json::<T>(self.deps.llm.as_ref(), request, &opts).await?;
        batch.usage(reply.totals());
        Ok(reply.value)
    }
}

/// The schema without its `description`s and `title`s: the prompt's own reply example explains
/// the fields, and every call would otherwise pay for the doc comments again (issue 15).
fn compact_schema(mut schema: ResponseSchema) -> ResponseSchema {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                // Only keyword positions: a property may itself be named `description`.
                for key in ["description", "title"] {
                    if map.get(key).is_some_and(serde_json::Value::is_string) {
                        map.remove(key);
                    }
                }
                for (key, v) in map.iter_mut() {
                    if key != "properties" {
                        strip(v);
                    } else if let serde_json::Value::Object(props) = v {
                        props.values_mut().for_each(strip);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut schema.schema);
    schema
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
            if !matches!(e, CycleError::History(_)) {
                let _ = finish(deps, &mut state, RunStatus::Failed, usage_at_start).await;
            }
            deps.reporter.finish(&state).await;
            return Err(e);
        }
    };
    finish(deps, &mut state, status, usage_at_start).await?;
    deps.reporter.finish(&state).await;
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
    for _ in 0..MAX_STEPS_PER_RUN {
        let step = next_step(state, cx.input, &deps.config);
        tracing::debug!(?step, "next step");
        if let Step::Finish(status) = step {
            return Ok(status);
        }
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

/// Append a step's entries, then tell people about it.
async fn commit(
    cx: &Cx<'_>,
    state: &mut SessionState,
    batch: Batch,
    notices: Vec<Notice>,
) -> Result<(), CycleError> {
    let deps = cx.deps;
    let before = progress_key(state);
    deps.store.append(&batch.entries).await?;
    *state = batch.state;
    for n in &notices {
        deps.reporter.notice(state, n).await;
    }
    if progress_key(state) != before
        && let Some(id) = deps.reporter.progress(state).await
        && state.checklist_comment_id.as_deref() != Some(id.as_str())
    {
        let mut b = Batch::new(state, &deps.run_id, deps.clock.clone());
        b.push(EntryBody::Checklist { comment_id: id });
        deps.store.append(&b.entries).await?;
        *state = b.state;
    }
    Ok(())
}

/// What the checklist shows; a change means the checklist must be re-rendered.
fn progress_key(state: &SessionState) -> String {
    let tasks: Vec<String> = state
        .tasks
        .iter()
        .map(|(k, v)| format!("{k}={:?}", v.state))
        .collect();
    format!(
        "{}|{}|{}|{}",
        state.plan_version,
        tasks.join(","),
        state
            .plan
            .as_ref()
            .map(|p| p.task_decomposition.subtasks.len())
            .unwrap_or(0),
        state.completion.is_some()
    )
}

/// A step cut short by the budget: its LLM usage is still recorded, nothing else.
async fn keep_usage(cx: &Cx<'_>, state: &mut SessionState, batch: Batch) -> Result<(), CycleError> {
    let mut kept = Batch::new(state, &cx.deps.run_id, cx.deps.clock.clone());
    for e in batch.entries {
        if let EntryBody::Usage { .. } = e.body {
            kept.push(e.body);
        }
    }
    cx.deps.store.append(&kept.entries).await?;
    *state = kept.state;
    Ok(())
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
    deps.store.append(&b.entries).await?;
    *state = b.state;
    Ok(())
}
