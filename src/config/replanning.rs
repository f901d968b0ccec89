//! `planning.replanning` — limits and thresholds of LLM replan decisions (seed 000 §12.1).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplanningConfig {
    pub enabled: bool,
    pub llm_decision: LlmDecisionConfig,
    pub goal_understanding: GoalUnderstandingLimits,
    pub task_decomposition: TaskDecompositionLimits,
    pub action_sequence: ActionSequenceLimits,
    pub execution: ExecutionLimits,
    pub reflection: ReflectionLimits,
    pub global: GlobalLimits,
}

impl Default for ReplanningConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            llm_decision: LlmDecisionConfig::default(),
            goal_understanding: GoalUnderstandingLimits::default(),
            task_decomposition: TaskDecompositionLimits::default(),
            action_sequence: ActionSequenceLimits::default(),
            execution: ExecutionLimits::default(),
            reflection: ReflectionLimits::default(),
            global: GlobalLimits::default(),
        }
    }
}

/// Confidence thresholds; `user_confirmation_threshold <= min_confidence_threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmDecisionConfig {
    pub min_confidence_threshold: f64,
    pub require_user_confirmation_on_low_confidence: bool,
    pub user_confirmation_threshold: f64,
}

impl Default for LlmDecisionConfig {
    fn default() -> Self {
        Self {
            min_confidence_threshold: 0.5,
            require_user_confirmation_on_low_confidence: true,
            user_confirmation_threshold: 0.3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GoalUnderstandingLimits {
    pub max_clarification_requests: u32,
    pub auto_assume_on_no_response: bool,
    pub auto_assume_timeout_minutes: u32,
}

impl Default for GoalUnderstandingLimits {
    fn default() -> Self {
        Self {
            max_clarification_requests: 2,
            auto_assume_on_no_response: true,
            auto_assume_timeout_minutes: 30,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TaskDecompositionLimits {
    pub max_redecomposition_attempts: u32,
}

impl Default for TaskDecompositionLimits {
    fn default() -> Self {
        Self {
            max_redecomposition_attempts: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActionSequenceLimits {
    pub max_regeneration_attempts: u32,
}

impl Default for ActionSequenceLimits {
    fn default() -> Self {
        Self {
            max_regeneration_attempts: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutionLimits {
    pub max_action_retries: u32,
    pub max_partial_replans: u32,
}

impl Default for ExecutionLimits {
    fn default() -> Self {
        Self {
            max_action_retries: 3,
            max_partial_replans: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReflectionLimits {
    pub max_plan_revisions: u32,
}

impl Default for ReflectionLimits {
    fn default() -> Self {
        Self {
            max_plan_revisions: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GlobalLimits {
    pub max_total_replans: u32,
    pub infinite_loop_detection: bool,
    /// The same trigger may cause at most this many replans; more are overridden (seed 000 §13.3).
    pub same_trigger_max_count: u32,
}

impl Default for GlobalLimits {
    fn default() -> Self {
        Self {
            max_total_replans: 10,
            infinite_loop_detection: true,
            same_trigger_max_count: 2,
        }
    }
}
