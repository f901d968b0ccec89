//! The completion reply (seed 001 "completion", including §10.4 `requires_human_intervention`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionSummary {
    pub goal_achieved: bool,
    #[serde(default)]
    pub tasks_completed: u32,
    #[serde(default)]
    pub tasks_failed: u32,
    /// Omitted when empty: the seed's §10.4 reply has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_outcomes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recommendations: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Completion {
    #[serde(default = "completion_phase")]
    pub phase: String,
    /// `requires_human_intervention` when the revision limit stopped the run (seed 001 §10.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub summary: CompletionSummary,
    /// Omitted when false: the seed's `requires_human_intervention` reply (§10.4) has no `done`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// After a review round: one answer per review thread (see [`ReviewAnswer`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub review_threads: Vec<ReviewAnswer>,
}

/// The model's answer to one review thread: whether the changes of this cycle address it, and
/// the reply posted in the thread. Threads it addressed are resolved; the others stay open.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewAnswer {
    /// The thread's id as the prompt listed it.
    pub thread: String,
    pub addressed: bool,
    /// What changed (addressed), or the question, scope or disagreement (not addressed).
    #[serde(default)]
    pub reply: String,
    /// Why a thread was not addressed: `question`, `out_of_scope` or `disagreed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn completion_phase() -> String {
    "completion".to_string()
}
