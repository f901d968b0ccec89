//! The context every step shares: the run's dependencies, the input that started it, and the
//! helpers the phases use to call the model. The phases import this file, never the driver
//! (`cycle.rs`), so the driver depends on the phases and not the reverse.

use super::EngineInput;
use super::batch::Batch;
pub use super::batch::Clock;
use super::prompts::{PromptError, Prompts};
use crate::config::Config;
use crate::history::HistoryError;
use crate::history::entry::{RunRequest, RunStatus};
use crate::llm::structured::{StructuredFailure, StructuredOptions, ask_json, schema_for};
use crate::llm::types::ResponseSchema;
use crate::llm::{ChatRequest, Llm, LlmError, Message};
use crate::report::{Notice, Reporter};
use crate::tools::ToolRegistry;
use crate::tools::workspace::Workspace;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use super::journal::EntrySink;

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
    /// The checkout the tools work in; with it, subtasks that can run at the same time do, each
    /// in its own worktree (`execution.max_parallel`). `None` runs them one after another.
    pub workspace: Option<Workspace>,
    /// How much of the cycle this process runs (`replan run --stage`).
    pub scope: super::Scope,
}

impl CycleDeps {
    /// The same run with other tools: those of a subtask's own checkout.
    pub fn with_tools(&self, tools: ToolRegistry) -> CycleDeps {
        CycleDeps {
            llm: self.llm.clone(),
            tools,
            reporter: self.reporter.clone(),
            store: self.store.clone(),
            config: self.config.clone(),
            clock: self.clock.clone(),
            run_id: self.run_id.clone(),
            prompts: self.prompts.clone(),
            request: self.request.clone(),
            workspace: None,
            scope: self.scope.clone(),
        }
    }
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
            call_seconds: Some(self.cfg().llm.timeout_seconds),
            tool_names: self.deps.tools.names().map(str::to_string).collect(),
            ..StructuredOptions::default()
        };
        let reply = ask_json::<T>(self.deps.llm.as_ref(), request, &opts).await?;
        batch.usage_of(&reply.model, reply.totals());
        Ok(reply.value)
    }
}

/// The schema without its `description`s and `title`s: the prompt's own reply example explains
/// the fields, and every call would otherwise pay for the doc comments again (issue 15).
pub fn compact_schema(mut schema: ResponseSchema) -> ResponseSchema {
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
