//! Phase 3 output: `action_plan` (seed 001 §2.3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedAction {
    pub task_id: String,
    #[serde(default = "default_action_type")]
    pub action_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default)]
    pub purpose: String,
    #[serde(default)]
    pub expected_outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_strategy: Option<String>,
}

fn default_action_type() -> String {
    "tool_call".to_string()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionPlan {
    pub execution_order: Vec<String>,
    #[serde(default)]
    pub actions: Vec<PlannedAction>,
}
