//! History files on an orphan branch. An append is one request: the contents API's
//! `PUT /contents/{path}` with the blob the file had when we read it, which GitHub checks (409
//! when the file changed) and commits on whatever the branch's tip is by then, so runs writing
//! other threads' files do not collide. The git data API (blob → tree → commit → move the ref
//! without `force`: 422 "not a fast forward" when the branch moved) writes what the contents API
//! cannot: the branch's first (orphan) commit, a deletion, a file over 1 MB. Either way, when the
//! file changed under us it is read again and our lines are appended after its last `seq`: no
//! line of either run is lost. Files are read through the contents API at the commit the ref
//! names.

use super::client::{Failure, GitHubClient, Op};
use crate::forge::ForgeError;
use crate::history::backend::{
    AppendOutcome, HistoryBackend, HistoryError, HistoryResult, LoadedHistory,
};
use crate::history::branch_write;
use crate::history::cas::{BranchFile, Retry, Snapshot, Written};
use crate::history::object_id::blob_id;
use crate::history::{Entry, jsonl};
use crate::trigger::{ThreadKind, ThreadRef};
use async_trait::async_trait;
use base64::Engine as _;
use octocrab::models::git::{CreateTreeEntry, GitTreeEntry};
use octocrab::models::repos::Object;
use octocrab::params::repos::Reference;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CONTENTS_WRITE: &str = "contents: write";

/// A path segment in a URL: everything but the unreserved characters is escaped.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn decode_base64(content: &str, what: &str) -> Result<Vec<u8>, ForgeError> {
    let compact: String = content.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| ForgeError::Other(format!("GitHub answered {what} with bad base64: {e}")))
}

pub struct GitHubHistory {
    client: Arc<GitHubClient>,
    branch: String,
    directory: String,
    retry: Retry,
    /// The head and file of our own last read or write: the next append of the run starts from
    /// it without reading the branch again (a stale head only costs one refused ref update).
    cache: Mutex<Option<Cached>>,
}

/// The branch tip: commit and its tree, and the blob of the file it was read or written for
/// (None when that file does not exist there, or the tip was read for no file).
#[derive(Debug, Clone)]
pub struct Tip {
    commit: String,
    tree: String,
    file: Option<String>,
}

/// The largest file an append sends through the contents API: reading one back through it stops
/// at 1 MB ("too_large"), and a bigger write goes where the bigger read goes, the git data API.
const CONTENTS_LIMIT: usize = 1024 * 1024;

/// A history file as the contents API answered for it.
enum FileAt {
    Absent,
    Found(Vec<u8>),
    /// Over 1 MB: the contents API refuses it ("too_large"); the git data API serves its blob.
    TooLarge,
}

struct Cached {
    path: String,
    bytes: Vec<u8>,
    tip: Option<Tip>,
}

fn backend(e: ForgeError) -> HistoryError {
    HistoryError::Backend(e.to_string())
}

impl GitHubHistory {
    pub fn new(client: Arc<GitHubClient>, branch: &str, directory: &str) -> Self {
        GitHubHistory {
            client,
            branch: branch.trim().trim_start_matches("refs/heads/").to_owned(),
            directory: directory.trim_matches('/').to_owned(),
            retry: Retry::default(),
            cache: Mutex::new(None),
        }
    }

    /// How long an append keeps trying while other runs move the branch.
    pub fn with_append_timeout(mut self, timeout: Duration) -> Self {
        self.retry = Retry::with_timeout(timeout);
        self
    }

    pub fn branch(&self) -> &str {
        &self.branch
    }

    fn op<'a>(&self, what: &'a str) -> Op<'a> {
        Op {
            what,
            permission: CONTENTS_WRITE,
        }
    }

    fn git(&self) -> octocrab::git::GitHandler<'_> {
        self.client
            .octocrab()
            .git(self.client.owner(), self.client.name())
    }

    fn reference(&self) -> Reference {
        Reference::Branch(self.branch.clone())
    }

    async fn tip(&self) -> Result<Option<Tip>, ForgeError> {
        let Some(commit) = self.tip_commit().await? else {
            return Ok(None);
        };
        let tree = self.tree_of(&commit).await?;
        Ok(Some(Tip {
            commit,
            tree,
            file: None,
        }))
    }

    /// The commit the branch points at; None before the branch exists.
    async fn tip_commit(&self) -> Result<Option<String>, ForgeError> {
        let what = format!("reading the history branch `{}`", self.branch);
        let reference = self.reference();
        let reference = match self
            .client
            .call(self.op(&what), self.git().get_ref(&reference))
            .await
        {
            Ok(reference) => reference,
            Err(ForgeError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        match reference.object {
            Object::Commit { sha, .. } => Ok(Some(sha)),
            _ => Err(ForgeError::Other(format!(
                "GitHub answered {what} with a ref that is not a commit"
            ))),
        }
    }

    async fn tree_of(&self, commit: &str) -> Result<String, ForgeError> {
        let what = format!("reading the history branch `{}`", self.branch);
        let body = self
            .client
            .call(self.op(&what), self.git().get_commit(commit))
            .await?;
        Ok(body.tree.sha)
    }

    /// The entries of a tree (not recursive).
    async fn tree_entries(&self, tree: &str) -> Result<Vec<GitTreeEntry>, ForgeError> {
        let what = format!("reading a tree of the history branch `{}`", self.branch);
        let tree = self
            .client
            .call(self.op(&what), self.git().get_tree(tree).send())
            .await?;
        Ok(tree.tree)
    }

    /// Walks `path` from the root tree; the sha of the last component (of type `kind`, `blob`
    /// or `tree`), if it exists.
    async fn lookup(
        &self,
        root: &str,
        path: &str,
        kind: &str,
    ) -> Result<Option<String>, ForgeError> {
        let mut current = root.to_owned();
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            let entries = self.tree_entries(&current).await?;
            let last = i + 1 == parts.len();
            let found = entries
                .into_iter()
                .find(|e| e.path == *part && e.r#type == if last { kind } else { "tree" });
            match found {
                Some(entry) => current = entry.sha,
                None => return Ok(None),
            }
        }
        Ok(Some(current))
    }

    async fn read_blob(&self, sha: &str) -> Result<Vec<u8>, ForgeError> {
        let what = format!("reading a history file on `{}`", self.branch);
        let blob = self
            .client
            .call(self.op(&what), self.git().get_blob(sha))
            .await?;
        match blob.encoding.as_str() {
            "base64" => decode_base64(&blob.content, &what),
            _ => Ok(blob.content.into_bytes()),
        }
    }

    /// `/repos/{owner}/{repo}/contents/{path}`, each segment of `path` escaped.
    fn contents_route(&self, path: &str) -> String {
        let encoded: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(|p| percent_encoding::utf8_percent_encode(p, PATH_SEGMENT).to_string())
            .collect();
        self.client
            .repo_path(&format!("/contents/{}", encoded.join("/")))
    }

    /// The file at `commit` through the contents API: one request, where walking the trees
    /// takes one per directory (and one more for the blob).
    async fn file_at(&self, commit: &str, path: &str) -> Result<FileAt, ForgeError> {
        let what = format!("reading a history file on `{}`", self.branch);
        let route = self.contents_route(path);
        let query = [("ref", commit)];
        let get = self
            .client
            .octocrab()
            .get::<Value, _, _>(route, Some(&query));
        let file = match self.client.call_with_status(self.op(&what), get).await {
            Ok(file) => file,
            Err(Failure {
                error: ForgeError::NotFound { .. },
                ..
            }) => return Ok(FileAt::Absent),
            Err(Failure {
                status: 403,
                message,
                ..
            }) if message.to_ascii_lowercase().contains("too large") => {
                return Ok(FileAt::TooLarge);
            }
            Err(failure) => return Err(failure.error),
        };
        let field = |name: &str| file.get(name).and_then(Value::as_str);
        if field("type") != Some("file") {
            return Err(ForgeError::Other(format!(
                "GitHub answered {what} with something that is not a file at `{path}`"
            )));
        }
        match (field("encoding"), field("content")) {
            (Some("base64"), Some(content)) => decode_base64(content, &what).map(FileAt::Found),
            _ => Err(ForgeError::Other(format!(
                "GitHub answered {what} without the file's content in base64"
            ))),
        }
    }

    /// The head and the file at it, from our cache when we hold the file.
    async fn snapshot(&self, path: &str) -> Result<(Vec<u8>, Option<Tip>), HistoryError> {
        if let Some(cached) = self.cached(path) {
            return Ok(cached);
        }
        let Some(commit) = self.tip_commit().await.map_err(backend)? else {
            self.remember(path, &[], None);
            return Ok((Vec::new(), None));
        };
        // The tree (for the next commit's base) and the file at once: both of that commit.
        let (tree, contents) = tokio::try_join!(self.tree_of(&commit), self.file_at(&commit, path))
            .map_err(backend)?;
        let (bytes, file) = match contents {
            FileAt::Absent => (Vec::new(), None),
            FileAt::Found(bytes) => {
                let blob = blob_id(&bytes);
                (bytes, Some(blob))
            }
            FileAt::TooLarge => match self.lookup(&tree, path, "blob").await.map_err(backend)? {
                Some(blob) => (self.read_blob(&blob).await.map_err(backend)?, Some(blob)),
                None => (Vec::new(), None),
            },
        };
        let tip = Some(Tip { commit, tree, file });
        self.remember(path, &bytes, tip.clone());
        Ok((bytes, tip))
    }

    fn cached(&self, path: &str) -> Option<(Vec<u8>, Option<Tip>)> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .as_ref()
            .filter(|c| c.path == path)
            .map(|c| (c.bytes.clone(), c.tip.clone()))
    }

    fn remember(&self, path: &str, bytes: &[u8], tip: Option<Tip>) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(Cached {
            path: path.to_owned(),
            bytes: bytes.to_vec(),
            tip,
        });
    }

    /// Writes the new tree and commit on top of `tip` (or an orphan commit) and returns them.
    async fn write_commit(
        &self,
        tip: Option<&Tip>,
        path: &str,
        bytes: Option<&[u8]>,
        message: &str,
    ) -> Result<Tip, ForgeError> {
        let what = format!("committing {path} to `{}`", self.branch);
        let entry = CreateTreeEntry::new(path, "100644", "blob");
        let entry = match bytes.map(|b| (b, std::str::from_utf8(b))) {
            // UTF-8 goes inline in the tree request, which saves the blob request.
            Some((_, Ok(text))) => Some(entry.with_content(text)),
            // Anything else as a base64 blob: earlier lines are kept byte for byte.
            Some((bytes, Err(_))) => {
                let content = base64::engine::general_purpose::STANDARD.encode(bytes);
                let create = self.git().create_blob(content).encoding("base64").send();
                let blob = self.client.call(self.op(&what), create).await?;
                Some(entry.with_sha(blob.sha))
            }
            None => None,
        };
        let tree_sha = match entry {
            Some(entry) => {
                let mut create = self.git().create_tree(vec![entry]);
                if let Some(tip) = tip {
                    create = create.base_tree(tip.tree.as_str());
                }
                self.client.call(self.op(&what), create.send()).await?.sha
            }
            // A deletion is `"sha": null`, which octocrab's tree entry cannot say: a raw POST.
            None => {
                let mut request = json!({ "tree": [
                    { "path": path, "mode": "100644", "type": "blob", "sha": null }
                ] });
                if let Some(tip) = tip {
                    request["base_tree"] = json!(tip.tree);
                }
                let route = self.client.repo_path("/git/trees");
                let post = self
                    .client
                    .octocrab()
                    .post::<_, Value>(route, Some(&request));
                let tree = self.client.call(self.op(&what), post).await?;
                tree.get("sha")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        ForgeError::Other(format!("GitHub answered {what} without a tree sha"))
                    })?
                    .to_owned()
            }
        };
        let parents: Vec<String> = tip.map(|t| t.commit.clone()).into_iter().collect();
        let create = self
            .git()
            .create_commit(message, tree_sha.as_str())
            .parents(parents);
        let commit = self.client.call(self.op(&what), create.send()).await?;
        Ok(Tip {
            commit: commit.sha,
            tree: tree_sha,
            file: bytes.map(blob_id),
        })
    }

    /// One commit of `bytes` at `path` through the contents API, on whatever the branch's tip
    /// is, provided the file is still the blob `tip` saw; the new tip when it landed. Repeating
    /// it after an answer that got lost is safe: the file is then our blob, not the one named,
    /// and GitHub refuses (409).
    async fn put_file(
        &self,
        tip: &Tip,
        path: &str,
        bytes: &[u8],
        message: &str,
    ) -> Result<(Written, Option<Tip>), ForgeError> {
        let what = format!("committing {path} to `{}`", self.branch);
        let mut request = json!({
            "message": message,
            "content": base64::engine::general_purpose::STANDARD.encode(bytes),
            "branch": self.branch,
        });
        if let Some(file) = &tip.file {
            request["sha"] = json!(file);
        }
        let put = self
            .client
            .octocrab()
            .put::<Value, _, _>(self.contents_route(path), Some(&request));
        let answer = match self.client.call_with_status(self.op(&what), put).await {
            Ok(answer) => answer,
            // The file is another blob than the one we read (409), or it appeared since (422:
            // "sha" wasn't supplied).
            Err(Failure {
                status, message, ..
            }) if status == 409 || (status == 422 && message.contains("sha")) => {
                let why = format!(
                    "{path} changed on `{}` while we wrote ({message})",
                    self.branch
                );
                return Ok((Written::Moved(why), None));
            }
            Err(Failure {
                error: e @ (ForgeError::Server { .. } | ForgeError::Connection { .. }),
                ..
            }) => return Ok((Written::Uncertain(e.to_string()), None)),
            Err(failure) => return Err(failure.error),
        };
        let field = |pointer: &str| answer.pointer(pointer).and_then(Value::as_str);
        let (Some(commit), Some(tree)) = (field("/commit/sha"), field("/commit/tree/sha")) else {
            return Err(ForgeError::Other(format!(
                "GitHub answered {what} without the commit it made"
            )));
        };
        let tip = Tip {
            commit: commit.to_owned(),
            tree: tree.to_owned(),
            file: Some(blob_id(bytes)),
        };
        Ok((Written::Committed(Some(commit.to_owned())), Some(tip)))
    }

    /// Moves (or creates) the branch to `commit`.
    async fn move_branch(&self, tip: Option<&Tip>, commit: &str) -> Result<Written, ForgeError> {
        let what = format!("updating the history branch `{}`", self.branch);
        let reference = self.reference();
        let result = match tip {
            Some(_) => {
                let update = self
                    .git()
                    .update_ref(&reference, commit)
                    .force(false)
                    .send();
                self.client.call_with_status(self.op(&what), update).await
            }
            None => {
                let git = self.git();
                let create = git.create_ref(&reference, commit);
                self.client.call_with_status(self.op(&what), create).await
            }
        };
        match result {
            Ok(_) => Ok(Written::Committed(Some(commit.to_owned()))),
            Err(Failure {
                status, message, ..
            }) if status == 409 || (status == 422 && is_moved(&message)) => {
                Ok(Written::Moved(format!(
                    "the history branch `{}` moved while we wrote ({message})",
                    self.branch
                )))
            }
            Err(Failure {
                error: e @ (ForgeError::Server { .. } | ForgeError::Connection { .. }),
                ..
            }) => Ok(Written::Uncertain(e.to_string())),
            Err(failure) => Err(failure.error),
        }
    }
}

#[async_trait]
impl BranchFile for GitHubHistory {
    type Base = Option<Tip>;

    async fn read(&self, path: &str) -> Result<Snapshot<Option<Tip>>, HistoryError> {
        let (bytes, base) = self.snapshot(path).await?;
        Ok(Snapshot { bytes, base })
    }

    async fn write(
        &self,
        path: &str,
        base: &Option<Tip>,
        bytes: Option<&[u8]>,
        message: &str,
    ) -> Result<Written, HistoryError> {
        let (written, tip) = match (base, bytes) {
            (Some(tip), Some(bytes)) if bytes.len() <= CONTENTS_LIMIT => self
                .put_file(tip, path, bytes, message)
                .await
                .map_err(backend)?,
            _ => {
                let tip = self
                    .write_commit(base.as_ref(), path, bytes, message)
                    .await
                    .map_err(backend)?;
                let written = self
                    .move_branch(base.as_ref(), &tip.commit)
                    .await
                    .map_err(backend)?;
                (written, Some(tip))
            }
        };
        if let (Written::Committed(_), Some(tip)) = (&written, tip) {
            self.remember(path, bytes.unwrap_or_default(), Some(tip));
        }
        Ok(written)
    }

    fn forget(&self) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// GitHub's words for "the ref is not where you thought".
fn is_moved(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("fast forward")
        || lower.contains("fast-forward")
        || lower.contains("already exists")
        || lower.contains("reference update failed")
}

#[async_trait]
impl HistoryBackend for GitHubHistory {
    async fn load(&self, thread: &ThreadRef) -> Result<LoadedHistory, HistoryError> {
        self.forget();
        let (bytes, tip) = self.snapshot(&thread.history_path(&self.directory)).await?;
        Ok(LoadedHistory {
            text: jsonl::text_of(bytes),
            version: tip.map(|t| t.commit),
        })
    }

    async fn append(&self, thread: &ThreadRef, entries: &[Entry]) -> HistoryResult<AppendOutcome> {
        if entries.is_empty() {
            return Ok(AppendOutcome::default());
        }
        let path = thread.history_path(&self.directory);
        branch_write::append(self, &path, entries, self.retry).await
    }

    async fn threads(&self) -> Result<Vec<ThreadRef>, HistoryError> {
        let Some(tip) = self.tip().await.map_err(backend)? else {
            return Ok(Vec::new());
        };
        let Some(dir) = self
            .lookup(&tip.tree, &self.directory, "tree")
            .await
            .map_err(backend)?
        else {
            return Ok(Vec::new());
        };
        let mut threads = Vec::new();
        for kind_dir in self.tree_entries(&dir).await.map_err(backend)? {
            let Some(kind) = ThreadKind::from_dir_name(&kind_dir.path) else {
                continue;
            };
            if kind_dir.r#type != "tree" {
                continue;
            }
            for file in self.tree_entries(&kind_dir.sha).await.map_err(backend)? {
                if let Some(number) = file
                    .path
                    .strip_suffix(".jsonl")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    threads.push(ThreadRef { kind, number });
                }
            }
        }
        threads.sort();
        Ok(threads)
    }

    async fn rewrite(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome> {
        let path = thread.history_path(&self.directory);
        branch_write::rewrite(self, &path, text, self.retry).await
    }
}
