//! Evidence before "done" (issue 37): the checks that prove a subtask's attempt
//! ([`attempt`]) and the final verification that decides the run's end state ([`final_state`]).

pub mod attempt;
pub mod final_state;

use crate::config::CheckConfig;
use crate::history::check::CheckRecord;
use crate::tools::checks::CheckRunner;

/// The tree id of `runner`'s work tree now, computed off the async runtime (git is blocking).
pub async fn tree_now(runner: &CheckRunner) -> Option<String> {
    let runner = runner.clone();
    tokio::task::spawn_blocking(move || runner.tree())
        .await
        .ok()
        .flatten()
}

/// The tree the run started from.
pub async fn start_tree(runner: &CheckRunner) -> Option<String> {
    let runner = runner.clone();
    tokio::task::spawn_blocking(move || runner.start_tree())
        .await
        .ok()
        .flatten()
}

/// Run `checks` one after another on the tree `tree`.
pub async fn run_all(
    runner: &CheckRunner,
    checks: &[CheckConfig],
    tree: &Option<String>,
) -> Vec<CheckRecord> {
    let mut records = Vec::new();
    for check in checks {
        let record = runner.run(check, tree.clone()).await;
        tracing::info!(
            check = %record.name,
            status = record.status.describe(),
            tree = %record.short_tree(),
            "check ran"
        );
        records.push(record);
    }
    records
}

/// What failed checks tell the model and the judge: the name, how it ended, the output's tail.
pub fn failure_report(failed: &[&CheckRecord]) -> String {
    failed
        .iter()
        .map(|r| {
            format!(
                "Check `{}` (`{}`) {} on tree {}:\n{}",
                r.name,
                r.argv.join(" "),
                r.status.describe(),
                r.short_tree(),
                r.output_tail
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
