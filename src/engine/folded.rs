//! Folded decisions (issue 15, `planning.decisions: folded`): the replan decision, the task
//! judge's verdict and a due reflection ride on the execute turn the model answers anyway, and
//! the planning reply carries its own replan decision and quality self-check. A reply that lacks
//! a part (or is not JSON) costs the separate call that part replaced, so nothing is decided
//! without the model and the history keeps one entry per decision in both modes.

use crate::config::DecisionMode;
use crate::engine::judge::JudgeVerdict;
use crate::engine::phases::refinement::QualityVerdict;
use crate::llm::parse_reply;
use crate::plan::{PlanRevision, Reflection, ReflectionResponse, ReplanDecision};
use schemars::JsonSchema;
use serde::Deserialize;

/// What a tool result carries when the next reply owes a reflection; the bench and the scripted
/// scenarios find folded reflections by it.
pub const REFLECTION_DUE: &str = "Reflection due (";

/// What an execute turn may carry besides its tool calls.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FoldedTurn {
    /// The seed 000 §7 execution decision on the previous tool result.
    #[serde(default)]
    pub replan_decision: Option<ReplanDecision>,
    /// Seed 004: the task judge's verdict, in the final reply of an attempt.
    #[serde(default, alias = "judge")]
    pub verdict: Option<JudgeVerdict>,
    #[serde(default)]
    pub reflection: Option<Reflection>,
    #[serde(default)]
    pub plan_revision: Option<PlanRevision>,
    /// The worker's report of the attempt (the final reply's prose in separate mode).
    #[serde(default)]
    pub report: Option<String>,
}

impl FoldedTurn {
    /// The parts of an execute turn's text, or nothing when it is not a folded reply.
    pub fn parse(text: Option<&str>) -> FoldedTurn {
        text.filter(|t| t.contains('{'))
            .and_then(|t| parse_reply::<FoldedTurn>(t).ok())
            .unwrap_or_default()
    }

    pub fn reflection_response(&self) -> Option<ReflectionResponse> {
        self.reflection
            .clone()
            .map(|reflection| ReflectionResponse {
                phase: "reflection".into(),
                reflection,
                plan_revision: self.plan_revision.clone(),
                comment: None,
            })
    }
}

/// What a folded planning reply may carry besides the draft.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct FoldedPlanning {
    // The prompt spells out both formats; the schema only names them, so the planning call does
    // not pay for two more nested schemas.
    #[serde(default, deserialize_with = "lenient")]
    #[schemars(schema_with = "any_object")]
    pub replan_decision: Option<ReplanDecision>,
    /// Seed 002's quality judge, answered by the planner as its self-check.
    #[serde(default, alias = "quality_review", deserialize_with = "lenient")]
    #[schemars(schema_with = "any_object")]
    pub quality: Option<QualityVerdict>,
}

/// A folded part the model got wrong counts as missing (its separate call is made) instead of
/// throwing the plan it rides on away: SmolLM2-135M filled the "any object" of the schema with
/// objects of its own.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// A schema that only says "an object": for parts whose format the prompt spells out.
pub fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

pub fn is_folded(mode: DecisionMode) -> bool {
    mode == DecisionMode::Folded
}
