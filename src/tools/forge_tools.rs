//! Tools over the `Forge` trait for the thread the run works on: read it, comment on it, and open
//! a pull / merge request with the working-tree changes.
//!
//! Each write is idempotent across kills and re-runs: its key (thread, tool, arguments) goes into
//! the history before the call ([`EffectJournal`]) and as a hidden marker into the body; a call
//! whose key is already recorded first looks for the marker and answers with what it finds.

use super::args::{Args, invalid};
use super::git::{CommitAuthor, Publisher, commit_working_tree, current_branch, free_branch_name};
use super::output::cap_text;
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::forge::marker::{find_comment, key_for, with_marker};
use crate::forge::{Forge, ForgeError, PullRequestRequest};
use crate::history::effects::{EffectJournal, Intent};
use crate::history::entry::EffectKind;
use crate::llm::ToolSpec;
use crate::trigger::{ThreadKind, ThreadRef};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

/// Map a forge failure to the tool error kinds (and so to transient / persistent).
pub fn forge_error(error: ForgeError) -> ToolError {
    let kind = match &error {
        ForgeError::Unauthorized { .. } | ForgeError::Forbidden { .. } => ToolErrorKind::Denied,
        ForgeError::NotFound { .. } => ToolErrorKind::NotFound,
        ForgeError::RateLimited { .. }
        | ForgeError::Server { .. }
        | ForgeError::Connection { .. } => ToolErrorKind::Unavailable,
        ForgeError::Uncertain { .. }
        | ForgeError::Conflict { .. }
        | ForgeError::Unprocessable { .. }
        | ForgeError::Other(_) => ToolErrorKind::Failed,
    };
    ToolError::new(kind, error.to_string())
}

pub struct ReadThreadTool {
    pub forge: Arc<dyn Forge>,
    pub thread: ThreadRef,
    pub output_cap: usize,
}

#[async_trait]
impl Tool for ReadThreadTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_thread".into(),
            description: format!(
                "Read {} (title, description, labels) and all its comments.",
                self.thread
            ),
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        Args::new("read_thread", &arguments)?;
        let thread = self.forge.thread(&self.thread).await.map_err(forge_error)?;
        let comments = self
            .forge
            .comments(&self.thread)
            .await
            .map_err(forge_error)?;
        let mut text = format!(
            "{} {}\nauthor: {}\nlabels: {}\nurl: {}\n\n{}\n",
            self.thread,
            thread.title,
            thread.author,
            if thread.labels.is_empty() {
                "(none)".to_owned()
            } else {
                thread.labels.join(", ")
            },
            thread.url,
            thread.body
        );
        for comment in comments {
            text.push_str(&format!(
                "\n--- comment {} by {}{} at {}\n{}\n",
                comment.id,
                comment.author,
                if comment.author_is_bot { " (bot)" } else { "" },
                comment.created_at.to_rfc3339(),
                comment.body
            ));
        }
        Ok(ToolOutput {
            content: cap_text(&text, self.output_cap),
        })
    }
}

pub struct PostCommentTool {
    pub forge: Arc<dyn Forge>,
    pub thread: ThreadRef,
    /// Where the write's key is recorded before the call; None records nothing.
    pub effects: Option<Arc<dyn EffectJournal>>,
}

/// Record `intent` unless the same one is already recorded.
async fn record(
    effects: Option<&Arc<dyn EffectJournal>>,
    tool: &str,
    intent: Intent,
) -> Result<(), ToolError> {
    let Some(effects) = effects else {
        return Ok(());
    };
    if effects.recorded(&intent.key).as_ref() == Some(&intent) {
        return Ok(());
    }
    effects
        .record(intent)
        .await
        .map_err(|e| ToolError::new(ToolErrorKind::Unavailable, format!("{tool}: {e}")))
}

#[async_trait]
impl Tool for PostCommentTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "post_comment".into(),
            description: format!("Post a comment (Markdown) on {}.", self.thread),
            input_schema: json!({
                "type": "object",
                "properties": {"body": {"type": "string"}},
                "required": ["body"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("post_comment", &arguments)?;
        let body = args.string("body")?;
        if body.trim().is_empty() {
            return Err(invalid("post_comment: `body` is empty"));
        }
        let key = key_for(&[&self.thread.to_string(), "post_comment", body]);
        let recorded = self.effects.as_ref().and_then(|e| e.recorded(&key));
        if recorded.is_some()
            && let Some(comment) = find_comment(self.forge.as_ref(), &self.thread, &key)
                .await
                .map_err(forge_error)?
        {
            return Ok(ToolOutput {
                content: format!(
                    "posted comment {} on {} (an earlier attempt had posted it; not posted again)",
                    comment.id, self.thread
                ),
            });
        }
        record(
            self.effects.as_ref(),
            "post_comment",
            Intent {
                key: key.clone(),
                effect: EffectKind::Comment,
                target: None,
            },
        )
        .await?;
        let comment = self
            .forge
            .post_comment(&self.thread, &with_marker(body, &key))
            .await
            .map_err(forge_error)?;
        Ok(ToolOutput {
            content: format!("posted comment {} on {}", comment.id, self.thread),
        })
    }
}

pub struct OpenPullRequestTool {
    pub forge: Arc<dyn Forge>,
    pub thread: ThreadRef,
    pub workspace: Workspace,
    pub publisher: Arc<dyn Publisher>,
    pub author: CommitAuthor,
    /// Target branch when the call names none; else the checked-out branch, else `main`.
    pub default_base: Option<String>,
    /// Where the write's key is recorded before the push; None records nothing.
    pub effects: Option<Arc<dyn EffectJournal>>,
    /// The branch of the pull request Replan already opened for the thread: changes go there as
    /// a new commit, and no second pull request is opened.
    pub existing_branch: Option<String>,
}

impl OpenPullRequestTool {
    /// The thread's pull request is open already: one more commit on its branch.
    async fn push_to_existing(&self, branch: &str, title: &str) -> ToolResult {
        let repo = self.workspace.root().to_path_buf();
        let message = format!("{title}\n\nChanges made by Replan for {}.", self.thread);
        let author = self.author.clone();
        let protected = self.workspace.protected().entries().to_vec();
        let target = branch.to_owned();
        let commit = tokio::task::spawn_blocking(move || {
            super::git::commit_onto_branch(&repo, &target, &message, &author, &protected)
        })
        .await
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("open_pull_request: {e}")))??;
        let Some(commit) = commit else {
            return Ok(ToolOutput {
                content: format!(
                    "nothing new to commit: `{branch}` already holds these changes; the pull request already open for {} stays as it is (no second pull request)",
                    self.thread
                ),
            });
        };
        record(
            self.effects.as_ref(),
            "open_pull_request",
            Intent {
                key: key_for(&[&self.thread.to_string(), "update_pull_request", &commit]),
                effect: EffectKind::Push,
                target: Some(branch.to_owned()),
            },
        )
        .await?;
        self.publisher
            .publish(self.workspace.root(), branch)
            .await
            .map_err(|e| {
                ToolError::new(
                    e.kind,
                    format!(
                        "committed {commit} to branch `{branch}` but could not publish it: {}",
                        e.message
                    ),
                )
            })?;
        Ok(ToolOutput {
            content: format!(
                "pushed commit {commit} to `{branch}`: the pull request already open for {} is updated (no second pull request)",
                self.thread
            ),
        })
    }
}

/// `replan/issue-5`, `replan/pr-5`, `replan/mr-5`.
pub fn branch_prefix(thread: &ThreadRef) -> String {
    let kind = match thread.kind {
        ThreadKind::Issue => "issue",
        ThreadKind::PullRequest => "pr",
        ThreadKind::MergeRequest => "mr",
    };
    format!("replan/{kind}-{}", thread.number)
}

#[async_trait]
impl Tool for OpenPullRequestTool {
    fn spec(&self) -> ToolSpec {
        let description = match &self.existing_branch {
            Some(branch) => format!(
                "Commit all changes in the working tree to `{branch}`, the branch of the pull / \
                 merge request already open for {}, and push it (the request is updated; no \
                 second one is opened). The working tree is left as it is.",
                self.thread
            ),
            None => format!(
                "Commit all changes in the working tree to a new branch `{}` and open a pull / \
                 merge request for {}. The working tree is left as it is.",
                branch_prefix(&self.thread),
                self.thread
            ),
        };
        ToolSpec {
            name: "open_pull_request".into(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "body": {"type": "string", "description": "Description (Markdown); a closing reference to the issue is added"},
                    "base": {"type": "string", "description": "Target branch (default: the current branch)"}
                },
                "required": ["title"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("open_pull_request", &arguments)?;
        let title = args.string("title")?.trim().to_owned();
        if title.is_empty() {
            return Err(invalid("open_pull_request: `title` is empty"));
        }
        let body = args.opt_string("body")?.unwrap_or("").trim().to_owned();
        let base_arg = args.opt_string("base")?.map(str::to_owned);
        if let Some(branch) = &self.existing_branch {
            return self.push_to_existing(branch, &title).await;
        }

        let key = key_for(&[
            &self.thread.to_string(),
            "open_pull_request",
            &title,
            &body,
            base_arg.as_deref().unwrap_or(""),
        ]);
        let recorded = self.effects.as_ref().and_then(|e| e.recorded(&key));
        if recorded.is_some()
            && let Some(opened) = self
                .forge
                .find_pull_request(&key)
                .await
                .map_err(forge_error)?
        {
            return Ok(ToolOutput {
                content: format!(
                    "opened pull request #{} ({}) (an earlier attempt had opened it; not opened again)",
                    opened.number, opened.url
                ),
            });
        }

        let repo = self.workspace.root().to_path_buf();
        let prefix = branch_prefix(&self.thread);
        let message = format!("{title}\n\nChanges made by Replan for {}.", self.thread);
        let author = self.author.clone();
        let default_base = self.default_base.clone();
        // An earlier attempt's branch is pushed and proposed again rather than a second one made.
        let earlier = recorded.and_then(|intent| intent.target);
        let protected = self.workspace.protected().entries().to_vec();
        let (branch, commit, base) = tokio::task::spawn_blocking(move || {
            let reused = earlier.and_then(|branch| {
                super::git::git(
                    &repo,
                    &[
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        &format!("refs/heads/{branch}"),
                    ],
                    &[],
                )
                .ok()
                .map(|commit| (branch, commit.trim().to_owned()))
            });
            let (branch, commit) = match reused {
                Some(found) => found,
                None => {
                    let branch = free_branch_name(&repo, &prefix);
                    let commit =
                        commit_working_tree(&repo, &branch, &message, &author, &protected)?;
                    (branch, commit)
                }
            };
            let base = base_arg
                .or(default_base)
                .or_else(|| current_branch(&repo))
                .unwrap_or_else(|| "main".to_owned());
            Ok::<_, ToolError>((branch, commit, base))
        })
        .await
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("open_pull_request: {e}")))??;

        record(
            self.effects.as_ref(),
            "open_pull_request",
            Intent {
                key: key.clone(),
                effect: EffectKind::PullRequest,
                target: Some(branch.clone()),
            },
        )
        .await?;
        self.publisher
            .publish(self.workspace.root(), &branch)
            .await
            .map_err(|e| {
                ToolError::new(
                    e.kind,
                    format!(
                        "committed {commit} to branch `{branch}` but could not publish it: {}",
                        e.message
                    ),
                )
            })?;
        let reference = match self.thread.kind {
            ThreadKind::Issue => format!("Closes #{}", self.thread.number),
            _ => format!("Follow-up to {}", self.thread),
        };
        let body = if body.is_empty() {
            reference
        } else {
            format!("{body}\n\n{reference}")
        };
        let request = PullRequestRequest {
            head: branch.clone(),
            base,
            title,
            body: with_marker(&body, &key),
        };
        let opened = self.forge.open_pull_request(&request).await.map_err(|e| {
            let error = forge_error(e);
            ToolError::new(
                error.kind,
                format!(
                    "branch `{branch}` ({commit}) was created but the pull request could not \
                         be opened: {}",
                    error.message
                ),
            )
        })?;
        Ok(ToolOutput {
            content: format!(
                "opened pull request #{} ({}) from `{branch}` into `{}` (commit {commit})",
                opened.number, opened.url, request.base
            ),
        })
    }
}
