//! `execution` — how the subtasks of a plan are run.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutionConfig {
    /// Subtasks whose dependencies are all done run at the same time, up to this many, each in
    /// its own git worktree (or copy) of the workspace; 1 runs them one after another.
    pub max_parallel: u32,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        Self { max_parallel: 4 }
    }
}
