//! A whole plan: the three planning-phase outputs together (seed 001 "planning" response).

use super::{ActionPlan, GoalUnderstanding, TaskDecomposition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    pub goal_understanding: GoalUnderstanding,
    pub task_decomposition: TaskDecomposition,
    pub action_plan: ActionPlan,
}

impl Plan {
    pub fn subtask(&self, id: &str) -> Option<&super::Subtask> {
        self.task_decomposition.subtasks.iter().find(|s| s.id == id)
    }

    pub fn subtask_ids(&self) -> impl Iterator<Item = &str> {
        self.task_decomposition
            .subtasks
            .iter()
            .map(|s| s.id.as_str())
    }
}

/// The planning-phase reply of seed 001 ("phase": "planning"), also used when one call returns all
/// three phases. `error` carries the seed 001 §10.1.1 unclear-goal form. Read by hand (see the
/// `Deserialize` impl): a reply with none of the parts is the wrong shape, not an empty plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct PlanningResponse {
    #[serde(default = "planning_phase")]
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_understanding: Option<GoalUnderstanding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_decomposition: Option<TaskDecomposition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_plan: Option<ActionPlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<PlanningError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

fn planning_phase() -> String {
    "planning".to_string()
}

/// The parts a planning reply may carry; it must carry one of them.
const PLANNING_PARTS: [&str; 4] = [
    "goal_understanding",
    "task_decomposition",
    "action_plan",
    "error",
];

impl<'de> Deserialize<'de> for PlanningResponse {
    /// Each part is read with its field path tracked, so a wrong shape names the path even when
    /// this reply is `flatten`ed into a larger one (where serde loses the path).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        if !PLANNING_PARTS
            .iter()
            .any(|k| map.get(*k).is_some_and(|v| !v.is_null()))
        {
            return Err(D::Error::custom(
                "`goal_understanding`, `task_decomposition`, `action_plan`: missing (a planning reply holds the plan's parts, or `error` when the goal is unclear)",
            ));
        }
        fn part<T: serde::de::DeserializeOwned, E: Error>(
            map: &mut serde_json::Map<String, serde_json::Value>,
            key: &str,
        ) -> Result<Option<T>, E> {
            match map.remove(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(value) => crate::plan::shape::from_value(key, value)
                    .map(Some)
                    .map_err(E::custom),
            }
        }
        Ok(PlanningResponse {
            phase: part(&mut map, "phase")?.unwrap_or_else(planning_phase),
            goal_understanding: part(&mut map, "goal_understanding")?,
            task_decomposition: part(&mut map, "task_decomposition")?,
            action_plan: part(&mut map, "action_plan")?,
            error: part(&mut map, "error")?,
            comment: part(&mut map, "comment")?,
        })
    }
}

/// Seed 001 §10.1.1: the model could not understand the goal and asks questions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanningError {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub clarification_needed: Vec<String>,
}

/// The execution-phase reply of seed 001 (a function call in JSON form).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionResponse {
    #[serde(default)]
    pub phase: String,
    #[serde(default)]
    pub current_task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}
