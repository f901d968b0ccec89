//! Which conversation a run belongs to, independent of the forge.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The forge a trigger came from; `Local` is a run from the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgeKind {
    #[serde(rename = "github")]
    GitHub,
    #[serde(rename = "gitlab")]
    GitLab,
    Local,
}

/// The kind of thread; serialised as the history directory name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ThreadKind {
    #[serde(rename = "issues")]
    Issue,
    #[serde(rename = "pulls")]
    PullRequest,
    #[serde(rename = "merge_requests")]
    MergeRequest,
}

impl ThreadKind {
    pub fn dir_name(self) -> &'static str {
        match self {
            ThreadKind::Issue => "issues",
            ThreadKind::PullRequest => "pulls",
            ThreadKind::MergeRequest => "merge_requests",
        }
    }

    /// The word for it in messages: "issue", "pull request", "merge request".
    pub fn noun(self) -> &'static str {
        match self {
            ThreadKind::Issue => "issue",
            ThreadKind::PullRequest => "pull request",
            ThreadKind::MergeRequest => "merge request",
        }
    }

    pub fn from_dir_name(name: &str) -> Option<Self> {
        match name {
            "issues" => Some(ThreadKind::Issue),
            "pulls" => Some(ThreadKind::PullRequest),
            "merge_requests" => Some(ThreadKind::MergeRequest),
            _ => None,
        }
    }
}

/// An issue, pull request or merge request by number (GitLab: iid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ThreadRef {
    pub kind: ThreadKind,
    pub number: u64,
}

impl ThreadRef {
    pub fn issue(number: u64) -> Self {
        ThreadRef {
            kind: ThreadKind::Issue,
            number,
        }
    }

    /// `planning_history/<issues|pulls|merge_requests>/<number>.jsonl` relative to the branch root.
    pub fn history_path(&self, directory: &str) -> String {
        format!(
            "{}/{}/{}.jsonl",
            directory.trim_end_matches('/'),
            self.kind.dir_name(),
            self.number
        )
    }
}

impl fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sigil = match self.kind {
            ThreadKind::MergeRequest => "!",
            _ => "#",
        };
        write!(f, "{sigil}{}", self.number)
    }
}
