//! Which trees the checks proved, rebuilt from the `check` entries on replay (issue 37).
//!
//! A check's evidence counts for the exact tree id it ran on. Each subtask keeps the latest run
//! of each of its checks; the final verification keeps the latest run of each check on the final
//! tree.

use super::check::CheckRecord;

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// Per subtask: the latest run of each check (by name), in the order first run.
    pub tasks: BTreeMap<String, Vec<CheckRecord>>,
    /// Per subtask: the tree its first checked attempt started on.
    pub task_base: BTreeMap<String, String>,
    /// The final verification: the latest run of each check on the final tree.
    pub final_checks: Vec<CheckRecord>,
    /// The tree the latest check ran on: evidence on any other tree is stale unless the final
    /// verification passed on this one.
    pub latest_tree: Option<String>,
    /// The latest final verification: where the checks came from, the problems that kept the
    /// run from `completed`, and each success criterion's evidence.
    pub verification: Option<Verification>,
    /// How many CI results the thread had when the latest check ran: a CI run recorded after
    /// that speaks for a newer push than the checks (`final_proof::current_ci`).
    #[serde(skip_serializing_if = "is_zero")]
    pub ci_results_before_latest_check: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verification {
    /// `configured`, `detected` or `off`.
    pub source: String,
    pub checks: Vec<String>,
    pub problems: Vec<String>,
    pub criteria: Vec<super::check::CriterionEvidence>,
}

impl Evidence {
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.final_checks.is_empty()
    }

    pub fn record(&mut self, record: CheckRecord) {
        if record.tree.is_some() {
            self.latest_tree = record.tree.clone();
        }
        let list = match &record.task_id {
            Some(task) => {
                if let Some(base) = &record.base_tree {
                    self.task_base
                        .entry(task.clone())
                        .or_insert_with(|| base.clone());
                }
                self.tasks.entry(task.clone()).or_default()
            }
            None => {
                // A final verification on another tree replaces the earlier one as a whole.
                if self
                    .final_checks
                    .first()
                    .is_some_and(|first| first.tree != record.tree)
                {
                    self.final_checks.clear();
                }
                &mut self.final_checks
            }
        };
        match list.iter_mut().find(|r| r.name == record.name) {
            Some(slot) => *slot = record,
            None => list.push(record),
        }
    }

    /// The latest check runs of `task`.
    pub fn of_task(&self, task: &str) -> &[CheckRecord] {
        self.tasks.get(task).map(Vec::as_slice).unwrap_or_default()
    }

    /// The final verification passed on the latest tree: every check of it passed there.
    pub fn final_passed(&self) -> bool {
        !self.final_checks.is_empty()
            && self
                .final_checks
                .iter()
                .all(|r| r.passed() && r.tree == self.latest_tree)
    }

    /// Whether `record` no longer speaks for the work: the tree changed after it ran and no
    /// final verification covers the newer tree.
    pub fn is_stale(&self, record: &CheckRecord) -> bool {
        record.tree.is_some() && record.tree != self.latest_tree && !self.final_passed()
    }
}
