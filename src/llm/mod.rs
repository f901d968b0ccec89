//! LLM providers behind one trait.

pub(crate) mod anthropic;
pub(crate) mod anthropic_stream;
pub(crate) mod budget;
pub(crate) mod detect;
pub mod http;
pub(crate) mod meter;
pub(crate) mod openai;
pub mod scenario;
pub(crate) mod scripted;
pub(crate) mod sse;
pub(crate) mod structured;
pub(crate) mod text_tool_call;
pub(crate) mod types;

pub use budget::{Budgeted, usage_totals};
pub use detect::{create_budgeted, create_provider, detect_kind};
pub use scripted::ScriptedLlm;
pub use structured::{
    Extraction, StructuredFailure, StructuredOptions, StructuredReply, ask_json, extract_json,
    locate_json, parse_reply, schema_for,
};
pub use text_tool_call::{requested_tool_call, tool_call_in_text, tool_call_schema};
pub use types::*;

use async_trait::async_trait;

#[async_trait]
pub trait Llm: Send + Sync {
    /// Provider and model, for logs and the checklist footer (never a key).
    fn describe(&self) -> String;

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Usage of every HTTP attempt so far, for wrappers that meter them (the budget); the run
    /// records what its per-step entries missed (calls that ended in an error).
    fn metered_usage(&self) -> Option<crate::history::entry::UsageTotals> {
        None
    }

    /// How structured replies are asked for now: the configured mode, or what `auto` settled on
    /// after probing the server. Recorded in the run's history; `None` for providers without
    /// a choice (scripted).
    fn structured_output(&self) -> Option<crate::config::StructuredOutput> {
        None
    }
}
