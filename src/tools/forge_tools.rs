//! Tools over the `Forge` trait for the thread the run works on: read it, comment on it, and open
//! a pull / merge request with the working-tree changes.

use super::args::{Args, invalid};
use super::git::{CommitAuthor, Publisher, commit_working_tree, current_branch, free_branch_name};
use super::output::cap_text;
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::forge::{Forge, ForgeError, PullRequestRequest};
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
        ForgeError::Conflict { .. } | ForgeError::Unprocessable { .. } | ForgeError::Other(_) => {
            ToolErrorKind::Failed
        }
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
        let comment = self
            .forge
            .post_comment(&self.thread, body)
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
        ToolSpec {
            name: "open_pull_request".into(),
            description: format!(
                "Commit all changes in the working tree to a new branch `{}` and open a pull / \
                 merge request for {}. The working tree is left as it is.",
                branch_prefix(&self.thread),
                self.thread
            ),
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

        let repo = self.workspace.root().to_path_buf();
        let prefix = branch_prefix(&self.thread);
        let message = format!("{title}\n\nChanges made by Replan for {}.", self.thread);
        let author = self.author.clone();
        let default_base = self.default_base.clone();
        let protected = self.workspace.protected().entries().to_vec();
        let (branch, commit, base) = tokio::task::spawn_blocking(move || {
            let branch = free_branch_name(&repo, &prefix);
            let commit = commit_working_tree(&repo, &branch, &message, &author, &protected)?;
            let base = base_arg
                .or(default_base)
                .or_else(|| current_branch(&repo))
                .unwrap_or_else(|| "main".to_owned());
            Ok::<_, ToolError>((branch, commit, base))
        })
        .await
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("open_pull_request: {e}")))??;

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
            body,
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
