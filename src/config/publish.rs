//! `publish` — what `replan publish` accepts from one bundle (split-trust mode). A bundle over
//! any cap is refused whole: nothing is written.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishConfig {
    /// New comments and comment edits (the checklist counts once per thread).
    pub max_comments: u32,
    pub max_pull_requests: u32,
    /// Distinct branches pushed.
    pub max_branches: u32,
    /// History lines appended, in bytes of JSONL.
    pub max_history_bytes: u64,
    /// `manifest.json`, checked before it is read.
    pub max_manifest_bytes: u64,
}

impl Default for PublishConfig {
    fn default() -> Self {
        Self {
            max_comments: 30,
            max_pull_requests: 1,
            max_branches: 3,
            max_history_bytes: 10 * 1024 * 1024,
            max_manifest_bytes: 32 * 1024 * 1024,
        }
    }
}
