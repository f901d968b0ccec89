//! A subtask branch that conflicts with the ones merged before it is an execution error of that
//! subtask: an error action, a NEEDS_CONTINUATION judgement and the task back to be redone on the
//! merged tree. Its next attempt sees why (the task's note), and its judge and reflection decide
//! from there (done, another attempt, or a replan), as after any other failed attempt.

use crate::engine::batch::Batch;
use crate::history::SessionState;
use crate::history::entry::{ActionOutcome, Entry, EntryBody, JudgeOutcome};
use crate::plan::TaskState;
use std::sync::Arc;

pub fn conflict_entries(
    state: &SessionState,
    run_id: &str,
    id: &str,
    files: &[String],
    merged_before: &[String],
) -> Vec<Entry> {
    let earlier = if merged_before.is_empty() {
        "the work branch".to_owned()
    } else {
        format!("the work branch with {}", merged_before.join(", "))
    };
    let reason = format!(
        "merging subtask {id}'s branch into {earlier} conflicted in {}; redo {id} on the merged tree",
        files.join(", ")
    );
    let mut batch = Batch::new(state, run_id, Arc::new(chrono::Utc::now));
    batch.push(EntryBody::Action {
        task_id: id.to_owned(),
        tool: "merge".into(),
        arguments_digest: String::new(),
        outcome: ActionOutcome::FAILED,
        summary: reason.chars().take(200).collect(),
        duration_ms: 0,
    });
    batch.push(EntryBody::Judge {
        task_id: id.to_owned(),
        outcome: JudgeOutcome::NeedsContinuation,
        reason: reason.clone(),
        missing_requirements: vec![],
    });
    batch.push(EntryBody::TaskState {
        task_id: id.to_owned(),
        state: TaskState::NeedsContinuation,
        replanning_info: None,
        note: Some(reason),
    });
    batch.entries
}
