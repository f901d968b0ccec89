//! [`Forge`] for GitLab issues and merge requests: notes (listed oldest first, edited with
//! `PUT`), member access levels, award emoji and merge requests.

use super::client::GitLabClient;
use crate::forge::marker;
use crate::forge::{
    Comment, CommentRef, Forge, ForgeError, ForgeResult, Permission, PullRequestRef,
    PullRequestRequest, Reaction, ReactionTarget, Thread,
};
use crate::http::Lookup;
use crate::trigger::gitlab_event::is_gitlab_bot;
use crate::trigger::{ForgeKind, ThreadKind, ThreadRef};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct GitLabForge {
    client: GitLabClient,
    run_url: Option<String>,
}

impl GitLabForge {
    pub fn new(client: GitLabClient, run_url: Option<String>) -> Self {
        GitLabForge { client, run_url }
    }

    pub fn client(&self) -> &GitLabClient {
        &self.client
    }

    fn thread_path(&self, thread: &ThreadRef) -> Result<String, ForgeError> {
        let kind = match thread.kind {
            ThreadKind::Issue => "issues",
            ThreadKind::MergeRequest => "merge_requests",
            ThreadKind::PullRequest => {
                return Err(ForgeError::Other(format!(
                    "{thread} is a GitHub pull request; GitLab threads are issues and merge requests"
                )));
            }
        };
        Ok(self
            .client
            .project_path(&format!("/{kind}/{}", thread.number)))
    }

    /// The member's access level in the project (inherited memberships included); 0 when the
    /// user is not a member or does not exist.
    pub async fn access_level(&self, username: &str) -> Result<u32, ForgeError> {
        let username = username.trim().trim_start_matches('@');
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("username", username)
            .finish();
        let users = self
            .client
            .get(
                &format!("/users?{query}"),
                &format!("looking up the user {username}"),
            )
            .await?;
        let Some(id) = users
            .json
            .as_array()
            .into_iter()
            .flatten()
            .find(|u| {
                u["username"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(username))
            })
            .and_then(|u| u["id"].as_u64())
        else {
            return Ok(0);
        };
        let path = self.client.project_path(&format!("/members/all/{id}"));
        match self
            .client
            .get(&path, &format!("the project membership of {username}"))
            .await
        {
            Ok(member) => member.json["access_level"]
                .as_u64()
                .map(|level| level as u32)
                .ok_or_else(|| {
                    ForgeError::Other(format!(
                        "GitLab's membership of {username} has no access_level"
                    ))
                }),
            Err(ForgeError::NotFound { .. }) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// An open merge request from `head` into `base`, if one exists (a rerun opens none twice).
    async fn existing_merge_request(
        &self,
        head: &str,
        base: &str,
    ) -> Result<Option<PullRequestRef>, ForgeError> {
        Ok(self
            .existing_merge_request_json(head, base)
            .await?
            .as_ref()
            .and_then(merge_request_ref))
    }

    async fn existing_merge_request_json(
        &self,
        head: &str,
        base: &str,
    ) -> Result<Option<Value>, ForgeError> {
        let list = self.open_merge_requests(head, Some(base)).await?;
        Ok(list.into_iter().find(|mr| merge_request_ref(mr).is_some()))
    }

    /// The project's open merge requests from `source` (into `target`, when given).
    async fn open_merge_requests(
        &self,
        source: &str,
        target: Option<&str>,
    ) -> Result<Vec<Value>, ForgeError> {
        // A block, so the serializer (not `Send`) is gone before the request is awaited.
        let query = {
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            query
                .append_pair("state", "opened")
                .append_pair("source_branch", source);
            if let Some(target) = target {
                query.append_pair("target_branch", target);
            }
            query.finish()
        };
        self.client
            .get_all(
                &self
                    .client
                    .project_path(&format!("/merge_requests?{query}")),
                "listing open merge requests",
            )
            .await
    }
}

fn emoji_name(reaction: Reaction) -> &'static str {
    match reaction {
        Reaction::Eyes => "eyes",
        Reaction::ThumbsUp => "thumbsup",
        Reaction::Rocket => "rocket",
        Reaction::Confused => "confused",
    }
}

fn time(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(Utc::now, |t| t.with_timezone(&Utc))
}

fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn note_to_comment(note: &Value) -> Comment {
    let author = note["author"]["username"].as_str().unwrap_or("").to_owned();
    Comment {
        id: id_text(&note["id"]),
        author_is_bot: note["author"]["bot"].as_bool().unwrap_or(false) || is_gitlab_bot(&author),
        author,
        body: note["body"].as_str().unwrap_or("").to_owned(),
        created_at: time(&note["created_at"]),
        updated_at: time(&note["updated_at"]),
    }
}

fn merge_request_ref(mr: &Value) -> Option<PullRequestRef> {
    Some(PullRequestRef {
        number: mr["iid"].as_u64()?,
        url: mr["web_url"].as_str().unwrap_or("").to_owned(),
    })
}

#[async_trait]
impl Forge for GitLabForge {
    fn kind(&self) -> ForgeKind {
        ForgeKind::GitLab
    }

    fn run_url(&self) -> Option<String> {
        self.run_url.clone()
    }

    async fn thread(&self, thread: &ThreadRef) -> ForgeResult<Thread> {
        let path = self.thread_path(thread)?;
        let item = self
            .client
            .get(&path, &format!("reading {thread}"))
            .await?
            .json;
        Ok(Thread {
            thread: *thread,
            title: item["title"].as_str().unwrap_or("").to_owned(),
            body: item["description"].as_str().unwrap_or("").to_owned(),
            author: item["author"]["username"].as_str().unwrap_or("").to_owned(),
            url: item["web_url"].as_str().unwrap_or("").to_owned(),
            labels: item["labels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| l.as_str().or_else(|| l["name"].as_str()))
                .map(str::to_owned)
                .collect(),
            closed: matches!(item["state"].as_str(), Some("closed" | "merged")),
        })
    }

    /// People's notes, oldest first. GitLab lists newest first unless told otherwise; system
    /// notes ("added label …") are not comments and are left out.
    async fn comments(&self, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        let path = format!(
            "{}/notes?sort=asc&order_by=created_at",
            self.thread_path(thread)?
        );
        let notes = self
            .client
            .get_all(&path, &format!("listing the notes of {thread}"))
            .await?;
        Ok(notes
            .iter()
            .filter(|n| !n["system"].as_bool().unwrap_or(false))
            .map(note_to_comment)
            .collect())
    }

    async fn comment(&self, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        let CommentRef { thread, id } = at;
        let path = format!("{}/notes/{id}", self.thread_path(thread)?);
        match self.client.get(&path, &format!("reading note {id}")).await {
            Ok(note) => Ok(Some(note_to_comment(&note.json))),
            Err(ForgeError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The token's user (`GET /user`).
    async fn own_login(&self) -> Option<String> {
        match self
            .client
            .get("/user", "looking up the token's user")
            .await
        {
            Ok(user) => user.json["username"].as_str().map(str::to_owned),
            Err(e) => {
                tracing::info!("could not look up the token's user: {e}");
                None
            }
        }
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> ForgeResult<Comment> {
        let path = format!("{}/notes", self.thread_path(thread)?);
        let what = format!("posting a note on {thread}");
        let key = marker::key_in(body).map(str::to_owned);
        let (listing, listed) = (path.as_str(), what.as_str());
        let lookup: Lookup<'_> = Box::new(move || {
            let key = key.clone();
            Box::pin(async move {
                let Some(key) = key else {
                    return Err("the note carries no idempotency marker to look for".to_owned());
                };
                let notes = self
                    .client
                    .get_all(listing, listed)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(notes
                    .into_iter()
                    .find(|n| n["body"].as_str().and_then(marker::key_in) == Some(key.as_str())))
            })
        });
        let note = self
            .client
            .create(&path, &json!({ "body": body }), &what, lookup)
            .await?;
        Ok(note_to_comment(&note.json))
    }

    /// GitLab edits notes with `PUT` (a `POST` or `PATCH` there is a 405).
    async fn update_comment(&self, at: CommentRef<'_>, body: &str) -> ForgeResult<()> {
        let CommentRef {
            thread,
            id: comment_id,
        } = at;
        let path = format!("{}/notes/{comment_id}", self.thread_path(thread)?);
        self.client
            .put(
                &path,
                &json!({ "body": body }),
                &format!("updating note {comment_id} on {thread}"),
            )
            .await?;
        Ok(())
    }

    /// The member's exact access level, which the gate compares with
    /// `gitlab.min_access_level`.
    async fn branch_tip(&self, branch: &str) -> ForgeResult<Option<String>> {
        super::pipelines::branch_tip(&self.client, branch).await
    }

    async fn ci_failures(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Vec<crate::forge::ci::CiFailure>> {
        super::pipelines::ci_failures(&self.client, run).await
    }

    async fn confirm_ci_run(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Option<crate::trigger::CiRun>> {
        super::pipelines::read_back(&self.client, run).await
    }

    async fn latest_ci_run(&self, branch: &str) -> ForgeResult<Option<crate::trigger::CiRun>> {
        let list = self.open_merge_requests(branch, None).await?;
        let Some(iid) = list.iter().find_map(|mr| mr["iid"].as_u64()) else {
            return Ok(None);
        };
        super::pipelines::latest_merge_request_pipeline(&self.client, iid, branch).await
    }

    async fn permission(&self, user: &str) -> ForgeResult<Permission> {
        Ok(Permission::GitLabAccess(self.access_level(user).await?))
    }

    async fn react(&self, target: ReactionTarget<'_>, reaction: Reaction) -> ForgeResult<()> {
        let ReactionTarget { thread, comment_id } = target;
        let target = match comment_id {
            Some(id) => format!("{}/notes/{id}/award_emoji", self.thread_path(thread)?),
            None => format!("{}/award_emoji", self.thread_path(thread)?),
        };
        let name = emoji_name(reaction);
        match self
            .client
            .post_repeatable(
                &target,
                &json!({ "name": name }),
                &format!("awarding :{name}: on {thread}"),
            )
            .await
        {
            Ok(_) => Ok(()),
            // GitLab answers a repeated award with 404 "has already been taken".
            Err(ForgeError::NotFound { what }) if what.contains("already been taken") => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Opens a merge request that deletes its source branch when merged. The body carries the
    /// closing pattern (`Closes #n`), which GitLab honours like GitHub does.
    async fn open_pull_request(&self, request: &PullRequestRequest) -> ForgeResult<PullRequestRef> {
        let body = json!({
            "source_branch": request.head,
            "target_branch": request.base,
            "title": request.title,
            "description": request.body,
            "remove_source_branch": true,
        });
        let what = format!(
            "opening a merge request from {} into {}",
            request.head, request.base
        );
        let lookup: Lookup<'_> = Box::new(|| {
            Box::pin(async move {
                self.existing_merge_request_json(&request.head, &request.base)
                    .await
                    .map_err(|e| e.to_string())
            })
        });
        match self
            .client
            .create(
                &self.client.project_path("/merge_requests"),
                &body,
                &what,
                lookup,
            )
            .await
        {
            Ok(created) => merge_request_ref(&created.json).ok_or_else(|| {
                ForgeError::Other(format!("GitLab answered {what} without an iid"))
            }),
            Err(ForgeError::Conflict { .. }) => self
                .existing_merge_request(&request.head, &request.base)
                .await?
                .ok_or_else(|| {
                    ForgeError::Other(format!(
                        "GitLab refused {what} as a duplicate, but no open merge request from {} was found",
                        request.head
                    ))
                }),
            Err(e) => Err(e),
        }
    }

    async fn review_threads(
        &self,
        pull_request: u64,
    ) -> ForgeResult<Vec<crate::trigger::ReviewThread>> {
        super::discussions::list(&self.client, pull_request).await
    }

    async fn reply_to_review_thread(
        &self,
        at: crate::forge::ReviewThreadRef<'_>,
        body: &str,
    ) -> ForgeResult<()> {
        super::discussions::reply(&self.client, at, body).await
    }

    async fn resolve_review_thread(
        &self,
        at: crate::forge::ReviewThreadRef<'_>,
    ) -> ForgeResult<()> {
        super::discussions::resolve(&self.client, at).await
    }

    /// The description is read, spliced and written back (`PUT`), the text outside the
    /// markers as it was.
    async fn update_pull_request_section(
        &self,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        let iid = pull_request.number;
        let path = self.client.project_path(&format!("/merge_requests/{iid}"));
        let what = format!("updating the Verification section of merge request !{iid}");
        let current = self.client.get(&path, &what).await?;
        let body = current.json["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let updated = crate::forge::pr_section::splice(&body, section);
        if updated != body {
            self.client
                .put(&path, &json!({ "description": updated }), &what)
                .await?;
        }
        Ok(())
    }

    async fn find_pull_request(&self, key: &str) -> ForgeResult<Option<PullRequestRef>> {
        let list = self
            .client
            .get_all(
                &self.client.project_path("/merge_requests?state=all"),
                "looking for a merge request opened by an earlier attempt",
            )
            .await?;
        Ok(list
            .iter()
            .filter(|mr| mr["description"].as_str().and_then(marker::key_in) == Some(key))
            .find_map(merge_request_ref))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_become_comments_and_bots_are_recognised() {
        let note = json!({
            "id": 7, "body": "hi",
            "author": {"username": "project_101_bot_abc", "bot": false},
            "created_at": "2024-05-01T12:00:00.000Z", "updated_at": "2024-05-01T12:00:05.000Z"
        });
        let c = note_to_comment(&note);
        assert_eq!(c.id, "7");
        assert!(c.author_is_bot);
        assert_eq!(c.updated_at.timestamp() - c.created_at.timestamp(), 5);
    }
}
