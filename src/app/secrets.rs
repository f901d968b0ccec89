//! Every secret a run knows, for the log redactor, posted text and `::add-mask::`.

use crate::config::Config;
use crate::trigger::redact::SharedRedactor;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Tokens and keys read from the environment by name.
pub const SECRET_VARIABLES: &[&str] = &[
    "GITHUB_TOKEN",
    "INPUT_GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "CI_JOB_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "INPUT_OPENAI_API_KEY",
    "INPUT_ANTHROPIC_API_KEY",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

static LOG_REDACTOR: LazyLock<SharedRedactor> = LazyLock::new(SharedRedactor::default);

/// The redactor the log writer uses; secrets added to it are masked in every later log line.
pub fn log_redactor() -> SharedRedactor {
    LOG_REDACTOR.clone()
}

/// The environment secrets plus the variables the config names (`llm.api_key_env`,
/// `user_config_api.token_env`).
pub fn known_secrets(env: &BTreeMap<String, String>, config: Option<&Config>) -> Vec<String> {
    let mut names: Vec<String> = SECRET_VARIABLES.iter().map(|s| (*s).to_owned()).collect();
    if let Some(config) = config {
        names.extend(config.llm.api_key_env.iter().cloned());
        if let Some(api) = &config.user_config_api {
            names.extend(api.token_env.iter().cloned());
        }
    }
    names
        .iter()
        .filter_map(|name| env.get(name))
        .filter(|value| !value.trim().is_empty())
        .cloned()
        .collect()
}
