//! The five phases of seed 001 §2 as named in seed 000 decisions (`target_phase`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    GoalUnderstanding,
    TaskDecomposition,
    #[serde(alias = "action_sequence_generation", alias = "action_plan")]
    ActionSequence,
    Execution,
    #[serde(alias = "monitoring", alias = "monitoring_and_reflection")]
    Reflection,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::GoalUnderstanding,
        Phase::TaskDecomposition,
        Phase::ActionSequence,
        Phase::Execution,
        Phase::Reflection,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::GoalUnderstanding => "goal_understanding",
            Phase::TaskDecomposition => "task_decomposition",
            Phase::ActionSequence => "action_sequence",
            Phase::Execution => "execution",
            Phase::Reflection => "reflection",
        }
    }

    /// Human title used in notices ("Goal Understanding").
    pub fn title(self) -> &'static str {
        match self {
            Phase::GoalUnderstanding => "Goal Understanding",
            Phase::TaskDecomposition => "Task Decomposition",
            Phase::ActionSequence => "Action Sequence Generation",
            Phase::Execution => "Execution",
            Phase::Reflection => "Monitoring and Reflection",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
