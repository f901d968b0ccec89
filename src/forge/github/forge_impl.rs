//! The [`Forge`] trait over the GitHub REST API. Comment edits use PATCH (GitHub documents
//! PATCH; a POST to the comment URL is not an edit).

use super::client::{GitHubClient, Op};
use super::pulls;
use crate::forge::{
    Comment, Forge, ForgeError, Permission, PullRequestRef, PullRequestRequest, Reaction, Thread,
    marker,
};
use crate::http::Lookup;
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
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

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn time(value: &Value, key: &str) -> DateTime<Utc> {
    value
        .get(key)
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(Utc::now, |t| t.with_timezone(&Utc))
}

fn login(user: Option<&Value>) -> (String, bool) {
    let Some(user) = user else {
        return (String::new(), false);
    };
    let name = text(user, "login");
    let bot = user.get("type").and_then(Value::as_str) == Some("Bot") || name.ends_with("[bot]");
    (name, bot)
}

pub(crate) fn comment_from(value: &Value) -> Result<Comment, ForgeError> {
    let id = match value.get("id") {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(ForgeError::Other(
                "GitHub returned a comment without an id".into(),
            ));
        }
    };
    let (author, author_is_bot) = login(value.get("user"));
    Ok(Comment {
        id,
        author,
        author_is_bot,
        body: text(value, "body"),
        created_at: time(value, "created_at"),
        updated_at: time(value, "updated_at"),
    })
}

fn reaction_content(reaction: Reaction) -> &'static str {
    match reaction {
        Reaction::Eyes => "eyes",
        Reaction::ThumbsUp => "+1",
        Reaction::Rocket => "rocket",
        Reaction::Confused => "confused",
    }
}

/// GitHub's `role_name` (or the legacy `permission`) as our permission; unknown roles fail closed.
fn permission_from(body: &Value) -> Permission {
    let role = body
        .get("role_name")
        .and_then(Value::as_str)
        .or_else(|| body.get("permission").and_then(Value::as_str))
        .unwrap_or("none");
    match role.to_ascii_lowercase().as_str() {
        "admin" => Permission::Admin,
        "maintain" => Permission::Maintain,
        "write" | "push" => Permission::Write,
        "triage" => Permission::Triage,
        "read" | "pull" => Permission::Read,
        _ => Permission::None,
    }
}

impl GitHubForge {
    /// One comment fetched again (the gate checks the current text and edit time).
    async fn issue_comment(&self, comment_id: &str) -> Result<Comment, ForgeError> {
        let path = self
            .client
            .repo_path(&format!("/issues/comments/{comment_id}"));
        let what = format!("reading comment {comment_id}");
        let body = self
            .client
            .get(
                &path,
                Op {
                    what: &what,
                    permission: ISSUES_READ,
                },
            )
            .await?;
        comment_from(&body)
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

    async fn thread(&self, thread: &ThreadRef) -> Result<Thread, ForgeError> {
        let path = self.client.repo_path(&format!("/issues/{}", thread.number));
        let what = format!("reading {thread}");
        let body = self
            .client
            .get(
                &path,
                Op {
                    what: &what,
                    permission: ISSUES_READ,
                },
            )
            .await?;
        let labels = body
            .get("labels")
            .and_then(Value::as_array)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|l| l.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Thread {
            thread: *thread,
            title: text(&body, "title"),
            body: text(&body, "body"),
            author: login(body.get("user")).0,
            url: text(&body, "html_url"),
            labels,
            closed: text(&body, "state") == "closed",
        })
    }

    async fn comment(&self, _thread: &ThreadRef, id: &str) -> Result<Option<Comment>, ForgeError> {
        match self.issue_comment(id).await {
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
        match self.client.post(url, &query, op).await {
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

    async fn comments(&self, thread: &ThreadRef) -> Result<Vec<Comment>, ForgeError> {
        let path = self
            .client
            .repo_path(&format!("/issues/{}/comments", thread.number));
        let what = format!("listing the comments of {thread}");
        let items = self
            .client
            .get_all(
                &path,
                Op {
                    what: &what,
                    permission: ISSUES_READ,
                },
            )
            .await?;
        items.iter().map(comment_from).collect()
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> Result<Comment, ForgeError> {
        let path = self
            .client
            .repo_path(&format!("/issues/{}/comments", thread.number));
        let what = format!("posting a comment on {thread}");
        let op = Op {
            what: &what,
            permission: ISSUES_WRITE,
        };
        let key = marker::key_in(body).map(str::to_owned);
        let lookup: Lookup<'_> = Box::new(|| {
            let key = key.clone();
            let path = path.clone();
            Box::pin(async move {
                let Some(key) = key else {
                    return Err("the comment carries no idempotency marker to look for".to_owned());
                };
                let items = self
                    .client
                    .get_all(&path, op)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(items.into_iter().find(|c| {
                    c.get("body")
                        .and_then(Value::as_str)
                        .and_then(marker::key_in)
                        == Some(key.as_str())
                }))
            })
        });
        let reply = self
            .client
            .create(&path, &json!({ "body": body }), op, lookup)
            .await?;
        comment_from(&reply)
    }

    async fn update_comment(
        &self,
        thread: &ThreadRef,
        comment_id: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        let path = self
            .client
            .repo_path(&format!("/issues/comments/{comment_id}"));
        let what = format!("editing comment {comment_id} on {thread}");
        self.client
            .patch(
                &path,
                &json!({ "body": body }),
                Op {
                    what: &what,
                    permission: ISSUES_WRITE,
                },
            )
            .await?;
        Ok(())
    }

    async fn permission(&self, user: &str) -> Result<Permission, ForgeError> {
        let path = self
            .client
            .repo_path(&format!("/collaborators/{user}/permission"));
        let what = format!("checking the repository permission of {user}");
        match self
            .client
            .get(
                &path,
                Op {
                    what: &what,
                    permission: "contents: read (metadata)",
                },
            )
            .await
        {
            Ok(body) => Ok(permission_from(&body)),
            // Not a collaborator (or not a user): no access, which the gate refuses.
            Err(ForgeError::NotFound { .. }) => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }

    async fn react(
        &self,
        thread: &ThreadRef,
        comment_id: Option<&str>,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        let (path, what) = match comment_id {
            Some(id) => (
                self.client
                    .repo_path(&format!("/issues/comments/{id}/reactions")),
                format!("reacting to comment {id}"),
            ),
            None => (
                self.client
                    .repo_path(&format!("/issues/{}/reactions", thread.number)),
                format!("reacting to {thread}"),
            ),
        };
        self.client
            .post(
                &path,
                &json!({ "content": reaction_content(reaction) }),
                Op {
                    what: &what,
                    permission: ISSUES_WRITE,
                },
            )
            .await?;
        Ok(())
    }

    async fn open_pull_request(
        &self,
        request: &PullRequestRequest,
    ) -> Result<PullRequestRef, ForgeError> {
        pulls::open(&self.client, request).await
    }

    async fn find_pull_request(&self, key: &str) -> Result<Option<PullRequestRef>, ForgeError> {
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
    fn bots_are_recognised_by_type_or_suffix() {
        let c = comment_from(
            &json!({"id": 5, "body": "x", "user": {"login": "renovate[bot]", "type": "User"}}),
        )
        .unwrap();
        assert!(c.author_is_bot);
        assert_eq!(c.id, "5");
    }
}
