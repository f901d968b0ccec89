//! The LLM replan decision of seed 000 §2.4–2.6 with the phase-specific fields of §4.4–8.4, and
//! the replan triggers of seed 003.

use super::Phase;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Seed 000 §2.6 plus the `retry` and `none` values the phase outputs (§4.4, §7.5) use.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReplanType {
    #[default]
    None,
    Retry,
    ClarificationRequest,
    GoalRevision,
    TaskRedecomposition,
    ActionRegeneration,
    PartialReplan,
    FullReplan,
    PlanRevision,
}

impl ReplanType {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplanType::None => "none",
            ReplanType::Retry => "retry",
            ReplanType::ClarificationRequest => "clarification_request",
            ReplanType::GoalRevision => "goal_revision",
            ReplanType::TaskRedecomposition => "task_redecomposition",
            ReplanType::ActionRegeneration => "action_regeneration",
            ReplanType::PartialReplan => "partial_replan",
            ReplanType::FullReplan => "full_replan",
            ReplanType::PlanRevision => "plan_revision",
        }
    }

    /// Whether done tasks stay done under this replan type (seed 000 §11.4.3; the table is in
    /// `engine::replan::carry_over`). Here, below the engine, because replay needs it too.
    pub fn keeps_progress(self) -> bool {
        match self {
            ReplanType::PartialReplan
            | ReplanType::ActionRegeneration
            | ReplanType::Retry
            | ReplanType::PlanRevision
            | ReplanType::None => true,
            ReplanType::TaskRedecomposition
            | ReplanType::GoalRevision
            | ReplanType::FullReplan
            | ReplanType::ClarificationRequest => false,
        }
    }
}

/// Seed 000 §7.5 error classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClassification {
    Transient,
    Persistent,
    Fatal,
}

/// Seed 000 §8.4 evaluation result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationResult {
    Success,
    PartialSuccess,
    Failure,
}

/// Seed 000 §8.4 revision scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevisionScope {
    Minor,
    Moderate,
    Major,
}

/// Seed 003 `ReplanTrigger`: why a replan was considered.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ReplanTrigger {
    TaskFailed,
    Timeout,
    ContextChanged,
    BetterPathFound,
    HumanRequest,
    GoalUnreachable,
}

/// Seed 000 §2.4 `replan_decision`. Every field of §2.5 plus the phase-specific ones; the
/// phase-specific fields are optional because each phase fills only its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplanDecision {
    pub replan_needed: bool,
    /// 0..=1; a percentage is normalised where the reply is parsed ([`super::ranged`]).
    #[serde(deserialize_with = "super::ranged::confidence")]
    pub confidence: f64,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub replan_type: ReplanType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_phase: Option<Phase>,
    /// 1 retry, 2 partial replan, 3 action regeneration, 4 task redecomposition, 5 goal (§7.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan_level: Option<u8>,
    #[serde(default)]
    pub issues_found: Vec<String>,
    #[serde(default)]
    pub recommended_actions: Vec<String>,
    #[serde(default)]
    pub clarification_needed: bool,
    #[serde(default)]
    pub clarification_questions: Vec<String>,

    // Goal understanding (§4.4)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions_to_make: Vec<String>,

    // Task decomposition (§5.4)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_steps: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_granularity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_adjustment: Option<String>,

    // Action sequence (§6.4)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternative_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependency_issues: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_adjustments: Vec<String>,

    // Execution (§7.5)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_classification: Option<ErrorClassification>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affected_actions: Vec<String>,

    // Reflection (§8.4)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_result: Option<EvaluationResult>,
    /// 0..=100 (seed 000 §8.4).
    #[serde(
        default,
        deserialize_with = "super::ranged::optional_percentage",
        skip_serializing_if = "Option::is_none"
    )]
    pub achievement_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues_identified: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_scope: Option<RevisionScope>,
}

/// The example values the decision format shows the model (`prompts/decision_format.md`, the
/// phase fields in `engine::decide`). A weak model copies them verbatim; copied, they ask nothing.
const EXAMPLE_QUESTION: &str = "Question for the user";
const EXAMPLE_ASSUMPTION: &str = "Assumption used if the user does not answer";

fn without_example(values: &[String], example: &str) -> Vec<String> {
    values
        .iter()
        .filter(|v| {
            let v = v.trim();
            !v.is_empty() && !v.trim_end_matches(['.', '?']).eq_ignore_ascii_case(example)
        })
        .cloned()
        .collect()
}

impl ReplanDecision {
    /// The questions for a person: `clarification_questions` without blanks and without a copy
    /// of the format's example question (a tiny model answered `"clarification_needed": true,
    /// "clarification_questions": ["Question for the user"]` and the run stopped to ask it).
    pub fn questions(&self) -> Vec<String> {
        without_example(&self.clarification_questions, EXAMPLE_QUESTION)
    }

    /// `assumptions_to_make` without blanks and without a copy of the format's example.
    pub fn assumptions(&self) -> Vec<String> {
        without_example(&self.assumptions_to_make, EXAMPLE_ASSUMPTION)
    }
}

/// The wire wrapper: `{"replan_decision": {...}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplanDecisionResponse {
    pub replan_decision: ReplanDecision,
}
