//! Top-level `replanning` — the task judge's re-decomposition of a failed task (seed 004).
//!
//! Not to be confused with `planning.replanning` (seed 000 LLM replan decisions).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TaskReplanningConfig {
    pub enabled: bool,
    /// Re-evaluations of one task chain (seed 004 `maxIterations`).
    #[serde(alias = "maxIterations")]
    pub max_iterations: u32,
    /// The re-decomposition asks for between `min_new_subtasks` and `max_new_subtasks` tasks.
    #[serde(alias = "minNewSubtasks")]
    pub min_new_subtasks: u32,
    #[serde(alias = "maxNewSubtasks")]
    pub max_new_subtasks: u32,
    /// Alternatives whose confidence is below this need a person's `/approve`.
    #[serde(alias = "alternativesApprovalThreshold")]
    pub alternatives_approval_threshold: f64,
}

impl Default for TaskReplanningConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_iterations: 3,
            min_new_subtasks: 3,
            max_new_subtasks: 5,
            alternatives_approval_threshold: 0.5,
        }
    }
}
