//! Appending a performed step: its entries through the one journal, then the notices and the
//! checklist. Shared by the sequential driver and the parallel subtasks.

use super::batch::Batch;
use super::cx::{Cx, CycleError};
use crate::history::SessionState;
use crate::history::entry::EntryBody;
use crate::report::Notice;

/// Append a step's entries, then tell people about it.
pub async fn commit(
    cx: &Cx<'_>,
    state: &mut SessionState,
    batch: Batch,
    notices: Vec<Notice>,
) -> Result<(), CycleError> {
    let deps = cx.deps;
    let progressed = progress_key(&batch.state) != progress_key(state);
    if progressed && notices.is_empty() {
        // The checklist shows the step while its entries are committed (a flush point costs
        // several forge requests, the checklist one or two): neither waits for the other. A new
        // comment's id is recorded after both, behind the step's entries.
        let (appended, comment) = tokio::join!(
            deps.store.append(&batch.entries),
            deps.reporter.progress(&batch.state)
        );
        appended?;
        *state = batch.state;
        return record_checklist(cx, state, comment).await;
    }
    if notices.is_empty() {
        deps.store.append(&batch.entries).await?;
    } else {
        deps.store.append_before_notices(&batch.entries).await?;
    }
    *state = batch.state;
    for n in &notices {
        deps.reporter.notice(state, n).await;
    }
    if progressed {
        show_progress(cx, state, None).await?;
    }
    Ok(())
}

/// Re-render the checklist; `shown` is what it shows when that differs from the recorded state
/// (subtasks running beside each other). A new checklist comment is recorded.
pub async fn show_progress(
    cx: &Cx<'_>,
    state: &mut SessionState,
    shown: Option<&SessionState>,
) -> Result<(), CycleError> {
    let comment = cx.deps.reporter.progress(shown.unwrap_or(state)).await;
    record_checklist(cx, state, comment).await
}

/// A checklist comment the history does not know yet is recorded (after the entries it shows).
async fn record_checklist(
    cx: &Cx<'_>,
    state: &mut SessionState,
    comment: Option<String>,
) -> Result<(), CycleError> {
    let deps = cx.deps;
    if let Some(id) = comment
        && state.checklist_comment_id.as_deref() != Some(id.as_str())
    {
        let mut b = Batch::new(state, &deps.run_id, deps.clock.clone());
        b.push(EntryBody::Checklist { comment_id: id });
        deps.store.append(&b.entries).await?;
        *state = b.state;
    }
    Ok(())
}

/// What the checklist shows; a change means the checklist must be re-rendered.
fn progress_key(state: &SessionState) -> String {
    let tasks: Vec<String> = state
        .tasks
        .iter()
        .map(|(k, v)| format!("{k}={:?}", v.state))
        .collect();
    format!(
        "{}|{}|{}|{}",
        state.plan_version,
        tasks.join(","),
        state
            .plan
            .as_ref()
            .map(|p| p.task_decomposition.subtasks.len())
            .unwrap_or(0),
        state.completion.is_some()
    )
}

/// A step cut short by the budget: its LLM usage is still recorded, nothing else.
pub async fn keep_usage(
    cx: &Cx<'_>,
    state: &mut SessionState,
    batch: Batch,
) -> Result<(), CycleError> {
    let mut kept = Batch::new(state, &cx.deps.run_id, cx.deps.clock.clone());
    for e in batch.entries {
        if let EntryBody::Usage { .. } = e.body {
            kept.push(e.body);
        }
    }
    cx.deps.store.append(&kept.entries).await?;
    *state = kept.state;
    Ok(())
}
