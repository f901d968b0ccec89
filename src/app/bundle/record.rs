//! The agent phase of split-trust mode: a forge, a history backend and a branch publisher that
//! read through the real ones and record every write in the bundle directory instead.

use super::{Manifest, OUTPUTS, PLACEHOLDER_PREFIX, SUMMARY, Write, branch};
use crate::forge::layer::{ForgeLayer, Layered};
use crate::forge::{
    Comment, CommentRef, Forge, ForgeError, ForgeResult, PullRequestRef, PullRequestRequest,
    Reaction, ReactionTarget, ReviewThreadRef,
};
use crate::history::backend::{AppendOutcome, LoadedHistory};
use crate::history::{Entry, HistoryBackend, HistoryError, HistoryResult, jsonl};
use crate::report::markers::CHECKLIST_MARKER;
use crate::tools::git::Publisher;
use crate::tools::{ToolError, ToolErrorKind};
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use chrono::Utc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The bundle being written: the directory and the manifest, saved after every write so that a
/// run that stops half-way still leaves a manifest that describes what it did.
pub struct Recorder {
    dir: PathBuf,
    manifest: Mutex<Manifest>,
    /// Comments this run "posted", so later reads of the thread see them as the forge would.
    posted: Mutex<Vec<(ThreadRef, Comment)>>,
}

impl Recorder {
    /// Start a bundle in `dir` (created if missing); an earlier bundle there is replaced. The
    /// run's step outputs and job summary go to the bundle too: `env` is pointed at its files.
    pub fn create(
        dir: &Path,
        run_id: &str,
        env: &mut BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let dir = super::prepare_dir(dir)?;
        // A bundle directory inside the checkout must not end up in the pull request's commit.
        std::fs::write(dir.join(".gitignore"), "# Replan's bundle\n*\n").map_err(|e| {
            format!(
                "--bundle {}: cannot write in the directory: {e}",
                dir.display()
            )
        })?;
        for (variable, file) in [("GITHUB_OUTPUT", OUTPUTS), ("GITHUB_STEP_SUMMARY", SUMMARY)] {
            let path = dir.join(file);
            let _ = std::fs::remove_file(&path);
            env.insert(variable.to_owned(), path.display().to_string());
        }
        let manifest = Manifest::new(ForgeKind::Local, "", run_id);
        manifest
            .save(&dir)
            .map_err(|e| format!("--bundle {}: cannot write the manifest: {e}", dir.display()))?;
        Ok(Recorder {
            dir,
            manifest: Mutex::new(manifest),
            posted: Mutex::new(Vec::new()),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The forge and repository are known once the trigger was read (a local run keeps the default).
    pub fn set_origin(&self, forge: ForgeKind, repo: &str) {
        let mut manifest = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        manifest.forge = forge;
        manifest.repo = repo.to_owned();
    }

    fn record(&self, write: Write) -> Result<(), String> {
        let mut manifest = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        manifest.writes.push(write);
        manifest.save(&self.dir).map_err(|e| {
            format!(
                "cannot write the bundle manifest in {}: {e}",
                self.dir.display()
            )
        })
    }

    fn next_placeholder(&self, what: &str) -> String {
        let manifest = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        format!("{PLACEHOLDER_PREFIX}{what}-{}", manifest.writes.len() + 1)
    }

    pub fn forge(self: &Arc<Self>, inner: Arc<dyn Forge>) -> Arc<dyn Forge> {
        Arc::new(Layered::new(
            inner,
            RecordingForge {
                recorder: self.clone(),
            },
        ))
    }

    pub fn history(self: &Arc<Self>, inner: Arc<dyn HistoryBackend>) -> Arc<dyn HistoryBackend> {
        Arc::new(RecordingHistory {
            inner,
            recorder: self.clone(),
        })
    }

    pub fn publisher(self: &Arc<Self>) -> Arc<dyn Publisher> {
        Arc::new(BundlePublisher {
            recorder: self.clone(),
        })
    }
}

fn forge_error(message: String) -> ForgeError {
    ForgeError::Other(message)
}

/// Reads go to the real forge (and see the comments this run recorded); writes become manifest
/// entries with placeholder ids.
struct RecordingForge {
    recorder: Arc<Recorder>,
}

impl RecordingForge {
    fn is_checklist(body: &str) -> bool {
        body.trim_start().starts_with(CHECKLIST_MARKER)
    }
}

#[async_trait]
impl ForgeLayer for RecordingForge {
    async fn comments(&self, next: &dyn Forge, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        let mut comments = next.comments(thread).await?;
        let posted = self
            .recorder
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        comments.extend(
            posted
                .iter()
                .filter(|(t, _)| t == thread)
                .map(|(_, c)| c.clone()),
        );
        Ok(comments)
    }

    /// Like [`Forge::comment`]'s default, over the comments above (recorded ones included).
    async fn comment(&self, next: &dyn Forge, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        let comments = self.comments(next, at.thread).await?;
        Ok(comments.into_iter().find(|c| c.id == at.id))
    }

    async fn post_comment(
        &self,
        _next: &dyn Forge,
        thread: &ThreadRef,
        body: &str,
    ) -> ForgeResult<Comment> {
        let checklist = Self::is_checklist(body);
        let placeholder =
            self.recorder
                .next_placeholder(if checklist { "checklist" } else { "comment" });
        let write = if checklist {
            Write::Checklist {
                thread: *thread,
                placeholder: placeholder.clone(),
                body: body.to_owned(),
            }
        } else {
            Write::Comment {
                thread: *thread,
                placeholder: placeholder.clone(),
                body: body.to_owned(),
            }
        };
        self.recorder.record(write).map_err(forge_error)?;
        let now = Utc::now();
        let comment = Comment {
            id: placeholder,
            author: "replan".to_owned(),
            author_is_bot: true,
            body: body.to_owned(),
            created_at: now,
            updated_at: now,
        };
        self.recorder
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((*thread, comment.clone()));
        Ok(comment)
    }

    async fn update_comment(
        &self,
        _next: &dyn Forge,
        at: CommentRef<'_>,
        body: &str,
    ) -> ForgeResult<()> {
        let CommentRef {
            thread,
            id: comment_id,
        } = at;
        let write = if Self::is_checklist(body) {
            Write::Checklist {
                thread: *thread,
                placeholder: comment_id.to_owned(),
                body: body.to_owned(),
            }
        } else {
            Write::EditComment {
                thread: *thread,
                comment_id: comment_id.to_owned(),
                body: body.to_owned(),
            }
        };
        self.recorder.record(write).map_err(forge_error)?;
        let mut posted = self
            .recorder
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, comment)) = posted.iter_mut().find(|(_, c)| c.id == comment_id) {
            comment.body = body.to_owned();
            comment.updated_at = Utc::now();
        }
        Ok(())
    }

    async fn react(
        &self,
        _next: &dyn Forge,
        target: ReactionTarget<'_>,
        reaction: Reaction,
    ) -> ForgeResult<()> {
        self.recorder
            .record(Write::Reaction {
                thread: *target.thread,
                comment_id: target.comment_id.map(str::to_owned),
                reaction,
            })
            .map_err(forge_error)
    }

    async fn reply_to_review_thread(
        &self,
        _next: &dyn Forge,
        at: ReviewThreadRef<'_>,
        body: &str,
    ) -> ForgeResult<()> {
        self.recorder
            .record(Write::ReviewReply {
                pull_request: at.pull_request,
                review_thread: at.thread.to_owned(),
                reply_to: at.reply_to.to_owned(),
                body: body.to_owned(),
            })
            .map_err(forge_error)
    }

    async fn resolve_review_thread(
        &self,
        _next: &dyn Forge,
        at: ReviewThreadRef<'_>,
    ) -> ForgeResult<()> {
        self.recorder
            .record(Write::ResolveReviewThread {
                pull_request: at.pull_request,
                review_thread: at.thread.to_owned(),
            })
            .map_err(forge_error)
    }

    async fn open_pull_request(
        &self,
        _next: &dyn Forge,
        request: &PullRequestRequest,
    ) -> ForgeResult<PullRequestRef> {
        let placeholder = self.recorder.next_placeholder("pull-request");
        self.recorder
            .record(Write::PullRequest {
                placeholder: placeholder.clone(),
                request: request.clone(),
            })
            .map_err(forge_error)?;
        Ok(PullRequestRef {
            number: 0,
            url: placeholder,
        })
    }

    async fn update_pull_request_section(
        &self,
        _next: &dyn Forge,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        // A pull request this bundle opens is known by its placeholder (number 0).
        let target = if pull_request.number == 0 {
            pull_request.url.clone()
        } else {
            pull_request.number.to_string()
        };
        self.recorder
            .record(Write::PullRequestSection {
                pull_request: target,
                section: section.to_owned(),
            })
            .map_err(forge_error)
    }

    /// A pull request recorded earlier in this bundle answers for its key before the real forge.
    async fn find_pull_request(
        &self,
        next: &dyn Forge,
        key: &str,
    ) -> ForgeResult<Option<PullRequestRef>> {
        let recorded = {
            let manifest = self
                .recorder
                .manifest
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            manifest.writes.iter().find_map(|write| match write {
                Write::PullRequest {
                    placeholder,
                    request,
                } if crate::forge::marker::key_in(&request.body) == Some(key) => {
                    Some(PullRequestRef {
                        number: 0,
                        url: placeholder.clone(),
                    })
                }
                _ => None,
            })
        };
        match recorded {
            Some(found) => Ok(Some(found)),
            None => next.find_pull_request(key).await,
        }
    }
}

/// Loads the real history (plus the lines recorded in this run); appends are recorded.
struct RecordingHistory {
    inner: Arc<dyn HistoryBackend>,
    recorder: Arc<Recorder>,
}

impl RecordingHistory {
    fn recorded(&self, thread: &ThreadRef) -> Vec<Entry> {
        let manifest = self
            .recorder
            .manifest
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        manifest
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::History { thread: t, entries } if t == thread => Some(entries.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

#[async_trait]
impl HistoryBackend for RecordingHistory {
    async fn load(&self, thread: &ThreadRef) -> Result<LoadedHistory, HistoryError> {
        let mut loaded = self.inner.load(thread).await?;
        let recorded = self.recorded(thread);
        if !recorded.is_empty() {
            if !loaded.text.is_empty() && !loaded.text.ends_with('\n') {
                loaded.text.push('\n');
            }
            loaded.text.push_str(&jsonl::to_lines(&recorded));
        }
        Ok(loaded)
    }

    async fn append(&self, thread: &ThreadRef, entries: &[Entry]) -> HistoryResult<AppendOutcome> {
        let first_seq = entries.first().map_or(0, |e| e.seq);
        self.recorder
            .record(Write::History {
                thread: *thread,
                entries: entries.to_vec(),
            })
            .map_err(HistoryError::Backend)?;
        Ok(AppendOutcome {
            commit: None,
            conflicts: 0,
            first_seq,
        })
    }

    async fn threads(&self) -> Result<Vec<ThreadRef>, HistoryError> {
        self.inner.threads().await
    }

    async fn rewrite(
        &self,
        _thread: &ThreadRef,
        _text: &str,
    ) -> Result<AppendOutcome, HistoryError> {
        Err(HistoryError::Backend(
            "a bundle run does not rewrite history files".to_owned(),
        ))
    }
}

/// Instead of pushing the pull request's branch, writes it as a `git bundle` into the directory.
struct BundlePublisher {
    recorder: Arc<Recorder>,
}

#[async_trait]
impl Publisher for BundlePublisher {
    async fn publish(&self, repo: &Path, branch_name: &str) -> Result<(), ToolError> {
        let file = format!("branch-{}.bundle", fastrand::u32(..));
        let (repo, name, path) = (
            repo.to_path_buf(),
            branch_name.to_owned(),
            self.recorder.dir().join(&file),
        );
        let commit = tokio::task::spawn_blocking(move || branch::create(&repo, &name, &path))
            .await
            .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("git bundle stopped: {e}")))?
            .map_err(|e| ToolError::new(ToolErrorKind::Failed, e))?;
        self.recorder
            .record(Write::Branch {
                branch: branch_name.to_owned(),
                commit,
                file,
            })
            .map_err(|e| ToolError::new(ToolErrorKind::Failed, e))
    }
}
