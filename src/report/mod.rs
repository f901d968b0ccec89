//! Renderings of the session for people: checklist comment, notices, job summary, terminal.

pub mod checklist;
pub mod ci_verification;
pub mod evidence;
pub(crate) mod forge_reporter;
pub(crate) mod markers;
pub mod md_text;
pub mod mermaid;
pub mod notice;
pub mod status_line;
pub mod summary;
pub(crate) mod tee;
pub(crate) mod terminal;
pub mod verification;

use crate::history::SessionState;
use crate::plan::{Phase, ReplanDecision};
use async_trait::async_trait;

/// Something worth telling people about, besides the checklist itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// Seed 000 §11.2: a replan decided by the model.
    Decision {
        phase: Phase,
        decision: Box<ReplanDecision>,
    },
    /// Seed 000 §11.3.
    Clarification {
        questions: Vec<String>,
        context: String,
        assumptions: Vec<String>,
    },
    /// A decision in the 0.3–0.5 band or a low-confidence alternative waits for `/approve`.
    ApprovalRequest {
        summary: String,
        confidence: f64,
    },
    /// `planning.approval`: the plan (this version, this hash) waits for `/approve`; the scope
    /// diff when a replan widened the approved scope.
    PlanApproval {
        version: u32,
        short_hash: String,
        scope_diff: Option<String>,
    },
    /// The system did not follow the model's decision.
    Override {
        phase: Phase,
        reason: String,
    },
    /// A limit was reached or a person is needed (error level 3).
    HumanNeeded {
        reason: String,
        recommendations: Vec<String>,
    },
    Failure {
        message: String,
    },
    Completion {
        summary: String,
    },
    /// Answer to `/status` and other short replies.
    Info {
        text: String,
    },
}

/// Receives state changes from the engine. Implementations throttle their own output.
#[async_trait]
pub trait Reporter: Send + Sync {
    /// The plan or task progress changed; re-render the checklist. Returns the checklist
    /// comment's id when this call created it, so the engine can record it in history.
    async fn progress(&self, state: &SessionState) -> Option<String>;

    /// Post a notice; returns an id when the notice became a comment.
    async fn notice(&self, state: &SessionState, notice: &Notice) -> Option<String>;

    /// The run is over: flush anything throttled.
    async fn finish(&self, state: &SessionState);
}
