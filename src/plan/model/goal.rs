//! Phase 1 output: `goal_understanding` (seed 001 §2.1).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalUnderstanding {
    pub main_objective: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// What proves each success criterion (issue 37): a check by name, or `manual` with a reason.
    /// Left out of the reply schema: only a run with checks asks for it (in the prompt), and every
    /// other planning request would pay for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub criteria_evidence: Vec<CriterionProof>,
}

/// The planner's answer to "how will we know this criterion is met?".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionProof {
    /// The success criterion, as written in `success_criteria`.
    pub criterion: String,
    /// The name of a check that proves it, or `manual`.
    pub evidence: String,
    /// Why a person must judge it (for `manual`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl CriterionProof {
    pub fn is_manual(&self) -> bool {
        self.evidence.trim().eq_ignore_ascii_case("manual")
    }
}

impl GoalUnderstanding {
    /// The planner's proof for `criterion`, matched by its text.
    pub fn proof_of(&self, criterion: &str) -> Option<&CriterionProof> {
        self.criteria_evidence
            .iter()
            .find(|p| p.criterion.trim() == criterion.trim())
    }
}
