//! `secrets` — values to mask beyond those found in the environment by name.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// Literal values masked as `***` (with their base64 and URL-encoded forms) in everything
    /// Replan writes: comments, history, logs, step outputs, LLM requests. Set them through an
    /// environment variable (`REPLAN_SECRETS__EXTRA_VALUES`), never in a committed file.
    pub extra_values: Vec<String>,
}
