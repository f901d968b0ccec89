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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::check::CheckStatus;
    use crate::history::entry::{Entry, EntryBody, SCHEMA_VERSION};

    fn entry(seq: u64, body: EntryBody) -> Entry {
        Entry {
            v: SCHEMA_VERSION,
            seq,
            ts: chrono::Utc::now(),
            run_id: "r".into(),
            body,
        }
    }

    fn check(tree: &str, status: CheckStatus) -> EntryBody {
        EntryBody::Check(Box::new(CheckRecord {
            name: "suite".into(),
            argv: vec!["suite".into()],
            status,
            exit_code: None,
            duration_ms: 10,
            tree: Some(tree.into()),
            task_id: None,
            base_tree: None,
            output_tail: String::new(),
        }))
    }

    fn ci(passed: bool) -> EntryBody {
        EntryBody::CiResult(Box::new(CiResult {
            branch: "replan/issue-1".into(),
            conclusion: if passed { "success" } else { "failure" }.into(),
            passed,
            head_sha: "c0ffee".into(),
            run_url: Some("https://ci/1".into()),
            failed_jobs: vec![],
            round: 0,
        }))
    }

    #[test]
    fn a_passing_ci_run_after_the_checks_proves_the_thread_even_when_they_could_not_run() {
        let state = crate::history::replay(&[
            entry(1, check("a", CheckStatus::NotRun)),
            entry(2, ci(true)),
        ]);
        assert!(matches!(proven_by(&state), Some(FinalProof::Ci(c)) if c.passed));
        assert_eq!(recorded(&state).len(), 2);
    }

    #[test]
    fn a_ci_run_before_a_later_change_proves_nothing_about_it() {
        let state = crate::history::replay(&[
            entry(1, ci(true)),
            entry(2, check("b", CheckStatus::Failed)),
        ]);
        assert_eq!(proven_by(&state), None);
        let failed = crate::history::replay(&[
            entry(1, check("a", CheckStatus::NotRun)),
            entry(2, ci(false)),
        ]);
        assert_eq!(proven_by(&failed), None);
        let checks = crate::history::replay(&[entry(1, check("a", CheckStatus::Passed))]);
        assert!(matches!(proven_by(&checks), Some(FinalProof::Checks(_))));
    }
}
