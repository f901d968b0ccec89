//! A review on a pull / merge request, as the event tells it, and the review threads as the forge
//! lists them. Which pull request is Replan's is decided by the app from the thread's history
//! (`app/review/`); nothing here trusts the branch name alone.

use super::{ThreadKind, ThreadRef};
use serde::{Deserialize, Serialize};

/// A submitted review or one of its comments, on the pull / merge request `pull_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewEvent {
    /// The pull / merge request's number (GitLab: iid).
    pub pull_request: u64,
    /// The review the comments belong to (GitHub: the review's id; GitLab: the discussion's id).
    pub review_id: String,
    /// The pull request's head branch as the forge reported it.
    pub head_branch: String,
    /// The comment's text when the event is one review comment: on a pull request Replan did not
    /// open, it is read as a comment is today (a command, a mention or nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The review's threads, as the forge lists them: filled by the app once the pull request
    /// is known to be Replan's (the event does not carry them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ReviewThread>,
}

/// One review thread (GitHub) or diff discussion (GitLab) of a pull / merge request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewThread {
    /// GitHub: the thread's GraphQL node id (what `resolveReviewThread` takes); GitLab: the
    /// discussion id.
    pub id: String,
    pub resolved: bool,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default)]
    pub diff_hunk: String,
    pub comments: Vec<ReviewComment>,
}

/// One comment of a review thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComment {
    /// GitHub: the comment's database id (replies go to it); GitLab: the note id.
    pub id: String,
    pub author: String,
    pub body: String,
    /// The review the comment was submitted with (GitHub), when the forge says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_id: Option<String>,
}

impl ReviewThread {
    /// Whether a comment of `review_id` is in this thread.
    pub fn belongs_to(&self, review_id: &str) -> bool {
        self.comments
            .iter()
            .any(|c| c.review_id.as_deref() == Some(review_id))
    }
}

/// The thread a branch Replan names for a thread's pull request belongs to: `replan/issue-5`,
/// `replan/issue-5-2`, `replan/pr-7`, `replan/mr-3` (see `tools::forge_tools::branch_prefix`).
/// A claim only: the thread's history must record the pull request before it counts.
pub fn thread_of_branch(branch: &str) -> Option<ThreadRef> {
    let rest = branch.strip_prefix("replan/")?;
    let (kind, rest) = [
        ("issue-", ThreadKind::Issue),
        ("pr-", ThreadKind::PullRequest),
        ("mr-", ThreadKind::MergeRequest),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| rest.strip_prefix(prefix).map(|r| (kind, r)))?;
    let digits = rest.split('-').next()?;
    let number = digits.parse::<u64>().ok().filter(|n| *n > 0)?;
    Some(ThreadRef { kind, number })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_name_their_thread() {
        assert_eq!(
            thread_of_branch("replan/issue-5"),
            Some(ThreadRef::issue(5))
        );
        assert_eq!(
            thread_of_branch("replan/issue-5-2"),
            Some(ThreadRef::issue(5))
        );
        assert_eq!(
            thread_of_branch("replan/mr-3"),
            Some(ThreadRef {
                kind: ThreadKind::MergeRequest,
                number: 3
            })
        );
        for other in [
            "feature/x",
            "replan/work/issues/5",
            "replan/issue-x",
            "replan/issue-0",
        ] {
            assert_eq!(thread_of_branch(other), None, "{other}");
        }
    }
}
