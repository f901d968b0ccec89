//! `verify` — what proves the work. `ci_rounds`: how many times a failing CI run on Replan's
//! own pull request branch reopens the thread before it waits for a person.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// CI failures on the thread's pull request branch that start a fixing cycle; the next
    /// failure is recorded and left for a person. 0: CI results are recorded, never acted on.
    pub ci_rounds: u32,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self { ci_rounds: 3 }
    }
}
