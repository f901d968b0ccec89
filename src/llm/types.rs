//! Provider-neutral chat types: what the engine sends and what every provider returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// The result of a tool call, answering `tool_call_id`.
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    /// Why the arguments cannot be used, when the model sent something other than a JSON object
    /// (providers keep unparsable argument text as a JSON string so the engine can report it).
    pub fn arguments_error(&self) -> Option<String> {
        match &self.arguments {
            Value::Object(_) => None,
            Value::String(raw) => Some(match serde_json::from_str::<Value>(raw) {
                Err(e) => format!(
                    "the arguments of `{}` are not valid JSON ({e}): {raw}",
                    self.name
                ),
                Ok(_) => format!(
                    "the arguments of `{}` are not a JSON object: {raw}",
                    self.name
                ),
            }),
            other => Some(format!(
                "the arguments of `{}` are not a JSON object: {other}",
                self.name
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: None,
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: None,
        }
    }

    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: Some(tool_call_id.into()),
        }
    }
}

/// What the model sees of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
}

/// A JSON Schema the reply must follow (OpenAI `response_format`, Anthropic forced tool call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    pub name: String,
    pub schema: Value,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// Stable instructions; providers mark it cacheable.
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub response_schema: Option<ResponseSchema>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Calls with the same key share a prompt prefix (one thread's run): OpenAI routes them to
    /// the same prompt cache (`prompt_cache_key`).
    pub cache_key: Option<String>,
    /// What this call is for (`planning`, `replan_decision.execution`, `execute`, `judge`, ...).
    /// Logged and used by the scripted provider to match scenario steps; never sent to a model.
    pub purpose: String,
    /// The reply must call one of `tools` (OpenAI `tool_choice: "required"`, Anthropic `any`):
    /// a small model otherwise answers a subtask's first turn in prose and never acts; servers
    /// such as llama-server turn it into a grammar the model has to follow.
    pub require_tool_call: bool,
    /// The start of the reply, written for the model (Anthropic's prefilled assistant turn): a
    /// model that ignores "reply with only JSON" still continues the JSON it was handed. The
    /// reply's text includes it. The chat-completions format has no prefill and ignores it.
    pub prefill: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl TokenUsage {
    /// Adds `other`, saturating rather than wrapping.
    pub fn add(&mut self, other: &TokenUsage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    pub finish_reason: FinishReason,
    pub model: String,
    /// Cost of this call in USD from the configured price table (0 when unknown).
    pub cost_usd: f64,
    /// The HTTP attempts this reply took (set by the budget wrapper; retries included).
    pub attempts: super::meter::Attempts,
    /// `llm.prices` has no price for the model: `cost_usd` is unknown, not $0 (set by the
    /// budget wrapper).
    pub unpriced: bool,
}

impl ChatResponse {
    /// The reply as the assistant turn of the conversation, its tool calls included, so that the
    /// tool results that follow answer them.
    pub fn as_message(&self) -> Message {
        Message {
            tool_calls: self.tool_calls.clone(),
            ..Message::assistant(self.text.clone().unwrap_or_default())
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM provider is not configured: {0}")]
    NotConfigured(String),
    #[error("LLM request timed out after {seconds}s")]
    Timeout { seconds: u64 },
    #[error("LLM provider returned HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("LLM connection failed: {0}")]
    Connection(String),
    #[error("LLM reply could not be read: {0}")]
    BadReply(String),
    #[error("the cycle's LLM budget is exhausted: {0}")]
    BudgetExhausted(String),
    #[error("scripted LLM scenario: {0}")]
    Scenario(String),
}

impl LlmError {
    /// Worth retrying with back-off (429, 5xx, connection errors, time-outs).
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout { .. } | LlmError::Connection(_) => true,
            _ => false,
        }
    }
}
