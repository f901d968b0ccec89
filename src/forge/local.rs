//! A forge kept in a local directory, for runs from the command line and for tests.
//!
//! Layout: `<dir>/threads/<issues|pulls|merge_requests>-<n>.json` holds a thread, its comments
//! and reactions; `<dir>/pulls.json` lists the pull requests opened. Files are replaced whole
//! (write then rename) so that an interrupted run never leaves half a file.

use super::{
    Comment, CommentRef, Forge, ForgeError, ForgeResult, Permission, PullRequestRef,
    PullRequestRequest, Reaction, ReactionTarget, Thread,
};
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FORGE: &str = "local forge";

/// What one thread file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalThreadFile {
    pub thread: Thread,
    #[serde(default)]
    pub comments: Vec<Comment>,
    #[serde(default)]
    pub reactions: Vec<RecordedReaction>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedReaction {
    /// None: a reaction to the thread itself.
    pub comment_id: Option<String>,
    pub reaction: Reaction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPullRequest {
    pub number: u64,
    pub url: String,
    #[serde(flatten)]
    pub request: PullRequestRequest,
}

pub struct LocalForge {
    dir: PathBuf,
    /// Repository whose branches pull requests are checked against.
    repo: Option<PathBuf>,
    local_user: String,
    bot_name: String,
    permissions: BTreeMap<String, Permission>,
    lock: tokio::sync::Mutex<()>,
}

impl LocalForge {
    /// A forge in `dir`; the local user (`$USER`, else `local`) is admin.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let local_user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "local".to_owned());
        LocalForge {
            dir: dir.into(),
            repo: None,
            permissions: BTreeMap::from([(local_user.clone(), Permission::Admin)]),
            local_user,
            bot_name: "replan[bot]".to_owned(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Check pull request head branches against this git repository.
    pub fn with_repository(mut self, repo: impl Into<PathBuf>) -> Self {
        self.repo = Some(repo.into());
        self
    }

    /// Replace the permission map (users not in it have `Permission::None`).
    pub fn with_permissions(mut self, permissions: BTreeMap<String, Permission>) -> Self {
        self.permissions = permissions;
        self
    }

    pub fn local_user(&self) -> &str {
        &self.local_user
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn thread_path(&self, thread: &ThreadRef) -> PathBuf {
        self.dir
            .join("threads")
            .join(format!("{}-{}.json", thread.kind.dir_name(), thread.number))
    }

    fn pulls_path(&self) -> PathBuf {
        self.dir.join("pulls.json")
    }

    /// Create (or replace) a thread, e.g. the issue a local run works on.
    pub async fn create_thread(
        &self,
        thread: ThreadRef,
        title: &str,
        body: &str,
        author: &str,
    ) -> Result<Thread, ForgeError> {
        let _guard = self.exclusive().await?;
        let record = Thread {
            thread,
            title: title.to_owned(),
            body: body.to_owned(),
            author: author.to_owned(),
            url: format!("file://{}", self.thread_path(&thread).display()),
            labels: Vec::new(),
            closed: false,
        };
        self.save(
            &thread,
            &LocalThreadFile {
                thread: record.clone(),
                comments: Vec::new(),
                reactions: Vec::new(),
            },
        )?;
        Ok(record)
    }

    /// Add a comment by someone other than the bot (a person answering, in tests and local runs).
    pub async fn add_comment_as(
        &self,
        thread: &ThreadRef,
        author: &str,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.append_comment(thread, author, false, body).await
    }

    /// Everything stored for a thread (comments, reactions).
    pub async fn thread_file(&self, thread: &ThreadRef) -> Result<LocalThreadFile, ForgeError> {
        let _guard = self.exclusive().await?;
        self.load(thread)
    }

    /// The pull requests opened so far.
    pub async fn pull_requests(&self) -> Result<Vec<RecordedPullRequest>, ForgeError> {
        let _guard = self.exclusive().await?;
        self.load_pulls()
    }

    async fn append_comment(
        &self,
        thread: &ThreadRef,
        author: &str,
        is_bot: bool,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let _guard = self.exclusive().await?;
        let mut file = self.load(thread)?;
        let next = file
            .comments
            .iter()
            .filter_map(|c| c.id.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        let now = Utc::now();
        let comment = Comment {
            id: next.to_string(),
            author: author.to_owned(),
            author_is_bot: is_bot,
            body: body.to_owned(),
            created_at: now,
            updated_at: now,
        };
        file.comments.push(comment.clone());
        self.save(thread, &file)?;
        Ok(comment)
    }

    fn load(&self, thread: &ThreadRef) -> Result<LocalThreadFile, ForgeError> {
        let path = self.thread_path(thread);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ForgeError::NotFound {
                    what: format!("thread {thread} ({})", path.display()),
                }
            } else {
                ForgeError::Other(format!("cannot read {}: {e}", path.display()))
            }
        })?;
        serde_json::from_str(&text).map_err(|e| {
            ForgeError::Other(format!(
                "{} is not a valid local thread file: {e}; fix or delete it",
                path.display()
            ))
        })
    }

    fn save(&self, thread: &ThreadRef, file: &LocalThreadFile) -> Result<(), ForgeError> {
        let text = serde_json::to_string_pretty(file).expect("thread files serialise");
        write_replacing(&self.thread_path(thread), &text)
    }

    fn load_pulls(&self) -> Result<Vec<RecordedPullRequest>, ForgeError> {
        let path = self.pulls_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                ForgeError::Other(format!(
                    "{} is not a valid pull request list: {e}",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(ForgeError::Other(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    fn branch_exists(&self, repo: &Path, branch: &str) -> Result<bool, ForgeError> {
        let status = crate::git::command::command(repo, &[])
            .map_err(|e| ForgeError::Other(e.message))?
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(format!("refs/heads/{branch}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map_err(|e| ForgeError::Other(format!("cannot run git: {e}")))?;
        Ok(status.success())
    }
}

/// Held while a read-modify-write of the forge's files is under way: this process's mutex and an
/// exclusive `flock` on `<dir>/.lock`, so concurrent local runs on one directory serialise.
struct Exclusive<'a> {
    _in_process: tokio::sync::MutexGuard<'a, ()>,
    _file: std::fs::File,
}

impl LocalForge {
    async fn exclusive(&self) -> Result<Exclusive<'_>, ForgeError> {
        let in_process = self.lock.lock().await;
        let path = self.dir.join(".lock");
        let error =
            |e: std::io::Error| ForgeError::Other(format!("cannot lock {}: {e}", path.display()));
        std::fs::create_dir_all(&self.dir).map_err(error)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(error)?;
        let file = tokio::task::spawn_blocking(move || file.lock().map(|()| file))
            .await
            .map_err(|e| ForgeError::Other(format!("cannot lock {}: {e}", path.display())))?
            .map_err(error)?;
        Ok(Exclusive {
            _in_process: in_process,
            _file: file,
        })
    }
}

fn write_replacing(path: &Path, text: &str) -> Result<(), ForgeError> {
    let error =
        |e: std::io::Error| ForgeError::Other(format!("cannot write {}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let temporary = path.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(&temporary, text).map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

#[async_trait]
impl Forge for LocalForge {
    fn kind(&self) -> ForgeKind {
        ForgeKind::Local
    }

    async fn thread(&self, thread: &ThreadRef) -> ForgeResult<Thread> {
        let _guard = self.exclusive().await?;
        Ok(self.load(thread)?.thread)
    }

    async fn comments(&self, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        let _guard = self.exclusive().await?;
        Ok(self.load(thread)?.comments)
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> ForgeResult<Comment> {
        let bot = self.bot_name.clone();
        self.append_comment(thread, &bot, true, body).await
    }

    async fn update_comment(&self, at: CommentRef<'_>, body: &str) -> ForgeResult<()> {
        let CommentRef {
            thread,
            id: comment_id,
        } = at;
        let _guard = self.exclusive().await?;
        let mut file = self.load(thread)?;
        let comment = file
            .comments
            .iter_mut()
            .find(|c| c.id == comment_id)
            .ok_or_else(|| ForgeError::NotFound {
                what: format!("comment {comment_id} on {thread}"),
            })?;
        comment.body = body.to_owned();
        comment.updated_at = Utc::now();
        self.save(thread, &file)
    }

    async fn permission(&self, user: &str) -> ForgeResult<Permission> {
        Ok(self
            .permissions
            .get(user)
            .cloned()
            .unwrap_or(Permission::None))
    }

    async fn react(&self, target: ReactionTarget<'_>, reaction: Reaction) -> ForgeResult<()> {
        let ReactionTarget { thread, comment_id } = target;
        let _guard = self.exclusive().await?;
        let mut file = self.load(thread)?;
        if comment_id.is_some_and(|id| !file.comments.iter().any(|c| c.id == id)) {
            let id = comment_id.unwrap_or_default();
            return Err(ForgeError::NotFound {
                what: format!("comment {id} on {thread}"),
            });
        }
        file.reactions.push(RecordedReaction {
            comment_id: comment_id.map(str::to_owned),
            reaction,
        });
        self.save(thread, &file)
    }

    async fn open_pull_request(&self, request: &PullRequestRequest) -> ForgeResult<PullRequestRef> {
        let _guard = self.exclusive().await?;
        let missing_head = match &self.repo {
            Some(repo) => !self.branch_exists(repo, &request.head)?,
            None => false,
        };
        if let (true, Some(repo)) = (missing_head, &self.repo) {
            return Err(ForgeError::Unprocessable {
                forge: FORGE.to_owned(),
                what: "the pull request".to_owned(),
                message: format!(
                    "head branch `{}` does not exist in {}",
                    request.head,
                    repo.display()
                ),
            });
        }
        let mut pulls = self.load_pulls()?;
        let number = pulls.iter().map(|p| p.number).max().unwrap_or(0) + 1;
        let url = format!("file://{}#{number}", self.pulls_path().display());
        pulls.push(RecordedPullRequest {
            number,
            url: url.clone(),
            request: request.clone(),
        });
        let text = serde_json::to_string_pretty(&pulls).expect("pull list serialises");
        write_replacing(&self.pulls_path(), &text)?;
        Ok(PullRequestRef { number, url })
    }

    async fn update_pull_request_section(
        &self,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        let _guard = self.exclusive().await?;
        let mut pulls = self.load_pulls()?;
        let Some(pull) = pulls.iter_mut().find(|p| p.number == pull_request.number) else {
            return Err(ForgeError::NotFound {
                what: format!("pull request #{}", pull_request.number),
            });
        };
        pull.request.body = crate::forge::pr_section::splice(&pull.request.body, section);
        let text = serde_json::to_string_pretty(&pulls).expect("pull list serialises");
        write_replacing(&self.pulls_path(), &text)
    }

    async fn find_pull_request(&self, key: &str) -> ForgeResult<Option<PullRequestRef>> {
        let _guard = self.lock.lock().await;
        Ok(self
            .load_pulls()?
            .into_iter()
            .find(|p| crate::forge::marker::key_in(&p.request.body) == Some(key))
            .map(|p| PullRequestRef {
                number: p.number,
                url: p.url,
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Separate forges on one directory stand for separate processes: only the file lock
    /// serialises them (flock conflicts between separate opens, even in one process).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_on_one_directory_lose_no_comment() {
        let dir = tempfile::tempdir().unwrap();
        let issue = ThreadRef::issue(3);
        LocalForge::new(dir.path())
            .create_thread(issue, "Title", "Body", "alice")
            .await
            .unwrap();
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let forge = LocalForge::new(dir.path());
                tokio::spawn(async move {
                    for c in 0..10 {
                        forge
                            .post_comment(&issue, &format!("w{w}-c{c}"))
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        let comments = LocalForge::new(dir.path()).comments(&issue).await.unwrap();
        assert_eq!(comments.len(), 80);
        let mut ids: Vec<&str> = comments.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 80, "every comment has its own id");
    }

    #[tokio::test]
    async fn comments_get_increasing_ids_and_update_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let forge = LocalForge::new(dir.path());
        let issue = ThreadRef::issue(7);
        forge
            .create_thread(issue, "Title", "Body", "alice")
            .await
            .unwrap();
        let first = forge.post_comment(&issue, "one").await.unwrap();
        let second = forge.add_comment_as(&issue, "alice", "two").await.unwrap();
        assert_eq!((first.id.as_str(), second.id.as_str()), ("1", "2"));
        forge
            .update_comment(
                CommentRef {
                    thread: &issue,
                    id: "1",
                },
                "one, edited",
            )
            .await
            .unwrap();
        forge
            .react(ReactionTarget::on_comment(&issue, "2"), Reaction::Eyes)
            .await
            .unwrap();
        let stored: LocalThreadFile = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("threads/issues-7.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(stored.comments[0].body, "one, edited");
        assert!(stored.comments[0].author_is_bot);
        assert_eq!(stored.comments[1].author, "alice");
        assert_eq!(stored.reactions[0].reaction, Reaction::Eyes);
    }

    #[tokio::test]
    async fn a_missing_thread_or_comment_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let forge = LocalForge::new(dir.path());
        let issue = ThreadRef::issue(1);
        assert!(matches!(
            forge.thread(&issue).await,
            Err(ForgeError::NotFound { .. })
        ));
        forge.create_thread(issue, "t", "b", "a").await.unwrap();
        assert!(matches!(
            forge
                .update_comment(
                    CommentRef {
                        thread: &issue,
                        id: "9"
                    },
                    "x"
                )
                .await,
            Err(ForgeError::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn the_local_user_is_admin_and_others_come_from_the_map() {
        let dir = tempfile::tempdir().unwrap();
        let forge = LocalForge::new(dir.path());
        let me = forge.local_user().to_owned();
        assert_eq!(forge.permission(&me).await.unwrap(), Permission::Admin);
        assert_eq!(
            forge.permission("stranger").await.unwrap(),
            Permission::None
        );
        let forge = forge.with_permissions(BTreeMap::from([("bob".into(), Permission::Write)]));
        assert_eq!(forge.permission("bob").await.unwrap(), Permission::Write);
    }

    #[tokio::test]
    async fn a_pull_request_needs_its_head_branch() {
        let dir = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            assert!(
                std::process::Command::new("git")
                    .arg("-C")
                    .arg(repo.path())
                    .args(args)
                    .status()
                    .unwrap()
                    .success()
            )
        };
        git(&["init", "-q", "-b", "main"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ]);
        let forge = LocalForge::new(dir.path()).with_repository(repo.path());
        let request = |head: &str| PullRequestRequest {
            head: head.into(),
            base: "main".into(),
            title: "T".into(),
            body: "Closes #1".into(),
        };
        let error = forge.open_pull_request(&request("nope")).await.unwrap_err();
        assert!(matches!(error, ForgeError::Unprocessable { .. }), "{error}");
        assert!(
            error.to_string().contains("`nope` does not exist"),
            "{error}"
        );
        let opened = forge.open_pull_request(&request("main")).await.unwrap();
        assert_eq!(opened.number, 1);
        let pulls = forge.pull_requests().await.unwrap();
        assert_eq!(pulls[0].request.body, "Closes #1");
    }
}
