//! A finished CI run on a branch (GitHub `workflow_run` / `check_suite`, GitLab pipeline): the
//! request that continues the thread whose pull / merge request the branch is.
//!
//! Only the branch name is read here; whether the branch is Replan's is decided against the
//! thread's history (the branch its pull request was opened from) before anything is written.

use super::{ThreadKind, ThreadRef};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiRun {
    /// The run's head branch.
    pub branch: String,
    /// The forge's word: `success`, `failure`, `timed_out`, `failed`, ...
    pub conclusion: String,
    /// GitHub: the workflow run id; GitLab: the pipeline id. `None` for a check suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<u64>,
    /// GitHub `check_suite` events: the suite, whose check runs say what failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_suite_id: Option<u64>,
    /// Where a person sees the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub head_sha: String,
    /// GitHub: the workflow file (`.github/workflows/ci.yml`), to tell Replan's own runs apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    /// What failed (job names and the tails of their logs, redacted and capped), read through
    /// the forge's API by the run before the cycle; the next cycle's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

/// What a finished run says about the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiVerdict {
    Passed,
    Failed,
    /// Cancelled, skipped, neutral, ...: says nothing about the work.
    Inconclusive,
}

impl CiRun {
    pub fn verdict(&self) -> CiVerdict {
        match self.conclusion.as_str() {
            "success" => CiVerdict::Passed,
            "failure" | "failed" | "timed_out" | "startup_failure" => CiVerdict::Failed,
            _ => CiVerdict::Inconclusive,
        }
    }
}

/// The thread a Replan pull request branch belongs to: `replan/issue-7`, `replan/issue-7-2`,
/// `replan/pr-7`, `replan/mr-7`. The work branch (`replan/work/…`), a fan-out subtask's branch
/// and any other name are not pull request branches.
pub fn thread_of_branch(branch: &str) -> Option<ThreadRef> {
    let rest = branch.strip_prefix("replan/")?;
    let (kind, rest) = [
        ("issue-", ThreadKind::Issue),
        ("pr-", ThreadKind::PullRequest),
        ("mr-", ThreadKind::MergeRequest),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| rest.strip_prefix(prefix).map(|r| (kind, r)))?;
    let (number, suffix) = rest.split_once('-').unwrap_or((rest, "1"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(number) || !digits(suffix) || number.starts_with('0') {
        return None;
    }
    Some(ThreadRef {
        kind,
        number: number.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_branches_name_their_thread_and_nothing_else_does() {
        assert_eq!(
            thread_of_branch("replan/issue-7"),
            Some(ThreadRef::issue(7))
        );
        assert_eq!(
            thread_of_branch("replan/issue-7-2"),
            Some(ThreadRef::issue(7))
        );
        assert_eq!(
            thread_of_branch("replan/mr-12").map(|t| t.kind),
            Some(ThreadKind::MergeRequest)
        );
        for other in [
            "main",
            "replan/work/issue-7",
            "replan/issue-7-tasks/task_1",
            "replan/issue-",
            "replan/issue-07",
            "replan/issue-7-x",
            "feature/replan/issue-7",
            "replan/issue-7/x",
        ] {
            assert_eq!(thread_of_branch(other), None, "{other}");
        }
    }
}
