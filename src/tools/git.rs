//! Committing the working tree to a new branch without touching the checkout, and pushing it.
//!
//! The commit is built in a temporary index (`GIT_INDEX_FILE`) in Replan's private git
//! directory, so the checkout's branch, index and working tree stay exactly as they were: the
//! run can go on editing and testing after a pull request was opened. Every git process goes
//! through `crate::git::command` (private git directory, fixed environment).

use super::error::{ToolError, ToolErrorKind};
use async_trait::async_trait;
use std::path::{Path, PathBuf};

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

    /// Make `commit` the forge's `branch` (a fast-forward). Publishers that do not push commits
    /// publish the local branch, which must already point at `commit`.
    async fn publish_commit(
        &self,
        repo: &Path,
        _commit: &str,
        branch: &str,
    ) -> Result<(), ToolError> {
        self.publish(repo, branch).await
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
    let source = source.to_owned();
    tokio::task::spawn_blocking(move || {
        crate::git::push_scan::refuse_secrets(&repo, &source)
            .map_err(|e| ToolError::new(ToolErrorKind::Denied, e.message))?;
        pusher.push_refspec(&repo, &refspec)
    })
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
    ) -> Result<(), ToolError> {
        push(self, repo, commit, branch, false).await
    }
}

/// `git push origin <branch>` when the repository has an `origin` remote; nothing otherwise.
/// The credentials the checkout's config held reach git from Replan's memory
/// (`crate::git::credentials`).
#[derive(Clone, Default)]
pub struct GitPushPublisher;

impl GitPush for GitPushPublisher {
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
}

impl TokenPushPublisher {
    pub fn new(url: impl Into<String>, user: &str, token: &str) -> Self {
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
        TokenPushPublisher {
            url: url.into(),
            header: format!("Authorization: Basic {basic}"),
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
    fn push_refspec(&self, repo: &Path, refspec: &str) -> Result<(), ToolError> {
        super::git_command::git_with(
            repo,
            &["push", "--quiet", &self.url, refspec],
            &[("http.extraHeader", self.header.as_str())],
            None,
        )
        .map(|_| ())
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
    if let Some(bad) = names.iter().find(|n| n.contains('\n')) {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            format!("not a revision: {bad:?}"),
        ));
    }
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let text = super::git_command::git_with(
        repo,
        &["cat-file", "--batch-check=%(objectname)"],
        &[],
        Some(input.as_bytes()),
    )?;
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

/// The git directory Replan uses for `repo`: the private one of an adopted checkout (never the
/// checkout's `.git`), else what git says.
fn git_dir_of(repo: &Path) -> Result<PathBuf, ToolError> {
    match crate::git::command::private_git_dir(repo) {
        Some(dir) => Ok(dir),
        None => git(repo, &["rev-parse", "--absolute-git-dir"], &[]).map(PathBuf::from),
    }
}

/// A temporary index file of Replan's own, in the git directory it uses for `repo` (one per
/// call: parallel subtasks snapshot at the same time).
fn temporary_index(repo: &Path, what: &str) -> Result<PathBuf, ToolError> {
    static NEXT_INDEX: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT_INDEX.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(git_dir_of(repo)?.join(format!("replan-{what}-index-{}-{n}", std::process::id())))
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

/// Commit every working-tree change on top of `branch`'s tip (the local branch, fetched from
/// `origin` when it is not here, else the remote-tracking one): the next commit of a pull request Replan already opened. Returns the
/// commit id; `None` when the tree equals the tip's (nothing new to commit).
pub fn commit_onto_branch(
    repo: &Path,
    branch: &str,
    message: &str,
    author: &CommitAuthor,
    protected: &[String],
) -> Result<Option<String>, ToolError> {
    let local = format!("refs/heads/{branch}");
    let remote = format!("refs/remotes/origin/{branch}");
    let tip = |name: &str| git(repo, &["rev-parse", "--verify", "--quiet", name], &[]).ok();
    if tip(&local).is_none() && git(repo, &["remote", "get-url", "origin"], &[]).is_ok() {
        // A fresh checkout has only what the trigger checked out: the branch is on origin.
        let _ = git(
            repo,
            &["fetch", "--quiet", "origin", &format!("{local}:{local}")],
            &[],
        );
    }
    let (parent, old) = match (tip(&local), tip(&remote)) {
        (Some(local), _) => (local.trim().to_owned(), local.trim().to_owned()),
        (None, Some(remote)) => (remote.trim().to_owned(), NO_COMMIT.to_owned()),
        (None, None) => {
            return Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "the pull request's branch `{branch}` is not in this checkout; fetch it (actions/checkout with `fetch-depth: 0`)"
                ),
            ));
        }
    };
    let tree = working_tree(repo, protected)?;
    if tree == git(repo, &["rev-parse", &format!("{parent}^{{tree}}")], &[])? {
        return Ok(None);
    }
    commit_tree(repo, branch, &tree, &parent, &old, message, author).map(Some)
}

/// `update-ref`'s old value for "the ref must not exist yet", in SHA-1 and SHA-256 repositories
/// alike (forty zeros is not a valid SHA-256 id).
const NO_COMMIT: &str = "";

/// The tree of every working-tree change (as `git add -A` sees them) on top of HEAD, built in a
/// temporary index so the real one is untouched; `protected` paths keep HEAD's version.
pub fn working_tree(repo: &Path, protected: &[String]) -> Result<String, ToolError> {
    let index = temporary_index(repo, "snapshot")?;
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
/// the checkout: `git add -A` into a temporary index kept between saves (so unchanged files are
/// not hashed again), `write-tree`, `commit-tree`, and `update-ref` from where the last save
/// left the branch.
pub struct Snapshots {
    /// The temporary index, kept between saves.
    index: PathBuf,
    /// The next commit's parent: the branch's tip, or the last commit made here.
    parent: String,
    /// What `update-ref` expects the branch to be.
    old: String,
    /// The tree of `parent`: a save whose tree is the same commits nothing.
    tree: String,
}

impl Snapshots {
    /// Find `branch` (or HEAD) and fill the temporary index with its tree.
    pub fn open(repo: &Path, branch: &str) -> Result<Snapshots, ToolError> {
        let full = format!("refs/heads/{branch}");
        // One `cat-file` answers for the branch and HEAD at once, and says "missing" instead of
        // failing for a branch that does not exist yet.
        let names = [
            full.clone(),
            format!("{full}^{{tree}}"),
            "HEAD".to_owned(),
            "HEAD^{tree}".to_owned(),
        ];
        let ids = object_ids(repo, &names)?;
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
        let index = temporary_index(repo, "work")?;
        let index_text = index.to_string_lossy().into_owned();
        git(
            repo,
            &["read-tree", &parent],
            &[("GIT_INDEX_FILE", &index_text)],
        )?;
        Ok(Snapshots {
            index,
            old: tip.unwrap_or_else(|| NO_COMMIT.to_owned()),
            parent,
            tree,
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
        git(repo, &["add", "-A", "--", "."], &with_index)?;
        let tree = git(repo, &["write-tree"], &with_index)?;
        if tree == self.tree {
            return Ok(None);
        }
        let commit = commit_object(repo, &tree, &self.parent, message, author)?;
        self.parent = commit.clone();
        self.tree = tree;
        Ok(Some(commit))
    }

    /// Move the branch to `commit` (from [`Snapshots::commit`]): compare-and-swap from where the
    /// last move left it, so a branch someone else moved meanwhile is an error, not overwritten.
    pub fn advance(&mut self, repo: &Path, branch: &str, commit: &str) -> Result<(), ToolError> {
        move_branch(repo, branch, commit, &self.old)?;
        self.old = commit.to_owned();
        Ok(())
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.index);
    }
}

/// Bring the files of `branch` (fetched from `origin` when it is not here) into a clean working
/// tree whose HEAD it descends from, exactly: files the saved tree does not have are removed
/// (`--no-overlay`); the index stays at HEAD. `Ok(false)` when there is nothing to restore or
/// the checkout is not one it can be restored onto; the branch is then forgotten here, so the
/// next save starts from HEAD and its (non-forced) push is refused rather than building on a
/// tip whose files are not in the working tree.
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
    if !exists(repo) {
        return Ok(false);
    }
    let clean = git(repo, &["status", "--porcelain"], &[])?
        .trim()
        .is_empty();
    let descends = git(repo, &["merge-base", "--is-ancestor", "HEAD", &local], &[]).is_ok();
    if !clean || !descends {
        // The working tree may already hold exactly the saved work (a local run going on in
        // the same checkout): then the branch is its base, as a restore would have made it.
        let saved = git(repo, &["rev-parse", &format!("{local}^{{tree}}")], &[])?;
        if working_tree(repo, &[]).ok().as_deref() != Some(saved.as_str()) {
            git(repo, &["update-ref", "-d", &local], &[])?;
        }
        return Ok(false);
    }
    git(repo, &["checkout", "--no-overlay", &local, "--", "."], &[])?;
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
