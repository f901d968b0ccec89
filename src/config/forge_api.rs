//! `forge_api` — limits of the GitHub / GitLab API client.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForgeApiConfig {
    /// Forge API answers larger than this many bytes are refused as too large.
    pub max_response_bytes: u64,
}

impl Default for ForgeApiConfig {
    fn default() -> Self {
        Self {
            max_response_bytes: crate::http::DEFAULT_MAX_BODY_BYTES as u64,
        }
    }
}

impl ForgeApiConfig {
    /// The cap as a size; at least 64 KiB, so a typo cannot make every answer "too large".
    pub fn max_body_bytes(&self) -> usize {
        usize::try_from(self.max_response_bytes.max(64 * 1024)).unwrap_or(usize::MAX)
    }
}
