//! What proves the final tree of a thread (issue 37): the checks Replan ran on it, or the
//! repository's own CI run on the head of the thread's pull request branch. One list, read from
//! the history, that the end-state decision, the checklist footer and the pull request's
//! "Verification" section all take their facts from.

use super::SessionState;
use super::check::CheckRecord;
use super::entry::CiResult;

/// One proof offered for the final tree; [`passed`] says whether it proves it.
#[derive(Debug, Clone, PartialEq)]
pub enum FinalProof {
    /// The runs of every check on the final tree.
    Checks(Vec<CheckRecord>),
    /// A finished CI run on the pushed head of the thread's pull request branch (only a run of
    /// that branch's tip on Replan's own branch is ever recorded: `app/run/ci_round.rs`).
    Ci(CiResult),
}

/// Whether `proof` proves the final tree `tree`: every check passed on exactly that tree (no
/// checks at all, `verify: []`, leave nothing unproven), or the CI run on the pushed head
/// passed (its tree is the commit's; there is no local tree to compare).
pub fn passed(proof: &FinalProof, tree: &Option<String>) -> bool {
    match proof {
        FinalProof::Checks(records) => records.iter().all(|r| r.passed() && &r.tree == tree),
        FinalProof::Ci(ci) => ci.passed,
    }
}

/// The latest CI run on the pull request branch, when it was recorded after the latest check
/// ran (a check after it ran on a newer tree than the CI run saw).
pub fn current_ci(state: &SessionState) -> Option<&CiResult> {
    (state.ci_results.len() > state.evidence.ci_results_before_latest_check)
        .then(|| state.ci_results.last())
        .flatten()
}

/// The proofs the history records: the latest final verification's checks (when it ran any),
/// then the latest CI run on the pull request branch.
pub fn recorded(state: &SessionState) -> Vec<FinalProof> {
    let mut proofs = Vec::new();
    if !state.evidence.final_checks.is_empty() {
        proofs.push(FinalProof::Checks(state.evidence.final_checks.clone()));
    }
    if let Some(ci) = state.ci_results.last() {
        proofs.push(FinalProof::Ci(ci.clone()));
    }
    proofs
}

/// The recorded proof of the thread's latest work, if one proves it: a passing CI run recorded
/// after the latest check, else the final checks on the tree the latest check ran on.
pub fn proven_by(state: &SessionState) -> Option<FinalProof> {
    if let Some(ci) = current_ci(state).filter(|ci| ci.passed) {
        return Some(FinalProof::Ci(ci.clone()));
    }
    let finals = &state.evidence.final_checks;
    let checks = FinalProof::Checks(finals.clone());
    (!finals.is_empty() && passed(&checks, &state.evidence.latest_tree)).then_some(checks)
}
