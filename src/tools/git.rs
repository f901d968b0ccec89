//! Committing the working tree to a new branch without touching the checkout.
//!
//! The commit is built in a temporary index (`GIT_INDEX_FILE`), so the current branch, the real
//! index and the working tree stay exactly as they were: the run can go on editing and testing
//! after a pull request was opened.

use super::git_wire::{Opened, Outgoing, PushSettings, Remote};
use super::remote_objects::{RemoteObjects, TreeObjects, tree_objects};
use super::{ToolError, ToolErrorKind};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Who commits the changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitAuthor {
    pub name: String,
    pub email: String,
}

impl CommitAuthor {
    /// The variables that make git commit (or merge) as this author, whatever its config says.
    pub fn identity(&self) -> [(&'static str, &str); 4] {
        [
            ("GIT_AUTHOR_NAME", self.name.as_str()),
            ("GIT_AUTHOR_EMAIL", self.email.as_str()),
            ("GIT_COMMITTER_NAME", self.name.as_str()),
            ("GIT_COMMITTER_EMAIL", self.email.as_str()),
        ]
    }
}

impl Default for CommitAuthor {
    fn default() -> Self {
        CommitAuthor {
            name: "Replan".to_owned(),
            email: "replan@users.noreply.github.com".to_owned(),
        }
    }
}

/// Makes a local branch available to the forge (push, or nothing for a local forge).
#[async_trait]
pub trait Publisher: Send + Sync {
    async fn publish(&self, repo: &Path, branch: &str) -> Result<(), ToolError>;

    /// Like `publish`, replacing whatever the remote branch held (a fan-out subtask's branch,
    /// redone on a newer work branch). Publishers that cannot force fall back to `publish`.
    async fn replace(&self, repo: &Path, branch: &str) -> Result<(), ToolError> {
        self.publish(repo, branch).await
    }

    /// Whether [`Publisher::publish_commit`] sends the commit it is given without reading the
    /// local branch, so the caller may move the branch at the same time.
    fn pushes_commits(&self) -> bool {
        false
    }

    /// Make `commit` the forge's `branch` (a fast-forward), sending `outgoing` without
    /// `git push` where the publisher can, through `opened` when the push was started ahead
    /// ([`Publisher::open_push`]). Publishers that do not push commits publish the local
    /// branch, which must already point at `commit`.
    async fn publish_commit(
        &self,
        repo: &Path,
        _commit: &str,
        branch: &str,
        _outgoing: Option<&Outgoing>,
        _opened: Option<Opened>,
    ) -> Result<(), ToolError> {
        self.publish(repo, branch).await
    }

    /// Start the next push now, before the commit it will send exists (see [`Opened`]): `None`
    /// when this publisher sends no packs or the remote cannot be reached that way.
    async fn open_push(&self, _repo: &Path) -> Option<Opened> {
        None
    }

    /// Find out ahead of the first push how it reaches the remote (blocking: asks git).
    fn prepare(&self, _repo: &Path) {}

    /// Whether [`Publisher::publish_commit`] may send a pack of its own (so saves make one).
    fn sends_packs(&self) -> bool {
        false
    }
}

/// `<source>:refs/heads/<branch>` (the source a local branch or a commit id), forced with `+`
/// when the remote may be rewritten.
fn push_refspec(source: &str, branch: &str, force: bool) -> String {
    let plus = if force { "+" } else { "" };
    format!("{plus}{source}:refs/heads/{branch}")
}

fn local_branch(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// How a publisher runs `git push` with one refspec (blocking: called on a worker thread).
trait GitPush: Clone + Send + Sync + 'static {
    fn push_refspec(&self, repo: &Path, refspec: &str) -> Result<(), ToolError>;

    /// Where the push goes when it can do without `git push` (blocking; see [`Remote::resolve`]).
    fn remote(&self, repo: &Path) -> Option<Remote>;

    /// The publisher's memory of [`GitPush::remote`]: asked once per run.
    fn resolved(&self) -> &std::sync::OnceLock<Option<Remote>>;
}

/// [`GitPush::remote`], asked once.
fn remote_of<P: GitPush>(pusher: &P, repo: &Path) -> Option<Remote> {
    pusher
        .resolved()
        .get_or_init(|| pusher.remote(repo))
        .clone()
}

/// [`remote_of`] from an async caller: asked on a worker thread the first time.
async fn resolved_remote<P: GitPush>(pusher: &P, repo: &Path) -> Option<Remote> {
    if let Some(known) = pusher.resolved().get() {
        return known.clone();
    }
    let (pusher, dir) = (pusher.clone(), repo.to_path_buf());
    tokio::task::spawn_blocking(move || remote_of(&pusher, &dir))
        .await
        .ok()
        .flatten()
}

/// Push `source` (a local branch or a commit id) to `branch` on a worker thread.
async fn push<P: GitPush>(
    pusher: &P,
    repo: &Path,
    source: &str,
    branch: &str,
    force: bool,
) -> Result<(), ToolError> {
    let (pusher, repo) = (pusher.clone(), repo.to_path_buf());
    let refspec = push_refspec(source, branch, force);
    tokio::task::spawn_blocking(move || pusher.push_refspec(&repo, &refspec))
        .await
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("git push stopped: {e}")))?
}

#[async_trait]
impl<P: GitPush> Publisher for P {
    async fn publish(&self, repo: &Path, branch: &str) -> Result<(), ToolError> {
        push(self, repo, &local_branch(branch), branch, false).await
    }

    async fn replace(&self, repo: &Path, branch: &str) -> Result<(), ToolError> {
        push(self, repo, &local_branch(branch), branch, true).await
    }

    fn pushes_commits(&self) -> bool {
        true
    }

    async fn publish_commit(
        &self,
        repo: &Path,
        commit: &str,
        branch: &str,
        outgoing: Option<&Outgoing>,
        opened: Option<Opened>,
    ) -> Result<(), ToolError> {
        if let Some(outgoing) = outgoing.filter(|o| o.commit == commit) {
            let pushed = match opened {
                Some(opened) => opened.push(branch, outgoing).await,
                None => match resolved_remote(self, repo).await {
                    Some(remote) => remote.push(branch, outgoing).await,
                    None => Err("the remote is not one Replan pushes to itself".to_owned()),
                },
            };
            match pushed {
                Ok(()) => return Ok(()),
                Err(why) => tracing::debug!("pushing `{branch}` is left to git: {why}"),
            }
        }
        push(self, repo, commit, branch, false).await
    }

    async fn open_push(&self, repo: &Path) -> Option<Opened> {
        let remote = resolved_remote(self, repo).await?;
        remote
            .open()
            .await
            .inspect_err(|why| tracing::debug!("the push could not be started ahead: {why}"))
            .ok()
    }

    fn prepare(&self, repo: &Path) {
        remote_of(self, repo);
    }

    fn sends_packs(&self) -> bool {
        true
    }
}

/// `git push origin <branch>` when the repository has an `origin` remote; nothing otherwise.
#[derive(Clone, Default)]
pub struct GitPushPublisher {
    resolved: Arc<std::sync::OnceLock<Option<Remote>>>,
}

impl GitPush for GitPushPublisher {
    fn remote(&self, repo: &Path) -> Option<Remote> {
        let settings = PushSettings::read(repo)?;
        let url = match settings.origin_push_url() {
            Some(url) => url,
            // Rewritten or several URLs: git says where it pushes (one URL, or not ours).
            None => git(repo, &["remote", "get-url", "--push", "origin"], &[])
                .ok()
                .filter(|url| !url.contains('\n'))?,
        };
        Remote::resolve(repo, &settings, &url, Vec::new())
    }

    fn resolved(&self) -> &std::sync::OnceLock<Option<Remote>> {
        &self.resolved
    }

    fn push_refspec(&self, repo: &Path, refspec: &str) -> Result<(), ToolError> {
        match git(repo, &["push", "--quiet", "origin", refspec], &[]) {
            Ok(_) => Ok(()),
            // Asked only when the push failed: a checkout without `origin` has nowhere to
            // push to, and that is not an error (one `git` process less per save).
            Err(_) if git(repo, &["remote", "get-url", "origin"], &[]).is_err() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// `git push <url> <branch>` with a token sent as an HTTP header, for forges whose CI checkout
/// cannot push (GitLab's `CI_JOB_TOKEN`). The token never appears in the command line, the URL or
/// an error message: the header reaches git through `GIT_CONFIG_*` variables, which it never echoes.
#[derive(Clone)]
pub struct TokenPushPublisher {
    url: String,
    header: String,
    resolved: Arc<std::sync::OnceLock<Option<Remote>>>,
}

impl TokenPushPublisher {
    pub fn new(url: impl Into<String>, user: &str, token: &str) -> Self {
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
        TokenPushPublisher {
            url: url.into(),
            header: format!("Authorization: Basic {basic}"),
            resolved: Arc::default(),
        }
    }

    /// GitLab CI: push to `$CI_SERVER_URL/$CI_PROJECT_PATH.git` with `GITLAB_TOKEN`.
    pub fn gitlab(env: &std::collections::BTreeMap<String, String>) -> Option<Self> {
        let server = env.get("CI_SERVER_URL").filter(|v| !v.is_empty())?;
        let project = env.get("CI_PROJECT_PATH").filter(|v| !v.is_empty())?;
        let token = env.get("GITLAB_TOKEN").filter(|v| !v.is_empty())?;
        let url = format!("{}/{}.git", server.trim_end_matches('/'), project);
        Some(TokenPushPublisher::new(url, "oauth2", token))
    }
}

impl GitPush for TokenPushPublisher {
    fn remote(&self, repo: &Path) -> Option<Remote> {
        let (name, value) = self.header.split_once(": ")?;
        let settings = PushSettings::read(repo).filter(|s| !s.rewrites_urls())?;
        let header = vec![(name.to_owned(), value.to_owned())];
        Remote::resolve(repo, &settings, &self.url, header)
    }

    fn resolved(&self) -> &std::sync::OnceLock<Option<Remote>> {
        &self.resolved
    }

    fn push_refspec(&self, repo: &Path, refspec: &str) -> Result<(), ToolError> {
        let env = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "http.extraHeader"),
            ("GIT_CONFIG_VALUE_0", self.header.as_str()),
        ];
        git(repo, &["push", "--quiet", &self.url, refspec], &env).map(|_| ())
    }
}

/// Leaves the branch local (the local forge reads it from the repository).
pub struct NoPublish;

#[async_trait]
impl Publisher for NoPublish {
    async fn publish(&self, _repo: &Path, _branch: &str) -> Result<(), ToolError> {
        Ok(())
    }

    fn pushes_commits(&self) -> bool {
        true
    }
}

pub use super::git_command::{git, git_output};

/// The object id of each of `names` (any revision syntax), None for one that does not exist:
/// one `git cat-file --batch-check` for all of them.
pub fn object_ids(repo: &Path, names: &[String]) -> Result<Vec<Option<String>>, ToolError> {
    use std::io::Write as _;
    if let Some(bad) = names.iter().find(|n| n.contains('\n')) {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            format!("not a revision: {bad:?}"),
        ));
    }
    let mut child = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["cat-file", "--batch-check=%(objectname)"])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("cannot run git: {e}")))?;
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    // A few short lines: they fit the pipe, so writing all before reading cannot block.
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("cannot run git: {e}")))?;
    if !output.status.success() || !matches!(written, Some(Ok(()))) {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            format!(
                "`git cat-file --batch-check` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let ids: Vec<Option<String>> = text
        .lines()
        .map(|line| {
            let id = line.trim();
            (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_owned())
        })
        .collect();
    if ids.len() != names.len() {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            format!("`git cat-file --batch-check` printed an unexpected answer: {text}"),
        ));
    }
    Ok(ids)
}

/// The git directory of a checkout whose top is `repo`, read from `<repo>/.git` (a directory,
/// or a worktree's `gitdir:` file) without running git; None when `repo` has no `.git` (a
/// subdirectory of the checkout, say), so the caller asks git.
fn git_dir_of(repo: &Path) -> Option<PathBuf> {
    let dot_git = repo.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    let dir = if meta.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        repo.join(target)
    };
    std::fs::canonicalize(dir).ok().filter(|d| d.is_dir())
}

/// The branch checked out in `repo`, or None when HEAD is detached.
pub fn current_branch(repo: &Path) -> Option<String> {
    git(repo, &["symbolic-ref", "--quiet", "--short", "HEAD"], &[]).ok()
}

/// `prefix`, else `prefix-2`, `prefix-3`, ... whichever exists neither locally nor on origin.
pub fn free_branch_name(repo: &Path, prefix: &str) -> String {
    let taken = |name: &str| {
        [
            format!("refs/heads/{name}"),
            format!("refs/remotes/origin/{name}"),
        ]
        .iter()
        .any(|r| git(repo, &["rev-parse", "--verify", "--quiet", r], &[]).is_ok())
    };
    if !taken(prefix) {
        return prefix.to_owned();
    }
    (2..)
        .map(|n| format!("{prefix}-{n}"))
        .find(|name| !taken(name))
        .expect("some suffix is free")
}

/// Commit every working-tree change (as `git add -A` sees them) on top of HEAD to a new branch
/// `branch`; returns the commit id. "nothing to commit" when the tree equals HEAD's. Paths under
/// `protected` (workspace-relative, directories ending in `/`) keep HEAD's version.
pub fn commit_working_tree(
    repo: &Path,
    branch: &str,
    message: &str,
    author: &CommitAuthor,
    protected: &[String],
) -> Result<String, ToolError> {
    let head = git(repo, &["rev-parse", "--verify", "--quiet", "HEAD"], &[]).map_err(|_| {
        ToolError::new(
            ToolErrorKind::Failed,
            "the repository has no commit yet to branch from",
        )
    })?;
    let tree = working_tree(repo, protected)?;
    if tree == git(repo, &["rev-parse", "HEAD^{tree}"], &[])? {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            "nothing to commit: the working tree has no changes compared with HEAD",
        ));
    }
    // The empty old value makes this fail rather than move an existing branch.
    commit_tree(repo, branch, &tree, &head, NO_COMMIT, message, author)
}

/// `update-ref`'s old value for "the ref must not exist yet", in SHA-1 and SHA-256 repositories
/// alike (forty zeros is not a valid SHA-256 id).
const NO_COMMIT: &str = "";

/// The tree of every working-tree change (as `git add -A` sees them) on top of HEAD, built in a
/// temporary index so the real one is untouched; `protected` paths keep HEAD's version.
pub fn working_tree(repo: &Path, protected: &[String]) -> Result<String, ToolError> {
    // Parallel subtasks snapshot their worktrees at the same time: one index file each.
    static NEXT_INDEX: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT_INDEX.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let git_dir = PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"], &[])?);
    let index = git_dir.join(format!("replan-index-{}-{n}", std::process::id()));
    let index_text = index.to_string_lossy().into_owned();
    let with_index = [("GIT_INDEX_FILE", index_text.as_str())];
    let tree = (|| {
        git(repo, &["read-tree", "HEAD"], &with_index)?;
        let mut add = vec![
            "add".to_owned(),
            "-A".to_owned(),
            "--".to_owned(),
            ".".to_owned(),
        ];
        add.extend(
            protected
                .iter()
                .map(|p| format!(":(exclude){}", p.trim_end_matches('/'))),
        );
        let add: Vec<&str> = add.iter().map(String::as_str).collect();
        git(repo, &add, &with_index)?;
        git(repo, &["write-tree"], &with_index)
    })();
    let _ = std::fs::remove_file(&index);
    tree
}

/// Commit `tree` on `parent` and move `branch` from `old` (compare-and-swap) to it.
fn commit_tree(
    repo: &Path,
    branch: &str,
    tree: &str,
    parent: &str,
    old: &str,
    message: &str,
    author: &CommitAuthor,
) -> Result<String, ToolError> {
    let commit = commit_object(repo, tree, parent, message, author)?;
    move_branch(repo, branch, &commit, old)?;
    Ok(commit)
}

/// Point `branch` at `commit` if it still is at `old` (compare-and-swap; `NO_COMMIT`: if it does
/// not exist yet).
fn move_branch(repo: &Path, branch: &str, commit: &str, old: &str) -> Result<(), ToolError> {
    git(
        repo,
        &["update-ref", &format!("refs/heads/{branch}"), commit, old],
        &[],
    )
    .map(drop)
}

/// A commit of `tree` on `parent`, on no branch.
pub fn commit_object(
    repo: &Path,
    tree: &str,
    parent: &str,
    message: &str,
    author: &CommitAuthor,
) -> Result<String, ToolError> {
    let identity = author.identity();
    git(
        repo,
        &[
            "commit-tree",
            tree,
            "-p",
            parent,
            "-m",
            &crate::outbound::redact(message),
        ],
        &identity,
    )
}

/// Snapshots of the working tree on a branch (on top of its tip, else of HEAD) without touching
/// the checkout. The first save finds the branch and fills a temporary index; later saves only
/// update that index and commit: `git add` and `git update-ref` each, with the tree and the
/// commit object written in-process where git would write the same (issue 15's overhead).
pub struct Snapshots {
    /// The temporary index, kept between saves so `git add -A` only re-reads changed files.
    index: PathBuf,
    /// The next commit's parent: the branch's tip, or the last commit made here.
    parent: String,
    /// What `update-ref` expects the branch to be.
    old: String,
    /// The tree of `parent`: a save whose tree is the same commits nothing.
    tree: String,
    /// Where commit objects are written without `git commit-tree` (see `git_objects`).
    objects: Option<PathBuf>,
    /// Whether commits are packed for a push (see [`Snapshots::open_for_push`]).
    packs: bool,
    /// What the remote branch holds, when known: the next save's push sends only what its
    /// commit adds (see [`Snapshots::take_outgoing`]).
    remote: Option<RemoteObjects>,
    /// The last commit and the objects of its tree, the remote's once it is pushed.
    pending: Option<(String, TreeObjects)>,
    /// The pack of the last commit for the push that follows it.
    outgoing: Option<Outgoing>,
    /// How `git add -A` may be done without git (see `index_add`); None: git does it.
    adding: Option<super::index_add::AddSettings>,
}

impl Snapshots {
    /// Find `branch` (or HEAD) and fill the temporary index: one `git` process (two when the
    /// checkout's git directory is not `<repo>/.git`) and a copy of the checkout's index.
    pub fn open(repo: &Path, branch: &str) -> Result<Snapshots, ToolError> {
        Self::open_with(repo, branch, false)
    }

    /// [`Snapshots::open`] for saves whose commits a publisher may push without `git push`:
    /// each commit also packs what it adds (see [`Snapshots::take_outgoing`]).
    pub fn open_for_push(repo: &Path, branch: &str) -> Result<Snapshots, ToolError> {
        Self::open_with(repo, branch, true)
    }

    fn open_with(repo: &Path, branch: &str, packs: bool) -> Result<Snapshots, ToolError> {
        let full = format!("refs/heads/{branch}");
        // One `cat-file` answers for the branch and HEAD at once, and says "missing" instead of
        // failing for a branch that does not exist yet.
        let names = [
            full.clone(),
            format!("{full}^{{tree}}"),
            "HEAD".to_owned(),
            "HEAD^{tree}".to_owned(),
        ];
        // The settings an add without git needs are read beside, by a second `git` process
        // (both ahead of the first save).
        let (ids, config) = std::thread::scope(|scope| {
            let config = scope.spawn(|| {
                super::git_wire::settings::config_entries(
                    repo,
                    &["--get-regexp", super::index_add::KEYS],
                )
            });
            (object_ids(repo, &names), config.join().ok().flatten())
        });
        let ids = ids?;
        let (tip, parent, tree) = match (&ids[0], &ids[1], &ids[2], &ids[3]) {
            (Some(commit), Some(tree), _, _) => {
                (Some(commit.clone()), commit.clone(), tree.clone())
            }
            (_, _, Some(head), Some(tree)) => (None, head.clone(), tree.clone()),
            _ => {
                return Err(ToolError::new(
                    ToolErrorKind::Failed,
                    "the repository has no commit yet to save the work on",
                ));
            }
        };
        let (git_dir, objects) = match git_dir_of(repo) {
            Some(dir) => {
                let objects = super::git_objects::objects_dir(&dir, |v| std::env::var(v).ok());
                (dir, objects)
            }
            None => (
                PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"], &[])?),
                None,
            ),
        };
        let index = git_dir.join(format!("replan-work-index-{}", std::process::id()));
        // `git add -A` makes the index match the working tree whatever it starts from; a copy of
        // the checkout's own index starts it with the files' stat data, so unchanged files are
        // not read and hashed again, and saves a `git read-tree`.
        if copy_index(&git_dir.join("index"), &index).is_err() {
            let index_text = index.to_string_lossy().into_owned();
            git(
                repo,
                &["read-tree", &parent],
                &[("GIT_INDEX_FILE", &index_text)],
            )?;
        }
        // The copied index is the parent's tree (a fresh CI checkout): what the remote has of
        // the branch, or of the commit a new branch starts from.
        let remote = objects.as_ref().filter(|_| packs).and_then(|_| {
            let contents = super::index_tree::contents(&std::fs::read(&index).ok()?)?;
            (hex::encode(contents.root) == tree).then(|| RemoteObjects {
                tip: tip.clone(),
                base: parent.clone(),
                have: tree_objects(&contents),
            })
        });
        let adding = objects
            .as_ref()
            .filter(|_| tree.len() == 40)
            .and_then(|objects| {
                let git_dir = objects.parent()?;
                super::index_add::AddSettings::new(&config?, git_dir, |v| std::env::var(v).ok())
            });
        Ok(Snapshots {
            index,
            old: tip.unwrap_or_else(|| NO_COMMIT.to_owned()),
            parent,
            tree,
            objects,
            packs,
            remote,
            pending: None,
            outgoing: None,
            adding,
        })
    }

    /// Commit the working tree on the branch; `Ok(None)` when the branch already holds exactly
    /// this tree.
    pub fn save(
        &mut self,
        repo: &Path,
        branch: &str,
        message: &str,
        author: &CommitAuthor,
    ) -> Result<Option<String>, ToolError> {
        let Some(commit) = self.commit(repo, message, author)? else {
            return Ok(None);
        };
        self.advance(repo, branch, &commit)?;
        Ok(Some(commit))
    }

    /// A commit of the working tree on top of the last one, not on any branch yet (see
    /// [`Snapshots::advance`]); `Ok(None)` when the tree is the last commit's.
    pub fn commit(
        &mut self,
        repo: &Path,
        message: &str,
        author: &CommitAuthor,
    ) -> Result<Option<String>, ToolError> {
        let index_text = self.index.to_string_lossy().into_owned();
        let with_index = [("GIT_INDEX_FILE", index_text.as_str())];
        let added = match (&self.adding, &self.objects) {
            (Some(settings), Some(objects)) => objects.parent().is_some_and(|git_dir| {
                super::index_add::add_all(repo, git_dir, &self.index, objects, settings)
            }),
            _ => false,
        };
        if !added {
            let started = std::time::Instant::now();
            git(repo, &["add", "-A", "--", "."], &with_index)?;
            tracing::debug!(
                "snapshot: `git add` took {} µs",
                started.elapsed().as_micros()
            );
        }
        let index = std::fs::read(&self.index).ok();
        let tree = match self.write_tree(index.as_deref()) {
            Some(tree) => tree,
            None => git(repo, &["write-tree"], &with_index)?,
        };
        if tree == self.tree {
            return Ok(None);
        }
        let written = self.objects.as_ref().and_then(|objects| {
            let body = super::git_objects::commit_body(
                &tree,
                &self.parent,
                &crate::outbound::redact(message),
                (&author.name, &author.email),
                super::git_objects::now(),
            )?;
            let id = super::git_objects::write_loose(objects, "commit", body.as_bytes()).ok()?;
            Some((id, body))
        });
        let commit = match &written {
            Some((commit, _)) => commit.clone(),
            None => commit_object(repo, &tree, &self.parent, message, author)?,
        };
        self.prepare_push(&commit, written.map(|(_, body)| body), index, &tree);
        self.parent = commit.clone();
        self.tree = tree;
        Ok(Some(commit))
    }

    /// The temporary index's tree, written in-process where git would write the same (see
    /// `index_tree`; a SHA-1 repository, as the parent's tree id says).
    fn write_tree(&self, index: Option<&[u8]>) -> Option<String> {
        let objects = self.objects.as_ref().filter(|_| self.tree.len() == 40)?;
        super::index_tree::write_tree(index?, objects)
    }

    /// Before `commit` (of `tree`, on `self.parent`) becomes the parent: the objects of its
    /// tree for the remote's record once it is pushed, and the pack of what it adds to the
    /// remote's branch when that is known.
    fn prepare_push(
        &mut self,
        commit: &str,
        body: Option<String>,
        index: Option<Vec<u8>>,
        tree: &str,
    ) {
        self.outgoing = None;
        self.pending = None;
        if !self.packs {
            return;
        }
        let Some(contents) = index.and_then(|index| super::index_tree::contents(&index)) else {
            return;
        };
        if hex::encode(contents.root) != tree {
            return;
        }
        if let (Some(remote), Some(body), Some(objects)) = (&self.remote, &body, &self.objects) {
            let this = (commit, body.as_bytes(), self.parent.as_str());
            self.outgoing = remote.outgoing(this, &contents, objects);
        }
        self.pending = Some((commit.to_owned(), tree_objects(&contents)));
    }

    /// Whether the next commit will come with a pack (see [`Snapshots::take_outgoing`]): the
    /// save may then start its push before the commit is made.
    pub fn packs_next(&self) -> bool {
        self.packs && self.objects.is_some() && self.remote.is_some()
    }

    /// The pack for pushing the last commit, when the push can do without `git push`.
    pub fn take_outgoing(&mut self) -> Option<Outgoing> {
        self.outgoing.take()
    }

    /// The last commit's push succeeded (the remote now holds its tree) or failed (what the
    /// remote holds is unknown until a push succeeds again).
    pub fn pushed(&mut self, succeeded: bool) {
        self.remote = match (succeeded, self.pending.take()) {
            (true, Some((commit, have))) => Some(RemoteObjects {
                tip: Some(commit.clone()),
                base: commit,
                have,
            }),
            _ => None,
        };
    }

    /// Move the branch to `commit` (from [`Snapshots::commit`]): compare-and-swap from where the
    /// last move left it, so a branch someone else moved meanwhile is an error, not overwritten.
    pub fn advance(&mut self, repo: &Path, branch: &str, commit: &str) -> Result<(), ToolError> {
        move_branch(repo, branch, commit, &self.old)?;
        self.old = commit.to_owned();
        Ok(())
    }
}

/// A copy of the checkout's index that keeps its modification time: entries as new as the index
/// are "racily clean", and a later time would vouch for them (see `index_add`).
fn copy_index(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    let modified = std::fs::metadata(from)?.modified()?;
    std::fs::File::options()
        .write(true)
        .open(to)?
        .set_modified(modified)
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.index);
    }
}

/// Bring the files of `branch` (fetched from `origin` when it is not here) into a clean working
/// tree whose HEAD it descends from; the index stays at HEAD. `Ok(false)` when there is nothing
/// to restore or the checkout is not one it can be restored onto.
pub fn restore_working_tree(repo: &Path, branch: &str) -> Result<bool, ToolError> {
    let local = format!("refs/heads/{branch}");
    let exists =
        |repo: &Path| git(repo, &["rev-parse", "--verify", "--quiet", &local], &[]).is_ok();
    if !exists(repo) && git(repo, &["remote", "get-url", "origin"], &[]).is_ok() {
        let _ = git(
            repo,
            &["fetch", "--quiet", "origin", &format!("+{local}:{local}")],
            &[],
        );
    }
    if !exists(repo)
        || !git(repo, &["status", "--porcelain"], &[])?
            .trim()
            .is_empty()
        || git(repo, &["merge-base", "--is-ancestor", "HEAD", &local], &[]).is_err()
    {
        return Ok(false);
    }
    git(repo, &["checkout", &local, "--", "."], &[])?;
    git(repo, &["reset", "--quiet"], &[])?;
    Ok(true)
}

/// `git -C dir` for tests: no global or system config, a fixed identity.
#[cfg(test)]
pub(crate) fn isolated_git(dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    command
}

#[cfg(test)]
mod token_push_tests {
    use super::*;

    pub(super) fn run(dir: &Path, args: &[&str]) {
        let ok = isolated_git(dir).args(args).status().unwrap().success();
        assert!(ok, "git {args:?}");
    }

    /// Under `dir`: `work` with `a.txt` committed on `main`, and an empty bare `remote.git`.
    pub(super) fn work_and_bare_remote(dir: &Path) -> (PathBuf, PathBuf) {
        let (work, remote) = (dir.join("work"), dir.join("remote.git"));
        std::fs::create_dir_all(&work).unwrap();
        run(dir, &["init", "-q", "--bare", remote.to_str().unwrap()]);
        run(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("a.txt"), "a\n").unwrap();
        run(&work, &["add", "-A"]);
        run(&work, &["commit", "-q", "-m", "a"]);
        (work, remote)
    }

    /// A new repository (`git init` with `init_args`) whose `main` has `a.txt` committed.
    fn one_commit(init_args: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let mut init = vec!["init", "-q", "-b", "main"];
        init.extend_from_slice(init_args);
        run(tmp.path(), &init);
        std::fs::write(tmp.path().join("a.txt"), "a").unwrap();
        run(tmp.path(), &["add", "-A"]);
        run(tmp.path(), &["commit", "-q", "-m", "a"]);
        tmp
    }

    #[test]
    fn snapshots_commit_each_new_tree_once_on_top_of_the_last() {
        let tmp = one_commit(&[]);
        let work = tmp.path();
        let author = CommitAuthor {
            name: "Replan".into(),
            email: "replan@example.com".into(),
        };
        let branch = "replan/work/issue-1";
        let save = |s: &mut Snapshots| s.save(work, branch, "m", &author).unwrap();
        let mut snapshots = Snapshots::open(work, branch).unwrap();
        assert_eq!(save(&mut snapshots), None);
        std::fs::write(work.join("b.txt"), "b").unwrap();
        let first = save(&mut snapshots).unwrap();
        std::fs::write(work.join("c.txt"), "c").unwrap();
        let second = save(&mut snapshots).unwrap();
        assert_eq!(save(&mut snapshots), None);
        let parent = git(work, &["rev-parse", &format!("{second}^")], &[]).unwrap();
        assert_eq!(parent, first);
        let files = git(work, &["ls-tree", "--name-only", &second], &[]).unwrap();
        assert_eq!(files, "a.txt\nb.txt\nc.txt");
        // The checkout's own index and HEAD are untouched.
        assert_eq!(
            git(work, &["status", "--porcelain"], &[]).unwrap(),
            "?? b.txt\n?? c.txt"
        );
        let index = snapshots.index.clone();
        drop(snapshots);
        assert!(
            !index.exists(),
            "the temporary index goes with the snapshots"
        );
        // A later run finds the branch and goes on from its tip and its tree.
        let mut again = Snapshots::open(work, branch).unwrap();
        assert_eq!(save(&mut again), None);
        std::fs::write(work.join("d.txt"), "d").unwrap();
        let third = save(&mut again).unwrap();
        let parent = git(work, &["rev-parse", &format!("{third}^")], &[]).unwrap();
        assert_eq!(parent, second);
    }

    #[test]
    fn the_commit_written_without_git_is_the_one_git_commit_tree_writes() {
        let tmp = one_commit(&[]);
        let work = tmp.path();
        let author = CommitAuthor {
            name: "Replan Bot".into(),
            email: "replan@example.com".into(),
        };
        let mut snapshots = Snapshots::open(work, "replan/work/issue-3").unwrap();
        assert!(snapshots.objects.is_some(), "a plain checkout: in-process");
        std::fs::write(work.join("b.txt"), "b").unwrap();
        let message = "Replan: work on issue #3 after 1 finished task(s)";
        let ours = snapshots
            .save(work, "replan/work/issue-3", message, &author)
            .unwrap()
            .unwrap();
        let text = git(work, &["cat-file", "-p", &ours], &[]).unwrap();
        let stamp = text
            .lines()
            .find_map(|l| l.strip_prefix("committer Replan Bot <replan@example.com> "))
            .unwrap()
            .to_owned();
        let tree = git(work, &["rev-parse", &format!("{ours}^{{tree}}")], &[]).unwrap();
        // The tree (written in-process too) is the one git writes for the same files.
        let scratch = work.join(".git/scratch-index");
        let scratch = [("GIT_INDEX_FILE", scratch.to_str().unwrap())];
        git(work, &["add", "-A"], &scratch).unwrap();
        assert_eq!(git(work, &["write-tree"], &scratch).unwrap(), tree);
        let head = git(work, &["rev-parse", "HEAD"], &[]).unwrap();
        let mut env = author.identity().to_vec();
        env.extend([("GIT_AUTHOR_DATE", stamp.as_str())]);
        env.extend([("GIT_COMMITTER_DATE", stamp.as_str())]);
        let theirs = git(
            work,
            &["commit-tree", &tree, "-p", &head, "-m", message],
            &env,
        )
        .unwrap();
        assert_eq!(ours, theirs, "{text}");
        git(work, &["fsck", "--strict", "--no-dangling"], &[]).unwrap();
        assert_eq!(
            git(work, &["rev-parse", "refs/heads/replan/work/issue-3"], &[]).unwrap(),
            ours
        );
    }

    #[test]
    fn a_sha256_repository_gets_its_commits_from_git() {
        let tmp = one_commit(&["--object-format=sha256"]);
        let work = tmp.path();
        let mut snapshots = Snapshots::open(work, "replan/work/issue-4").unwrap();
        std::fs::write(work.join("b.txt"), "b").unwrap();
        let commit = snapshots
            .save(work, "replan/work/issue-4", "m", &CommitAuthor::default())
            .unwrap()
            .unwrap();
        assert_eq!(commit.len(), 64);
        git(work, &["fsck", "--strict", "--no-dangling"], &[]).unwrap();
        let files = git(work, &["ls-tree", "--name-only", &commit], &[]).unwrap();
        assert_eq!(files, "a.txt\nb.txt");
    }

    #[tokio::test]
    async fn pushes_the_branch_to_the_url_and_never_shows_the_token() {
        let tmp = tempfile::tempdir().unwrap();
        let (work, remote) = work_and_bare_remote(tmp.path());
        run(&work, &["branch", "replan/issue-1"]);

        let token = "glpat-secret-token-value";
        let publisher = TokenPushPublisher::new(remote.to_str().unwrap(), "oauth2", token);
        publisher.publish(&work, "replan/issue-1").await.unwrap();
        let heads = std::process::Command::new("git")
            .arg("-C")
            .arg(&remote)
            .args(["branch", "--list"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&heads.stdout).contains("replan/issue-1"));

        let missing = TokenPushPublisher::new(
            tmp.path().join("nowhere.git").to_str().unwrap(),
            "oauth2",
            token,
        );
        let err = missing.publish(&work, "replan/issue-1").await.unwrap_err();
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("oauth2:{token}"));
        assert!(
            !err.message.contains(token) && !err.message.contains(&encoded),
            "{}",
            err.message
        );
        assert!(err.message.contains("push"), "{}", err.message);
    }

    #[test]
    fn gitlab_publisher_needs_the_server_the_project_and_a_token() {
        let mut env = std::collections::BTreeMap::new();
        env.insert(
            "CI_SERVER_URL".to_owned(),
            "https://gitlab.example.com/".to_owned(),
        );
        env.insert("CI_PROJECT_PATH".to_owned(), "group/app".to_owned());
        assert!(
            TokenPushPublisher::gitlab(&env).is_none(),
            "no GITLAB_TOKEN, no publisher"
        );
        env.insert("GITLAB_TOKEN".to_owned(), "glpat-x".to_owned());
        assert_eq!(
            TokenPushPublisher::gitlab(&env).unwrap().url,
            "https://gitlab.example.com/group/app.git"
        );
    }
}

#[cfg(test)]
#[path = "git_push_tests.rs"]
mod push_tests;
