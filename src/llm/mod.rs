//! LLM providers behind one trait.

pub mod scenario;
pub mod scripted;
pub mod structured;
pub mod types;

pub use scripted::ScriptedLlm;
pub use structured::{
    StructuredFailure, StructuredOptions, StructuredReply, ask_json, extract_json, schema_for,
};
pub use types::*;

use async_trait::async_trait;

#[async_trait]
pub trait Llm: Send + Sync {
    /// Provider and model, for logs and the checklist footer (never a key).
    fn describe(&self) -> String;

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}
