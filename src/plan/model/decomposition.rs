//! Phase 2 output: `task_decomposition` (seed 001 §2.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    Low,
    #[default]
    Medium,
    High,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Subtask {
    pub id: String,
    pub description: String,
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub estimated_complexity: Complexity,
    #[serde(default)]
    pub required_tools: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskDecomposition {
    /// The chain-of-thought behind the split.
    #[serde(default)]
    pub reasoning: String,
    pub subtasks: Vec<Subtask>,
}
