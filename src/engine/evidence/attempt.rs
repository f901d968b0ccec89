//! The `each_task` checks after one attempt of a subtask. A subtask that changed files (its work
//! tree's id differs from the tree it started on) is done only when these pass on a tree that
//! contains its changes; a failure is the judge's and the next attempt's input.

use super::{failure_report, run_all, tree_now};
use crate::engine::batch::Batch;
use crate::engine::cx::Cx;
use crate::history::entry::EntryBody;

/// Taken before the attempt's first tool call: the tree it starts from.
pub struct AttemptStart {
    tree: Option<String>,
}

/// The attempt's start, when the run has `each_task` checks to prove it with.
pub async fn start(cx: &Cx<'_>) -> Option<AttemptStart> {
    let runner = cx.deps.tools.checks()?;
    if runner.each_task().is_empty() {
        return None;
    }
    Some(AttemptStart {
        tree: tree_now(runner).await,
    })
}

/// The checks failed on the attempt's tree: what the judge and the next attempt are told.
#[derive(Debug, Clone)]
pub struct FailedChecks {
    /// `check `cargo test` failed on abc1234` lines, for `missingRequirements`.
    pub requirements: Vec<String>,
    /// Names and output tails.
    pub report: String,
}

/// Run the `each_task` checks when the subtask changed files since it started; `Some` when one
/// of them did not pass. Each run is a `check` entry.
pub async fn verify(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    start: Option<AttemptStart>,
) -> Option<FailedChecks> {
    let start = start?;
    let runner = cx.deps.tools.checks()?;
    let base = batch
        .state
        .evidence
        .task_base
        .get(task_id)
        .cloned()
        .or(start.tree);
    let tree = tree_now(runner).await;
    if tree.is_none() || tree == base {
        // Nothing changed (or no git to tell): there is nothing for the checks to prove.
        return None;
    }
    let mut records = run_all(runner, &runner.each_task(), &tree).await;
    for record in &mut records {
        record.task_id = Some(task_id.to_owned());
        record.base_tree = base.clone();
    }
    let failed: Vec<_> = records.iter().filter(|r| !r.passed()).collect();
    let result = (!failed.is_empty()).then(|| FailedChecks {
        requirements: failed
            .iter()
            .map(|r| {
                format!(
                    "check `{}` must pass (it {} on tree {})",
                    r.name,
                    r.status.describe(),
                    r.short_tree()
                )
            })
            .collect(),
        report: failure_report(&failed),
    });
    for record in records {
        batch.push(EntryBody::Check(Box::new(record)));
    }
    result
}
