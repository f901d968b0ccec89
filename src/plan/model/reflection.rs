//! Phase 5 output: `reflection` and `plan_revision` (seed 001 §2.5, §7.4.3).

use super::ActionPlan;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionStatus {
    #[default]
    Success,
    Failure,
    Partial,
}

/// Both seed spellings are accepted: `action_id` (§2.5) and `action_evaluated` (§7.4.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reflection {
    #[serde(default, alias = "action_evaluated")]
    pub action_id: String,
    #[serde(default)]
    pub status: ReflectionStatus,
    #[serde(default)]
    pub evaluation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment_with_plan: Option<String>,
    #[serde(default)]
    pub issues_identified: Vec<String>,
    #[serde(default)]
    pub plan_revision_needed: bool,
}

/// A change listed in a revision: the seed shows both plain strings and `{type, details}` objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RevisionChange {
    Structured {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        details: String,
    },
    Text(String),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanRevision {
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub changes: Vec<RevisionChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_action_plan: Option<ActionPlan>,
}

/// The reflection-phase reply ("phase": "reflection").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReflectionResponse {
    #[serde(default)]
    pub phase: String,
    pub reflection: Reflection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_revision: Option<PlanRevision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}
