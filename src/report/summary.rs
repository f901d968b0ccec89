//! The GitHub Actions job summary (`$GITHUB_STEP_SUMMARY`) and the plain-text end-of-run report.

use super::checklist::{self, ChecklistContext};
use super::markers::CHECKLIST_MARKER;
use crate::history::SessionState;
use crate::history::entry::RunStatus;

pub fn status_line(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "✅ Completed",
        RunStatus::WaitingForAnswer => "❓ Waiting for an answer",
        RunStatus::WaitingForApproval => "✋ Waiting for `/approve`",
        RunStatus::RequiresHumanIntervention => "🙋 Human intervention needed",
        RunStatus::Stopped => "⏹️ Stopped",
        RunStatus::BudgetExhausted => "💸 Budget exhausted",
        RunStatus::Blocked => "⛔ Blocked",
        RunStatus::Failed => "❌ Failed",
    }
}

/// Markdown for the job summary: the status, then the checklist without its hidden marker.
pub fn job_summary(state: &SessionState, status: RunStatus, ctx: &ChecklistContext) -> String {
    let body = checklist::render(state, ctx);
    let body = body
        .strip_prefix(CHECKLIST_MARKER)
        .unwrap_or(&body)
        .trim_start();
    format!("# Replan: {}\n\n{body}", status_line(status))
}
