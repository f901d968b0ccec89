//! The forge (GitHub, GitLab, or a local directory) behind one trait: threads, comments,
//! permissions, reactions and pull/merge requests. History storage is `history::HistoryBackend`.

pub mod ci;
pub mod github;
pub mod gitlab;
pub(crate) mod layer;
pub mod local;
pub mod marker;
pub mod pr_section;
pub(crate) mod redacting;

pub use crate::trigger::Permission;
use crate::trigger::{ForgeKind, ReviewThread, ThreadRef};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comment {
    pub id: String,
    pub author: String,
    #[serde(default)]
    pub author_is_bot: bool,
    pub body: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    pub thread: ThreadRef,
    pub title: String,
    pub body: String,
    pub author: String,
    pub url: String,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Closed (GitLab: closed or merged). Closed threads are not planned.
    #[serde(default)]
    pub closed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    Eyes,
    ThumbsUp,
    Rocket,
    Confused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequestRequest {
    /// Branch that already holds the commits.
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequestRef {
    pub number: u64,
    pub url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error(
        "{forge} rejected the token (HTTP 401) for {what}: check that the token is set and valid"
    )]
    Unauthorized { forge: String, what: String },
    #[error("{forge} denied {what} (HTTP 403): {message}")]
    Forbidden {
        forge: String,
        what: String,
        message: String,
    },
    #[error("{what} was not found (HTTP 404)")]
    NotFound { what: String },
    #[error("{what} conflicts with a concurrent change (HTTP {status}): {message}")]
    Conflict {
        what: String,
        status: u16,
        message: String,
    },
    #[error("{forge} rejected {what} (HTTP 422): {message}")]
    Unprocessable {
        forge: String,
        what: String,
        message: String,
    },
    #[error("{forge} rate limit hit for {what}; retry after {retry_after_secs}s")]
    RateLimited {
        forge: String,
        what: String,
        retry_after_secs: u64,
    },
    #[error("{forge} failed on {what} (HTTP {status}): {message}")]
    Server {
        forge: String,
        what: String,
        status: u16,
        message: String,
    },
    /// A write failed in a way that leaves open whether it took effect (a 5xx or a time-out
    /// after it was sent), and no look-up could tell; it was not repeated.
    #[error("{forge} may or may not have completed {what}: {message}")]
    Uncertain {
        forge: String,
        what: String,
        message: String,
    },
    #[error("could not reach {forge} for {what}: {message}")]
    Connection {
        forge: String,
        what: String,
        message: String,
    },
    #[error("{0}")]
    Other(String),
}

pub type ForgeResult<T> = Result<T, ForgeError>;

fn unsupported(kind: ForgeKind, what: &str) -> ForgeError {
    ForgeError::Other(format!("{what}: not supported on {kind:?}"))
}

/// One comment of a thread: what reading and editing a comment address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommentRef<'a> {
    pub thread: &'a ThreadRef,
    pub id: &'a str,
}

/// A review thread of a pull / merge request, as the writes that answer it address it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewThreadRef<'a> {
    /// The pull / merge request's number.
    pub pull_request: u64,
    /// GitHub: the thread's node id; GitLab: the discussion id.
    pub thread: &'a str,
    /// GitHub: the comment a reply goes to (the thread's first); GitLab: unused.
    pub reply_to: &'a str,
}

/// What a reaction goes on: the thread itself (`comment_id` None) or one of its comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReactionTarget<'a> {
    pub thread: &'a ThreadRef,
    pub comment_id: Option<&'a str>,
}

impl<'a> ReactionTarget<'a> {
    pub fn on_thread(thread: &'a ThreadRef) -> Self {
        ReactionTarget {
            thread,
            comment_id: None,
        }
    }

    pub fn on_comment(thread: &'a ThreadRef, comment_id: &'a str) -> Self {
        ReactionTarget {
            thread,
            comment_id: Some(comment_id),
        }
    }
}

#[async_trait]
pub trait Forge: Send + Sync {
    fn kind(&self) -> ForgeKind;

    /// Link to the CI run for the checklist ("View run"), if known.
    fn run_url(&self) -> Option<String> {
        None
    }

    async fn thread(&self, thread: &ThreadRef) -> ForgeResult<Thread>;
    async fn comments(&self, thread: &ThreadRef) -> ForgeResult<Vec<Comment>>;

    /// One comment as it is now; `None` when it no longer exists. The default looks it up in
    /// [`Forge::comments`]; forges with a direct endpoint override it.
    async fn comment(&self, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        Ok(self
            .comments(at.thread)
            .await?
            .into_iter()
            .find(|c| c.id == at.id))
    }

    /// The login Replan's own comments are written as (the token's user), so it edits only its
    /// own comments. `None` when the forge cannot say.
    async fn own_login(&self) -> Option<String> {
        None
    }
    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> ForgeResult<Comment>;
    async fn update_comment(&self, at: CommentRef<'_>, body: &str) -> ForgeResult<()>;
    async fn permission(&self, user: &str) -> ForgeResult<Permission>;
    async fn react(&self, target: ReactionTarget<'_>, reaction: Reaction) -> ForgeResult<()>;
    async fn open_pull_request(&self, request: &PullRequestRequest) -> ForgeResult<PullRequestRef>;

    /// Replace Replan's marked section of the pull / merge request's body with `section`
    /// ([`pr_section::splice`]): the only edit of a body Replan makes, so the text above and
    /// below the section is never rewritten.
    async fn update_pull_request_section(
        &self,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        let _ = section;
        Err(unsupported(
            self.kind(),
            &format!("editing the body of {}", pull_request.url),
        ))
    }

    /// The pull / merge request (in any state) whose body carries the idempotency marker `key`.
    async fn find_pull_request(&self, key: &str) -> ForgeResult<Option<PullRequestRef>>;

    /// The commit `branch` points at in the repository now; `None` when there is no such branch.
    async fn branch_tip(&self, branch: &str) -> ForgeResult<Option<String>> {
        Err(ForgeError::Other(format!(
            "reading branch `{branch}` is not supported by the {:?} forge",
            self.kind()
        )))
    }

    /// The failed jobs of a finished CI run, with the ends of their logs.
    async fn ci_failures(&self, run: &crate::trigger::CiRun) -> ForgeResult<Vec<ci::CiFailure>> {
        Err(ForgeError::Other(format!(
            "reading the CI run on `{}` is not supported by the {:?} forge",
            run.branch,
            self.kind()
        )))
    }

    /// The run as the forge's API reports it, for a run an event told of; `None` when the
    /// repository has no such run at that commit. The default keeps the event's word: GitHub
    /// writes the event file itself. A GitLab webhook payload reaches the job through a trigger
    /// URL that takes whatever JSON its token is sent with, so GitLab reads the pipeline back.
    async fn confirm_ci_run(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Option<crate::trigger::CiRun>> {
        Ok(Some(run.clone()))
    }

    /// The latest finished CI run of the open pull / merge request from `branch`, read through
    /// the API (the scheduled sweep's way to see CI results without an event). `None` when
    /// there is no open request, no run, the run has not finished, or the forge cannot say.
    async fn latest_ci_run(&self, branch: &str) -> ForgeResult<Option<crate::trigger::CiRun>> {
        let _ = branch;
        Ok(None)
    }

    /// The review threads (GitHub) or diff discussions (GitLab) of a pull / merge request.
    async fn review_threads(&self, pull_request: u64) -> ForgeResult<Vec<ReviewThread>> {
        Err(unsupported(
            self.kind(),
            &format!("listing the review threads of #{pull_request}"),
        ))
    }

    /// A reply in a review thread.
    async fn reply_to_review_thread(&self, at: ReviewThreadRef<'_>, body: &str) -> ForgeResult<()> {
        let _ = body;
        Err(unsupported(
            self.kind(),
            &format!("replying in review thread {}", at.thread),
        ))
    }

    /// Mark a review thread resolved.
    async fn resolve_review_thread(&self, at: ReviewThreadRef<'_>) -> ForgeResult<()> {
        Err(unsupported(
            self.kind(),
            &format!("resolving review thread {}", at.thread),
        ))
    }

    /// The user's access as the gate weighs it: a failed look-up becomes
    /// [`Permission::Unknown`], so the gate fails closed.
    async fn gate_permission(&self, user: &str) -> Permission {
        self.permission(user)
            .await
            .unwrap_or_else(|e| Permission::Unknown(e.to_string()))
    }
}
