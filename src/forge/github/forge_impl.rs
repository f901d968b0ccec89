//! The [`Forge`] trait over the GitHub REST API, through octocrab's typed calls. Comment edits
//! use a raw PATCH (GitHub documents PATCH; octocrab's `update_comment` sends POST, which is not
//! an edit).

use super::client::{GitHubClient, Op};
use super::pulls;
use crate::forge::{
    Comment, CommentRef, Forge, ForgeError, ForgeResult, Permission, PullRequestRef,
    PullRequestRequest, Reaction, ReactionTarget, ReviewThreadRef, Thread, marker,
};
use crate::trigger::{ForgeKind, ReviewThread, ThreadRef};
use async_trait::async_trait;
use octocrab::models::{self, Author, CommentId, IssueState, reactions::ReactionContent};
use serde_json::{Value, json};
use std::sync::Arc;

const ISSUES_WRITE: &str = "issues: write";
const ISSUES_READ: &str = "issues: read";

pub struct GitHubForge {
    client: Arc<GitHubClient>,
    run_url: Option<String>,
    graphql_url: Option<String>,
}

/// Who the Actions workflow token posts as: `GET /user` answers 403 for it.
pub const WORKFLOW_TOKEN_LOGIN: &str = "github-actions[bot]";

impl GitHubForge {
    pub fn new(client: Arc<GitHubClient>) -> Self {
        GitHubForge {
            client,
            run_url: None,
            graphql_url: None,
        }
    }

    /// The "View run" link (`$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID`).
    pub fn with_run_url(mut self, run_url: Option<String>) -> Self {
        self.run_url = run_url;
        self
    }

    pub fn client(&self) -> &Arc<GitHubClient> {
        &self.client
    }

    /// `GITHUB_GRAPHQL_URL`, where the token's own login is asked (`viewer { login }`).
    pub fn with_graphql_url(mut self, url: Option<String>) -> Self {
        self.graphql_url = url.filter(|u| !u.trim().is_empty());
        self
    }
}

/// A user's login and whether it is a bot (by type or by the `[bot]` suffix).
fn login(user: &Author) -> (String, bool) {
    let bot = user.r#type == "Bot" || user.login.ends_with("[bot]");
    (user.login.clone(), bot)
}

pub(crate) fn comment_from(comment: &models::issues::Comment) -> Comment {
    let (author, author_is_bot) = login(&comment.user);
    Comment {
        id: comment.id.to_string(),
        author,
        author_is_bot,
        body: comment.body.clone().unwrap_or_default(),
        created_at: comment.created_at,
        updated_at: comment.updated_at.unwrap_or(comment.created_at),
    }
}

/// GitHub comment ids are numbers; any other id names no comment.
fn comment_id(id: &str) -> Result<CommentId, ForgeError> {
    id.trim()
        .parse::<u64>()
        .map(CommentId)
        .map_err(|_| ForgeError::NotFound {
            what: format!("comment `{id}` (GitHub comment ids are numbers)"),
        })
}

fn reaction_content(reaction: Reaction) -> ReactionContent {
    match reaction {
        Reaction::Eyes => ReactionContent::Eyes,
        Reaction::ThumbsUp => ReactionContent::PlusOne,
        Reaction::Rocket => ReactionContent::Rocket,
        Reaction::Confused => ReactionContent::Confused,
    }
}

/// GitHub's `role_name` (or the legacy `permission`) as our permission; unknown roles fail closed.
/// Read as JSON, not as octocrab's `RepoPermission`: its `permission` field takes the team
/// values (`pull`, `push`, ...), where this endpoint answers `admin`, `write`, `read`, `none`.
fn permission_from(body: &Value) -> Permission {
    let role = body
        .get("role_name")
        .and_then(Value::as_str)
        .or_else(|| body.get("permission").and_then(Value::as_str))
        .unwrap_or("none");
    Permission::github_role(role).unwrap_or(Permission::None)
}

impl GitHubForge {
    fn issues(&self) -> octocrab::issues::IssueHandler<'_> {
        self.client
            .octocrab()
            .issues(self.client.owner(), self.client.name())
    }

    /// One comment fetched again (the gate checks the current text and edit time).
    async fn issue_comment(&self, comment_id: &str) -> Result<Comment, ForgeError> {
        let id = self::comment_id(comment_id)?;
        let what = format!("reading comment {comment_id}");
        let op = Op {
            what: &what,
            permission: ISSUES_READ,
        };
        let comment = self.client.call(op, self.issues().get_comment(id)).await?;
        Ok(comment_from(&comment))
    }

    async fn all_comments(
        &self,
        thread: &ThreadRef,
        op: Op<'_>,
    ) -> Result<Vec<Comment>, ForgeError> {
        let issues = self.issues();
        let first = issues.list_comments(thread.number).per_page(100).send();
        let comments = self.client.all_pages(op, first).await?;
        Ok(comments.iter().map(comment_from).collect())
    }
}

#[async_trait]
impl Forge for GitHubForge {
    fn kind(&self) -> ForgeKind {
        ForgeKind::GitHub
    }

    fn run_url(&self) -> Option<String> {
        self.run_url.clone()
    }

    async fn thread(&self, thread: &ThreadRef) -> ForgeResult<Thread> {
        let what = format!("reading {thread}");
        let op = Op {
            what: &what,
            permission: ISSUES_READ,
        };
        let issue = self
            .client
            .call(op, self.issues().get(thread.number))
            .await?;
        Ok(Thread {
            thread: *thread,
            title: issue.title,
            body: issue.body.unwrap_or_default(),
            author: issue.user.login,
            url: issue.html_url.to_string(),
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
            closed: issue.state == IssueState::Closed,
        })
    }

    async fn comment(&self, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        match self.issue_comment(at.id).await {
            Ok(comment) => Ok(Some(comment)),
            Err(ForgeError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The GraphQL `viewer` when `GITHUB_GRAPHQL_URL` is known, else (or when it fails) the
    /// workflow token's `github-actions[bot]`.
    async fn own_login(&self) -> Option<String> {
        let Some(url) = &self.graphql_url else {
            return Some(WORKFLOW_TOKEN_LOGIN.to_owned());
        };
        let op = Op {
            what: "asking GitHub which account the token is",
            permission: ISSUES_READ,
        };
        let query = json!({ "query": "query { viewer { login } }" });
        let asked = self
            .client
            .call(
                op,
                self.client.octocrab().post::<_, Value>(url, Some(&query)),
            )
            .await;
        match asked {
            Ok(body) => body
                .pointer("/data/viewer/login")
                .and_then(Value::as_str)
                .filter(|login| !login.is_empty())
                .map(str::to_owned)
                .or_else(|| Some(WORKFLOW_TOKEN_LOGIN.to_owned())),
            Err(e) => {
                tracing::info!("GraphQL `viewer` failed ({e}); assuming {WORKFLOW_TOKEN_LOGIN}");
                Some(WORKFLOW_TOKEN_LOGIN.to_owned())
            }
        }
    }

    async fn comments(&self, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        let what = format!("listing the comments of {thread}");
        let op = Op {
            what: &what,
            permission: ISSUES_READ,
        };
        self.all_comments(thread, op).await
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> ForgeResult<Comment> {
        let what = format!("posting a comment on {thread}");
        let op = Op {
            what: &what,
            permission: ISSUES_WRITE,
        };
        let key = marker::key_in(body);
        let owner = self.client.owner();
        let name = self.client.name();
        let lookup = || async {
            let Some(key) = key else {
                return Err("the comment carries no idempotency marker to look for".to_owned());
            };
            let comments = self
                .all_comments(thread, op)
                .await
                .map_err(|e| e.to_string())?;
            Ok(comments
                .into_iter()
                .find(|c| marker::key_in(&c.body) == Some(key)))
        };
        self.client
            .create(
                op,
                |once| async move {
                    once.issues(owner, name)
                        .create_comment(thread.number, body)
                        .await
                        .map(|c| comment_from(&c))
                },
                lookup,
            )
            .await
    }

    /// A raw PATCH: octocrab's `update_comment` sends POST, where GitHub documents PATCH.
    async fn update_comment(&self, at: CommentRef<'_>, body: &str) -> ForgeResult<()> {
        let CommentRef {
            thread,
            id: comment_id,
        } = at;
        let id = self::comment_id(comment_id)?;
        let path = self.client.repo_path(&format!("/issues/comments/{id}"));
        let what = format!("editing comment {comment_id} on {thread}");
        let op = Op {
            what: &what,
            permission: ISSUES_WRITE,
        };
        let body = json!({ "body": body });
        let patch = self
            .client
            .octocrab()
            .patch::<models::issues::Comment, _, _>(path, Some(&body));
        self.client.call(op, patch).await?;
        Ok(())
    }

    async fn branch_tip(&self, branch: &str) -> ForgeResult<Option<String>> {
        super::ci_runs::branch_tip(&self.client, branch).await
    }

    async fn ci_failures(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Vec<crate::forge::ci::CiFailure>> {
        super::ci_runs::ci_failures(&self.client, run).await
    }

    async fn permission(&self, user: &str) -> ForgeResult<Permission> {
        let path = self
            .client
            .repo_path(&format!("/collaborators/{user}/permission"));
        let what = format!("checking the repository permission of {user}");
        let op = Op {
            what: &what,
            permission: "contents: read (metadata)",
        };
        let get = self.client.octocrab().get::<Value, _, ()>(path, None);
        match self.client.call(op, get).await {
            Ok(body) => Ok(permission_from(&body)),
            // Not a collaborator (or not a user): no access, which the gate refuses.
            Err(ForgeError::NotFound { .. }) => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }

    async fn react(&self, target: ReactionTarget<'_>, reaction: Reaction) -> ForgeResult<()> {
        let ReactionTarget { thread, comment_id } = target;
        let content = reaction_content(reaction);
        let issues = self.issues();
        match comment_id {
            Some(id) => {
                let what = format!("reacting to comment {id}");
                let op = Op {
                    what: &what,
                    permission: ISSUES_WRITE,
                };
                let react = issues.create_comment_reaction(self::comment_id(id)?, content);
                self.client.call(op, react).await?;
            }
            None => {
                let what = format!("reacting to {thread}");
                let op = Op {
                    what: &what,
                    permission: ISSUES_WRITE,
                };
                let react = issues.create_reaction(thread.number, content);
                self.client.call(op, react).await?;
            }
        }
        Ok(())
    }

    async fn open_pull_request(&self, request: &PullRequestRequest) -> ForgeResult<PullRequestRef> {
        pulls::open(&self.client, request).await
    }

    async fn review_threads(&self, pull_request: u64) -> ForgeResult<Vec<ReviewThread>> {
        super::review_threads::list(&self.client, self.graphql_url.as_deref(), pull_request).await
    }

    async fn reply_to_review_thread(&self, at: ReviewThreadRef<'_>, body: &str) -> ForgeResult<()> {
        super::review_threads::reply(&self.client, self.graphql_url.as_deref(), at, body).await
    }

    async fn resolve_review_thread(&self, at: ReviewThreadRef<'_>) -> ForgeResult<()> {
        super::review_threads::resolve(&self.client, self.graphql_url.as_deref(), at).await
    }

    async fn update_pull_request_section(
        &self,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        pulls::update_section(&self.client, pull_request.number, section).await
    }

    async fn find_pull_request(&self, key: &str) -> ForgeResult<Option<PullRequestRef>> {
        pulls::find_by_key(&self.client, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_name_wins_over_the_legacy_permission() {
        assert_eq!(
            permission_from(&json!({"permission": "write", "role_name": "maintain"})),
            Permission::Maintain
        );
        assert_eq!(
            permission_from(&json!({"permission": "read"})),
            Permission::Read
        );
        assert_eq!(
            permission_from(&json!({"role_name": "custom-role"})),
            Permission::None
        );
    }

    #[test]
    fn comment_ids_are_numbers() {
        assert_eq!(comment_id(" 42 ").unwrap(), CommentId(42));
        assert!(matches!(
            comment_id("note_7"),
            Err(ForgeError::NotFound { .. })
        ));
    }
}
