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
    /// Ask the provider for JSON-schema constrained output where it supports it.
    pub structured_output: bool,
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
            structured_output: true,
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

/// Limits for one run; `None` = unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_seconds: Option<u64>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}
