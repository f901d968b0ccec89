//! `llm` — which provider and model, and how to call it.
//!
//! API keys never live in a config file: `api_key_env` names the environment variable holding it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Azure OpenAI `api-version`.
    pub api_version: Option<String>,
    /// Azure OpenAI deployment name.
    pub deployment: Option<String>,
    /// Extra HTTP headers sent with every request (no secrets: use `api_key_env`).
    pub headers: BTreeMap<String, String>,
    pub timeout_seconds: u64,
    pub max_retries: u32,
    /// How structured replies are asked for: `auto` (probe once per run: `json_schema`, or a
    /// forced tool call in the Anthropic format; `prompt` for the rest of the run when the server
    /// refuses `response_format` or answers a forced call in text), `tool` (a forced tool call),
    /// `json_schema` / `json_object` (OpenAI `response_format`), `prompt` (the schema in the
    /// prompt only). `true` / `false` are read as `auto` / `prompt`.
    pub structured_output: StructuredOutput,
    /// Output token limit of each kind of call, sent with every request.
    pub max_output_tokens: MaxOutputTokens,
    /// Largest reply body read from the provider; a larger one is refused as too large.
    pub max_reply_bytes: u64,
    /// Scenario file replayed by the `scripted` provider.
    pub scenario: Option<PathBuf>,
    pub budget: BudgetConfig,
    /// Price per million tokens, keyed by model name, for cost accounting and `budget.max_cost_usd`.
    pub prices: BTreeMap<String, Price>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: ProviderKind::default(),
            model: None,
            base_url: None,
            api_key_env: None,
            api_version: None,
            deployment: None,
            headers: BTreeMap::new(),
            timeout_seconds: 120,
            max_retries: 4,
            structured_output: StructuredOutput::Auto,
            max_output_tokens: MaxOutputTokens::default(),
            max_reply_bytes: 10 * 1024 * 1024,
            scenario: None,
            budget: BudgetConfig::default(),
            prices: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Pick from the credentials present in the environment.
    #[default]
    Auto,
    Openai,
    Azure,
    GithubModels,
    Anthropic,
    Ollama,
    Openrouter,
    Vllm,
    Llamacpp,
    /// Replays `llm.scenario`; for tests and demos.
    Scripted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    #[default]
    Auto,
    Tool,
    JsonSchema,
    JsonObject,
    Prompt,
}

impl<'de> Deserialize<'de> for StructuredOutput {
    /// A name, or the boolean this key used to be (`true` = `auto`, `false` = `prompt`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Flag(bool),
            Name(String),
        }
        match Either::deserialize(d)? {
            Either::Flag(true) => Ok(StructuredOutput::Auto),
            Either::Flag(false) => Ok(StructuredOutput::Prompt),
            Either::Name(name) => match name.trim() {
                "auto" | "true" => Ok(StructuredOutput::Auto),
                "tool" => Ok(StructuredOutput::Tool),
                "json_schema" => Ok(StructuredOutput::JsonSchema),
                "json_object" => Ok(StructuredOutput::JsonObject),
                "prompt" | "false" => Ok(StructuredOutput::Prompt),
                other => Err(serde::de::Error::custom(format!(
                    "`{other}` is not a structured output mode; use auto, tool, json_schema, json_object or prompt"
                ))),
            },
        }
    }
}

/// Output tokens per kind of call. A reply cut off at its limit is re-asked once, shorter, with
/// the limit doubled up to `ceiling` and to what the cut-off call showed the server writes within
/// `timeout_seconds`; with no room above the limit it counts as an invalid reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MaxOutputTokens {
    pub planning: u32,
    pub decision: u32,
    pub execute: u32,
    pub judge: u32,
    pub reflection: u32,
    pub completion: u32,
    pub ceiling: u32,
}

impl Default for MaxOutputTokens {
    fn default() -> Self {
        MaxOutputTokens {
            planning: 2048,
            decision: 512,
            execute: 1024,
            judge: 512,
            reflection: 512,
            completion: 1024,
            ceiling: 4096,
        }
    }
}

impl MaxOutputTokens {
    /// The limit for a call's purpose (`planning`, `replan_decision.execution`, `judge.t1`, ...).
    pub fn for_purpose(&self, purpose: &str) -> u32 {
        let kind = purpose.split('.').next().unwrap_or_default();
        let limit = match kind {
            "replan_decision" | "decision" => self.decision,
            "execute" | "legacy" => self.execute,
            "judge" | "quality_judge" => self.judge,
            "reflection" => self.reflection,
            "completion" => self.completion,
            // planning, task splits, alternatives and anything new plan.
            _ => self.planning,
        };
        limit.max(1)
    }
}

/// Limits for one run; `None` = unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_seconds: Option<u64>,
    /// Cap on the sum over every run of one thread (`/budget $N` sets it per thread).
    pub per_thread_usd: Option<f64>,
    /// Cap on the tokens of every run of one thread (`/budget N tokens` sets it per thread).
    pub per_thread_tokens: Option<u64>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}
