//! Task states of seed 004, including `REPLACED_BY_REPLAN` and `replanningInfo`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskState {
    #[default]
    Ready,
    Running,
    NeedsContinuation,
    Done,
    Blocked,
    Cancelled,
    ReplacedByReplan,
}

impl TaskState {
    /// No further work will happen on a task in this state within the current plan.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Done | TaskState::Cancelled | TaskState::ReplacedByReplan
        )
    }
}

/// Seed 004 `replanningInfo`, camelCase on the wire as in the seed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplanningInfo {
    pub iteration: u32,
    pub max_iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan_reason: Option<String>,
}
