//! The run's status in words, as the checklist, the job summary and the pull request's
//! Verification section head it.

use crate::history::entry::RunStatus;

/// The run's status as the checklist and the job summary head it.
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
        RunStatus::FannedOut => "🔀 Waiting for the subtask jobs",
        RunStatus::Unverified => "⚠️ Unverified: the checks do not prove the work",
        RunStatus::NoChanges => "∅ No changes: the goal asked for a change and nothing changed",
    }
}
