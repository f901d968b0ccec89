//! The run's honest end state (issue 37, point 4): `completed` only when every check passed on
//! the final tree and every success criterion is proven or explicitly manual; `unverified` (with
//! which checks and why) or `no_changes` otherwise.
//!
//! [`FinalProof`] (`history::final_proof`) is the one place a proof of the final tree comes
//! from: the checks Replan runs itself, or the repository's own CI run on the pushed branch
//! (issue 37, point 6), which [`status_after_ci`] turns into the thread's end state.

use super::{run_all, start_tree, tree_now};
use crate::engine::batch::Batch;
use crate::engine::context::tools_named_by;
use crate::engine::cx::Cx;
use crate::history::check::{CheckRecord, CriterionEvidence};
use crate::history::entry::{CiResult, EntryBody, RunStatus};
pub use crate::history::final_proof::{FinalProof, passed as final_proof_passed};
use crate::plan::Plan;
use crate::tools::checks::ChecksSource;

/// How a thread ends once the repository's CI finished on its pull request branch: `completed`
/// when the run proves the pushed head; `None` (the thread's status stays) when it does not.
pub fn status_after_ci(ci: &CiResult) -> Option<RunStatus> {
    final_proof_passed(&FinalProof::Ci(ci.clone()), &None).then_some(RunStatus::Completed)
}

/// The end state of a plan that ran to its end, and what the completion summary says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct EndState {
    pub status: RunStatus,
    /// Why the status is not `completed`.
    pub problems: Vec<String>,
    pub criteria: Vec<CriterionEvidence>,
}

/// Tools that change the repository: a plan that names one (or names no tool at all, the
/// weak-model fallback that just "does the issue") asked for a change.
const CHANGING_TOOLS: [&str; 4] = [
    "write_file",
    "edit_file",
    "apply_patch",
    "open_pull_request",
];

pub fn goal_asks_for_change(plan: &Plan) -> bool {
    let named = tools_named_by(plan);
    named.is_empty() || named.iter().any(|t| CHANGING_TOOLS.contains(t))
}

/// Verify the final tree, record the `check` and `verification` entries, and say how the run
/// ends. Without a checkout to verify (no `verify` wired in), the run ends `completed` as the
/// plan says.
pub async fn verify_final(cx: &Cx<'_>, batch: &mut Batch) -> EndState {
    let Some(runner) = cx.deps.tools.checks() else {
        return EndState {
            status: RunStatus::Completed,
            problems: vec![],
            criteria: vec![],
        };
    };
    let plan = batch.state.plan.clone().unwrap_or_default();
    let goal = &plan.goal_understanding;
    let tree = tree_now(runner).await;
    let source = match runner.set.source {
        ChecksSource::Configured => "configured",
        ChecksSource::Detected => "detected",
        ChecksSource::Off => "off",
    };
    let names: Vec<String> = runner.checks().iter().map(|c| c.name.clone()).collect();
    let mut problems = Vec::new();
    let unchanged = tree.is_some() && tree == start_tree(runner).await;
    let status = if unchanged && goal_asks_for_change(&plan) {
        problems.push(
            "the goal asks for a change, and the final tree is the tree the run started from"
                .to_owned(),
        );
        RunStatus::NoChanges
    } else {
        let records = final_records(runner, batch, &tree).await;
        for record in records.iter().filter(|r| !r.passed()) {
            problems.push(format!(
                "check `{}` {} on the final tree {}: {}",
                record.name,
                record.status.describe(),
                record.short_tree(),
                record.output_tail.lines().last().unwrap_or_default()
            ));
        }
        let proof = FinalProof::Checks(records.clone());
        for record in records {
            batch.push(EntryBody::Check(Box::new(record)));
        }
        problems.extend(crate::plan::criteria::criteria_problems(goal, &names));
        if problems.is_empty() && final_proof_passed(&proof, &tree) {
            RunStatus::Completed
        } else {
            RunStatus::Unverified
        }
    };
    let criteria = criteria_evidence(&plan, &batch.state.evidence.final_checks, &names);
    batch.push(EntryBody::Verification {
        source: source.to_owned(),
        checks: names,
        problems: problems.clone(),
        criteria: criteria.clone(),
    });
    EndState {
        status,
        problems,
        criteria,
    }
}

/// Every check on the final tree: a passing run on exactly this tree (a subtask's) is the same
/// evidence and is not repeated; the others run now.
async fn final_records(
    runner: &crate::tools::checks::CheckRunner,
    batch: &Batch,
    tree: &Option<String>,
) -> Vec<CheckRecord> {
    let mut records = Vec::new();
    for check in runner.checks() {
        let reused = tree.as_ref().and_then(|_| {
            batch
                .state
                .evidence
                .tasks
                .values()
                .flatten()
                .find(|r| r.name == check.name && r.passed() && &r.tree == tree)
        });
        let record = match reused {
            Some(r) => r.clone(),
            None => run_all(runner, std::slice::from_ref(check), tree)
                .await
                .remove(0),
        };
        records.push(CheckRecord {
            task_id: None,
            base_tree: None,
            ..record
        });
    }
    records
}

/// Each success criterion with its evidence on the final tree.
fn criteria_evidence(
    plan: &Plan,
    finals: &[CheckRecord],
    names: &[String],
) -> Vec<CriterionEvidence> {
    let goal = &plan.goal_understanding;
    goal.success_criteria
        .iter()
        .map(|criterion| {
            let proof = goal.proof_of(criterion);
            let check = proof
                .filter(|p| !p.is_manual() && names.contains(&p.evidence))
                .map(|p| p.evidence.clone());
            let record = check
                .as_ref()
                .and_then(|name| finals.iter().find(|r| &r.name == name));
            CriterionEvidence {
                criterion: criterion.clone(),
                manual_reason: match (&check, proof) {
                    (Some(_), _) => None,
                    (None, Some(p)) if p.is_manual() && !p.reason.is_empty() => {
                        Some(p.reason.clone())
                    }
                    (None, Some(p)) if p.is_manual() => None,
                    (None, _) => Some("no check was named for it".to_owned()),
                },
                status: record.map(|r| r.status),
                tree: record.and_then(|r| r.tree.clone()),
                check,
            }
        })
        .collect()
}
