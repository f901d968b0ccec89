//! Configuration (SPEC F3): typed settings with the seeds' defaults.
//!
//! Sources, lowest precedence first: built-in defaults, the repository file (`.github/replan.yml`
//! or `.replan.yml`), the remote per-user endpoint (`user_config_api`, seed 001 §9.3), environment
//! variables, then CLI flags / action inputs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod decode;
mod env;
mod error;
mod execution;
mod explain;
mod file;
mod forge;
mod forge_api;
mod history;
mod instructions;
mod layers;
mod llm;
mod load;
mod overrides;
mod planning;
mod publish;
mod reference;
mod refinement;
mod remote;
mod replanning;
mod retired;
mod secrets;
mod source;
mod task_replanning;
mod tools;
mod triggers;
mod validate;
mod verify;

pub use env::{GENERIC_PREFIX, SEED_ENV_VARS};
pub use error::ConfigError;
pub use execution::ExecutionConfig;
pub use explain::{explain_json, explain_text, leaves};
pub use file::REPO_FILE_CANDIDATES;
pub use forge::{ForgeTriggerConfig, GITHUB_PERMISSIONS, GITLAB_ACCESS_LEVELS};
pub use forge_api::ForgeApiConfig;
pub use history::HistoryConfig;
pub use instructions::{DEFAULT_INSTRUCTION_FILES, InstructionsConfig};
pub use llm::{BudgetConfig, LlmConfig, MaxOutputTokens, Price, ProviderKind, StructuredOutput};
pub use load::{LoadOptions, LoadedConfig, load, load_local};
pub use overrides::{ACTION_INPUTS, Override};
pub use planning::{
    ApprovalMode, DecisionMode, DecompositionLevel, PlanningConfig, PlanningHistoryConfig,
    PlanningMode, ReflectionConfig, RevisionConfig, Strategy,
};
pub use publish::PublishConfig;
pub use reference::reference_markdown;
pub use refinement::RefinementConfig;
pub use replanning::{
    ActionSequenceLimits, ExecutionLimits, GlobalLimits, GoalUnderstandingLimits,
    LlmDecisionConfig, ReflectionLimits, ReplanningConfig, TaskDecompositionLimits,
};
pub use secrets::SecretsConfig;
pub use source::{Provenance, Source};
pub use task_replanning::TaskReplanningConfig;
pub use tools::{McpServerConfig, ToolsConfig};
pub use triggers::{GateConfig, ThreadEvent, TriggersConfig};
pub use verify::{CheckConfig, CheckWhen, VerifyConfig};

/// The whole configuration after all sources are merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub planning: PlanningConfig,
    pub refinement: RefinementConfig,
    /// Seed 004 task re-decomposition; the seed 000 replan decisions are `planning.replanning`.
    pub replanning: TaskReplanningConfig,
    pub llm: LlmConfig,
    pub tools: ToolsConfig,
    pub execution: ExecutionConfig,
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    pub history: HistoryConfig,
    pub github: ForgeTriggerConfig,
    pub gitlab: ForgeTriggerConfig,
    pub triggers: TriggersConfig,
    pub gate: GateConfig,
    pub forge_api: ForgeApiConfig,
    pub user_config_api: Option<UserConfigApi>,
    pub secrets: SecretsConfig,
    /// Split-trust mode: the caps `replan publish` holds a bundle to.
    pub publish: PublishConfig,
    /// The repository's instructions for agents (`AGENTS.md`, ...).
    pub instructions: InstructionsConfig,
    /// What proves the work (issue 37): checks (unset = detected from the repository) and how
    /// many CI rounds on Replan's branch reopen the thread (`ci_rounds`).
    pub verify: VerifyConfig,
}

/// Per-user remote overrides (seed 001 §9.3): `GET {url}?user=<login>` answering
/// `{"status":"success","data":{...config...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UserConfigApi {
    pub url: String,
    /// Name of the environment variable holding the bearer token.
    pub token_env: Option<String>,
    pub timeout_seconds: u64,
}

impl Default for UserConfigApi {
    fn default() -> Self {
        Self {
            url: String::new(),
            token_env: None,
            timeout_seconds: 10,
        }
    }
}

#[cfg(test)]
mod tests;
