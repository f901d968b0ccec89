//! What a run leaves behind for the workflow: step outputs and the job summary.

use crate::actions;
use crate::history::SessionState;
use crate::history::entry::RunStatus;
use crate::report::checklist::ChecklistContext;
use crate::report::summary::job_summary;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutputs {
    pub status: String,
    pub plan_version: u32,
    pub tasks_done: usize,
    pub tasks_total: usize,
    pub pull_request: Option<String>,
    pub history_commit: Option<String>,
}

pub fn status_name(status: RunStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{status:?}"))
}

/// Writes the step outputs to `$GITHUB_OUTPUT` and the summary to `$GITHUB_STEP_SUMMARY` when
/// those variables are set. A failure to write is logged, never fatal: the work is done.
pub fn write(
    env: &BTreeMap<String, String>,
    outputs: &RunOutputs,
    summary: Option<(&SessionState, RunStatus, &ChecklistContext)>,
) {
    if let Some(path) = env.get("GITHUB_OUTPUT").filter(|p| !p.is_empty()) {
        let values = [
            ("status", outputs.status.clone()),
            ("plan_version", outputs.plan_version.to_string()),
            ("tasks_done", outputs.tasks_done.to_string()),
            ("tasks_total", outputs.tasks_total.to_string()),
            (
                "pull_request",
                outputs.pull_request.clone().unwrap_or_default(),
            ),
            (
                "history_commit",
                outputs.history_commit.clone().unwrap_or_default(),
            ),
        ];
        if let Err(e) = actions::outputs::append(Path::new(path), &values) {
            tracing::warn!("could not write the step outputs to {path}: {e}");
        }
    }
    let summary_path = env.get("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty());
    if let (Some(path), Some((state, status, ctx))) = (summary_path, summary) {
        let written = actions::summary::append(Path::new(path), &job_summary(state, status, ctx));
        if let Err(e) = written {
            tracing::warn!("could not write the job summary to {path}: {e}");
        }
    }
}
