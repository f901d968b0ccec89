//! [`HistoryBackend`] on a GitLab branch through the REST API: the files API reads a thread's
//! JSONL file with its `last_commit_id`, and the commits API writes it back with that id, which
//! GitLab checks per file (400 "The file has changed since you started editing it"). That check
//! is the compare-and-swap: on a conflict the file is read again and our entries are appended
//! after the new last line, renumbered, so neither writer loses a line.
//!
//! ## Creating the branch
//! GitLab's commits API cannot make a parentless (orphan) commit in a repository that already
//! has commits: a new branch must start from an existing branch or commit (`start_branch` /
//! `start_sha`), and there is no git-data API as on GitHub. So when the history branch does not
//! exist yet, Replan creates it in one commit that starts from the default branch, deletes every
//! file of that branch and adds the history file: the branch then holds only history, and its
//! first commit's parent is the default branch's head (that is the only link). Projects that want
//! a truly orphan branch create it once by hand (see docs/gitlab.md); Replan uses any existing
//! branch as it is.

use super::client::{GitLabClient, encode_segment};
use crate::forge::ForgeError;
use crate::history::backend::{AppendOutcome, HistoryBackend, HistoryError, LoadedHistory};
use crate::history::{Entry, jsonl};
use crate::trigger::{ThreadKind, ThreadRef};
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::OnceCell;

#[derive(Debug)]
pub struct GitLabHistory {
    client: GitLabClient,
    branch: String,
    directory: String,
    /// Attempts of one append before giving up on a branch that keeps moving.
    pub max_attempts: u32,
    default_branch: OnceCell<String>,
}

/// A thread's file as read at the branch head.
struct FileState {
    text: String,
    /// `None` when the file does not exist on the branch.
    last_commit_id: Option<String>,
    branch_exists: bool,
}

fn backend(e: ForgeError) -> HistoryError {
    HistoryError::Backend(e.to_string())
}

impl GitLabHistory {
    pub fn new(client: GitLabClient, branch: &str, directory: &str) -> Self {
        GitLabHistory {
            client,
            branch: branch.to_owned(),
            directory: directory.trim_end_matches('/').to_owned(),
            max_attempts: 6,
            default_branch: OnceCell::new(),
        }
    }

    async fn default_branch(&self) -> Result<String, HistoryError> {
        self.default_branch
            .get_or_try_init(|| async {
                let project = self
                    .client
                    .get(&self.client.project_path(""), "reading the project")
                    .await
                    .map_err(backend)?;
                project.json["default_branch"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        HistoryError::Backend(
                            "the GitLab project has no default branch to start the history branch from; push a first commit".into(),
                        )
                    })
            })
            .await
            .cloned()
    }

    async fn branch_exists(&self) -> Result<bool, HistoryError> {
        let path = self.client.project_path(&format!(
            "/repository/branches/{}",
            encode_segment(&self.branch)
        ));
        match self
            .client
            .get(&path, &format!("reading the branch {}", self.branch))
            .await
        {
            Ok(_) => Ok(true),
            Err(ForgeError::NotFound { .. }) => Ok(false),
            Err(e) => Err(backend(e)),
        }
    }

    async fn read(&self, path: &str) -> Result<FileState, HistoryError> {
        let url = self.client.project_path(&format!(
            "/repository/files/{}?ref={}",
            encode_segment(path),
            encode_segment(&self.branch)
        ));
        let what = format!("reading {path} on {}", self.branch);
        match self.client.get(&url, &what).await {
            Ok(file) => {
                let content = file.json["content"].as_str().unwrap_or("");
                let bytes = match file.json["encoding"].as_str() {
                    Some("base64") | None => base64::engine::general_purpose::STANDARD
                        .decode(content.trim())
                        .map_err(|e| {
                            HistoryError::Backend(format!(
                                "GitLab sent {path} in invalid base64: {e}"
                            ))
                        })?,
                    Some(_) => content.as_bytes().to_vec(),
                };
                Ok(FileState {
                    // A history file is UTF-8 we wrote; a damaged byte must not make it unreadable.
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                    last_commit_id: file.json["last_commit_id"].as_str().map(str::to_owned),
                    branch_exists: true,
                })
            }
            Err(ForgeError::NotFound { .. }) => Ok(FileState {
                text: String::new(),
                last_commit_id: None,
                branch_exists: self.branch_exists().await?,
            }),
            Err(e) => Err(backend(e)),
        }
    }

    /// Every file on `reference` under `dir` (the whole tree when `dir` is empty).
    async fn files(&self, reference: &str, dir: &str) -> Result<Vec<String>, ForgeError> {
        let query = {
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            query.append_pair("ref", reference);
            query.append_pair("recursive", "true");
            if !dir.is_empty() {
                query.append_pair("path", dir);
            }
            query.finish()
        };
        let url = self
            .client
            .project_path(&format!("/repository/tree?{query}"));
        let entries = self
            .client
            .get_all(&url, &format!("listing the files of {reference}"))
            .await?;
        Ok(entries
            .iter()
            .filter(|e| e["type"] == "blob")
            .filter_map(|e| e["path"].as_str().map(str::to_owned))
            .collect())
    }

    /// Commits `new_text(current)` as the thread's file, starting again from a fresh read
    /// whenever another writer got there first. `new_text` returns the content (None deletes
    /// the file) and the first `seq` it assigned.
    async fn commit_loop(
        &self,
        thread: &ThreadRef,
        message: &str,
        new_text: impl Fn(&str) -> (Option<String>, u64) + Send + Sync,
    ) -> Result<AppendOutcome, HistoryError> {
        let path = thread.history_path(&self.directory);
        let mut conflicts = 0;
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                // Two runs that collided should not collide again in lockstep.
                let millis = fastrand::u64(20..=100) * u64::from(attempt);
                tokio::time::sleep(Duration::from_millis(millis)).await;
            }
            let current = self.read(&path).await?;
            let (text, first_seq) = new_text(&current.text);
            let mut actions = Vec::new();
            match (&text, &current.last_commit_id) {
                (Some(text), Some(last)) => actions.push(json!({
                    "action": "update", "file_path": path, "content": text, "last_commit_id": last,
                })),
                (Some(text), None) => actions.push(json!({
                    "action": "create", "file_path": path, "content": text,
                })),
                (None, Some(last)) => actions.push(json!({
                    "action": "delete", "file_path": path, "last_commit_id": last,
                })),
                (None, None) => {
                    return Ok(AppendOutcome {
                        commit: None,
                        conflicts,
                        first_seq,
                    });
                }
            }
            let mut body = json!({
                "branch": self.branch,
                "commit_message": message,
            });
            if !current.branch_exists {
                let start = self.default_branch().await?;
                let inherited = self.files(&start, "").await.map_err(backend)?;
                actions.extend(
                    inherited
                        .into_iter()
                        .filter(|file| *file != path)
                        .map(|file| json!({ "action": "delete", "file_path": file })),
                );
                body["start_branch"] = json!(start);
            }
            body["actions"] = Value::Array(actions);
            let what = format!("committing {path} to {}", self.branch);
            match self
                .client
                .post(
                    &self.client.project_path("/repository/commits"),
                    &body,
                    &what,
                )
                .await
            {
                Ok(commit) => {
                    return Ok(AppendOutcome {
                        commit: commit.json["id"].as_str().map(str::to_owned),
                        conflicts,
                        first_seq,
                    });
                }
                Err(ForgeError::Conflict { message, .. }) => {
                    tracing::info!("{what}: {message}; reading the file again");
                    conflicts += 1;
                }
                // The commit may have landed before the failure: if the file now starts with
                // exactly what we wrote, it did, and writing it again would duplicate lines.
                Err(
                    e @ (ForgeError::Server { .. }
                    | ForgeError::Connection { .. }
                    | ForgeError::Uncertain { .. }),
                ) => {
                    tracing::warn!("{e}; checking whether the commit landed");
                    let after = self.read(&path).await?;
                    if let Some(text) = &text
                        && after.last_commit_id.is_some()
                        && after.last_commit_id != current.last_commit_id
                        && after.text.starts_with(text.as_str())
                    {
                        return Ok(AppendOutcome {
                            commit: after.last_commit_id,
                            conflicts,
                            first_seq,
                        });
                    }
                    conflicts += 1;
                }
                Err(e) => return Err(backend(e)),
            }
        }
        Err(HistoryError::ConflictRetriesExhausted {
            path,
            attempts: self.max_attempts,
        })
    }
}

#[async_trait]
impl HistoryBackend for GitLabHistory {
    async fn load(&self, thread: &ThreadRef) -> Result<LoadedHistory, HistoryError> {
        let state = self.read(&thread.history_path(&self.directory)).await?;
        Ok(LoadedHistory {
            text: state.text,
            version: state.last_commit_id,
        })
    }

    async fn append(
        &self,
        thread: &ThreadRef,
        entries: &[Entry],
    ) -> Result<AppendOutcome, HistoryError> {
        let path = thread.history_path(&self.directory);
        let message = format!(
            "replan: {} {} to {path}",
            entries.len(),
            if entries.len() == 1 {
                "entry"
            } else {
                "entries"
            }
        );
        self.commit_loop(thread, &message, |old| {
            let mut mine = entries.to_vec();
            let after = jsonl::max_seq(old);
            (Some(jsonl::append_text(old, &mut mine, after)), after + 1)
        })
        .await
    }

    async fn threads(&self) -> Result<Vec<ThreadRef>, HistoryError> {
        let files = match self.files(&self.branch, &self.directory).await {
            Ok(files) => files,
            Err(ForgeError::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(backend(e)),
        };
        let mut threads: Vec<ThreadRef> = files
            .iter()
            .filter_map(|path| {
                let rest = path.strip_prefix(&self.directory)?.strip_prefix('/')?;
                let (kind, file) = rest.split_once('/')?;
                Some(ThreadRef {
                    kind: ThreadKind::from_dir_name(kind)?,
                    number: file.strip_suffix(".jsonl")?.parse().ok()?,
                })
            })
            .collect();
        threads.sort();
        threads.dedup();
        Ok(threads)
    }

    async fn rewrite(&self, thread: &ThreadRef, text: &str) -> Result<AppendOutcome, HistoryError> {
        let message = format!("replan: rewrite {}", thread.history_path(&self.directory));
        self.commit_loop(thread, &message, |_| {
            (
                (!text.is_empty()).then(|| text.to_owned()),
                jsonl::max_seq(text),
            )
        })
        .await
    }
}
