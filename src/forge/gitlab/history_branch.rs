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
use crate::history::backend::{
    AppendOutcome, HistoryBackend, HistoryError, HistoryResult, LoadedHistory,
};
use crate::history::branch_write;
use crate::history::cas::{BranchFile, Retry, Snapshot, Written};
use crate::history::{Entry, jsonl};
use crate::trigger::{ThreadKind, ThreadRef};
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use std::sync::Mutex;
use tokio::sync::OnceCell;

#[derive(Debug)]
pub struct GitLabHistory {
    client: GitLabClient,
    branch: String,
    directory: String,
    /// How long an append keeps trying while other runs change the file.
    pub retry: Retry,
    default_branch: OnceCell<String>,
    /// The file as our own last read or write left it: the next append of the run starts from it
    /// (a stale copy only costs one refused commit).
    cache: Mutex<Option<(String, FileState)>>,
}

/// A thread's file as read at the branch head.
#[derive(Debug, Clone)]
pub struct FileState {
    bytes: Vec<u8>,
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
            retry: Retry::default(),
            default_branch: OnceCell::new(),
            cache: Mutex::new(None),
        }
    }

    fn remember(&self, path: &str, state: &FileState) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((path.to_owned(), state.clone()));
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

    async fn fetch_file(&self, path: &str) -> Result<FileState, HistoryError> {
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
                    bytes,
                    last_commit_id: file.json["last_commit_id"].as_str().map(str::to_owned),
                    branch_exists: true,
                })
            }
            Err(ForgeError::NotFound { .. }) => Ok(FileState {
                bytes: Vec::new(),
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
}

#[async_trait]
impl BranchFile for GitLabHistory {
    type Base = FileState;

    async fn read(&self, path: &str) -> Result<Snapshot<FileState>, HistoryError> {
        let cached = self.cache.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let state = match cached {
            Some((cached_path, state)) if cached_path == path => state,
            _ => {
                let state = self.fetch_file(path).await?;
                self.remember(path, &state);
                state
            }
        };
        Ok(Snapshot {
            bytes: state.bytes.clone(),
            base: state,
        })
    }

    async fn write(
        &self,
        path: &str,
        current: &FileState,
        bytes: Option<&[u8]>,
        message: &str,
    ) -> Result<Written, HistoryError> {
        // The commits API takes text, or base64 for anything else (earlier lines that are not
        // UTF-8 are kept byte for byte).
        let content = |bytes: &[u8]| match std::str::from_utf8(bytes) {
            Ok(text) => (json!(text), json!("text")),
            Err(_) => (
                json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
                json!("base64"),
            ),
        };
        let mut actions = Vec::new();
        match (bytes, &current.last_commit_id) {
            (Some(bytes), Some(last)) => {
                let (content, encoding) = content(bytes);
                actions.push(json!({
                    "action": "update", "file_path": path, "content": content,
                    "encoding": encoding, "last_commit_id": last,
                }));
            }
            (Some(bytes), None) => {
                let (content, encoding) = content(bytes);
                actions.push(json!({
                    "action": "create", "file_path": path, "content": content, "encoding": encoding,
                }));
            }
            (None, Some(last)) => actions.push(json!({
                "action": "delete", "file_path": path, "last_commit_id": last,
            })),
            (None, None) => return Ok(Written::Committed(None)),
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
                let id = commit.json["id"].as_str().map(str::to_owned);
                self.remember(
                    path,
                    &FileState {
                        bytes: bytes.unwrap_or_default().to_vec(),
                        last_commit_id: id.clone().filter(|_| bytes.is_some()),
                        branch_exists: true,
                    },
                );
                Ok(Written::Committed(id))
            }
            Err(ForgeError::Conflict { message, .. }) => {
                Ok(Written::Moved(format!("{what}: {message}")))
            }
            // The commit may have landed before the failure: the next attempt reads the file and
            // writes nothing again if our lines are there.
            Err(
                e @ (ForgeError::Server { .. }
                | ForgeError::Connection { .. }
                | ForgeError::Uncertain { .. }),
            ) => Ok(Written::Uncertain(e.to_string())),
            Err(e) => Err(backend(e)),
        }
    }

    fn forget(&self) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

#[async_trait]
impl HistoryBackend for GitLabHistory {
    async fn load(&self, thread: &ThreadRef) -> Result<LoadedHistory, HistoryError> {
        let path = thread.history_path(&self.directory);
        let state = self.fetch_file(&path).await?;
        self.remember(&path, &state);
        Ok(LoadedHistory {
            text: jsonl::text_of(state.bytes),
            version: state.last_commit_id,
        })
    }

    async fn append(&self, thread: &ThreadRef, entries: &[Entry]) -> HistoryResult<AppendOutcome> {
        let path = thread.history_path(&self.directory);
        branch_write::append(self, &path, entries, self.retry).await
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

    async fn rewrite(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome> {
        let path = thread.history_path(&self.directory);
        branch_write::rewrite(self, &path, text, self.retry).await
    }
}
