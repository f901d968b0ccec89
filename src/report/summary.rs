//! The GitHub Actions job summary (`$GITHUB_STEP_SUMMARY`) and the plain-text end-of-run report.

use super::checklist::{self, ChecklistContext};
use super::markers::CHECKLIST_MARKER;
use crate::history::SessionState;
use crate::history::entry::{RunStatus, UsageTotals};

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
    }
}

/// Markdown for the job summary: the status, then the checklist without its hidden marker.
pub fn job_summary(state: &SessionState, status: RunStatus, ctx: &ChecklistContext) -> String {
    let body = checklist::render(state, ctx);
    let body = body
        .strip_prefix(CHECKLIST_MARKER)
        .unwrap_or(&body)
        .trim_start();
    let mut out = format!("# Replan: {}\n\n{body}", status_line(status));
    if let Some(line) = llm_time_line(&state.usage) {
        out.push_str(&format!("\n{line}\n"));
    }
    out
}

/// LLM wall time with the thrown-away part apart, so a slow or flaky model shows where the time
/// went; `None` before any metered call.
pub fn llm_time_line(usage: &UsageTotals) -> Option<String> {
    if usage.wall_ms == 0 {
        return None;
    }
    let seconds = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    Some(format!(
        "LLM time: {} in {} calls; wasted: {} in {} calls (time-outs, retries, cut-off or unusable replies)",
        seconds(usage.wall_ms),
        usage.calls,
        seconds(usage.wasted_ms),
        usage.wasted_calls
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasted_time_is_shown_apart() {
        let usage = UsageTotals {
            calls: 5,
            wall_ms: 40_000,
            wasted_calls: 2,
            wasted_ms: 31_250,
            ..UsageTotals::default()
        };
        assert_eq!(
            llm_time_line(&usage).unwrap(),
            "LLM time: 40.0 s in 5 calls; wasted: 31.2 s in 2 calls (time-outs, retries, cut-off or unusable replies)"
        );
        assert_eq!(llm_time_line(&UsageTotals::default()), None);
    }
}
