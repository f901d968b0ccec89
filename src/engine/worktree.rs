//! One checkout per concurrently running subtask: a `git worktree` of the workspace made from
//! its working tree as it is now (uncommitted changes of earlier subtasks included), and the
//! merge of what the subtask changed back into the workspace.
//!
//! The workspace's index, HEAD and branches are never touched: snapshots are built in temporary
//! indexes (`tools::git::working_tree`), merges with `git merge-tree`, and the merged result is
//! written to the working tree only, as if the tools had written it there.
//!
//! The worktrees live in Replan's private directory (issue 35), each with a temporary directory
//! of its own: a subtask's commands may write only those two, never a sibling's worktree. Replan
//! reaches a worktree through the administrative directory its private git made, never through
//! the worktree's `.git` file, which the subtask's commands can rewrite.

use crate::tools::git::{CommitAuthor, commit_object, git, git_output, working_tree};
use crate::tools::workspace::Workspace;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The workspace the subtasks' checkouts are made from and merged into.
#[derive(Clone)]
pub struct Checkouts {
    main: Workspace,
    author: CommitAuthor,
}

/// A subtask's own checkout; removed when dropped.
pub struct Worktree {
    repo: PathBuf,
    path: PathBuf,
    /// Its own temporary directory (the `TMPDIR` of its commands).
    temp: PathBuf,
    /// The commit it was made from: the workspace's working tree when the subtask started.
    base: String,
    pub workspace: Workspace,
}

impl Drop for Worktree {
    fn drop(&mut self) {
        // By hand: `git worktree remove` would read the worktree's `.git` file.
        crate::git::command::unregister(&self.path);
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = std::fs::remove_dir_all(&self.temp);
        let _ = git(&self.repo, &["worktree", "prune"], &[]);
    }
}

impl Checkouts {
    /// `None` when the workspace is not a git repository with a first commit: its subtasks then
    /// run one after another in the workspace itself.
    pub fn new(main: &Workspace) -> Option<Self> {
        let root = main.root();
        // Only a checkout Replan adopted has a private directory to put worktrees in.
        crate::git::private_root(root)?;
        let top = git(root, &["rev-parse", "--show-toplevel"], &[]).ok()?;
        let same_root = Path::new(&top).canonicalize().ok()? == root;
        let has_commit = git(root, &["rev-parse", "--verify", "--quiet", "HEAD"], &[]).is_ok();
        (same_root && has_commit).then(|| Checkouts {
            main: main.clone(),
            author: CommitAuthor::default(),
        })
    }

    fn protected(&self) -> Vec<String> {
        self.main.protected().entries().to_vec()
    }

    /// The working tree of `repo` as a commit on `parent` (no branch moves).
    fn snapshot(&self, repo: &Path, parent: &str, message: &str) -> Result<String, String> {
        let tree = working_tree(repo, &self.protected()).map_err(|e| e.message)?;
        commit_object(repo, &tree, parent, message, &self.author).map_err(|e| e.message)
    }

    /// The workspace's working tree now, as a commit the next checkouts are made from (one for
    /// all the subtasks that start together).
    pub fn base(&self) -> Result<String, String> {
        let repo = self.main.root();
        let head = git(repo, &["rev-parse", "HEAD"], &[]).map_err(|e| e.message)?;
        self.snapshot(repo, &head, "replan: parallel subtasks start here")
    }

    /// A checkout of `base` (see [`Checkouts::base`]) for `task_id`.
    pub fn open(&self, task_id: &str, base: &str) -> Result<Worktree, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let repo = self.main.root().to_path_buf();
        let safe: String = task_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let private = crate::git::private_root(&repo)
            .ok_or_else(|| "the workspace has no private git directory".to_owned())?;
        let name = format!("{}-{safe}", NEXT.fetch_add(1, Ordering::Relaxed));
        let path = private.join("worktrees").join(&name);
        let temp = private.join("worktrees").join(format!("{name}.tmp"));
        std::fs::create_dir_all(&temp)
            .map_err(|e| format!("cannot create {}: {e}", temp.display()))?;
        let shown = path.to_string_lossy().into_owned();
        git(
            &repo,
            &["worktree", "add", "--quiet", "--detach", &shown, base],
            &[],
        )
        .map_err(|e| e.message)?;
        // The administrative directory git made for it, found in the private git directory by
        // the path it records, not through the worktree's `.git` file.
        let admin = admin_dir_of(&repo, &path)?;
        crate::git::command::register(&path, &admin, Vec::new());
        let mut worktree = Worktree {
            repo,
            path: path.clone(),
            temp: temp.clone(),
            base: base.to_owned(),
            workspace: self.main.clone(),
        };
        worktree.workspace = self.main.checkout_at(&path)?.with_temp_dir(&temp);
        Ok(worktree)
    }

    /// Bring what the subtask changed in its checkout into the workspace. `Err` names the
    /// conflicting files when the workspace changed the same lines since the checkout was made;
    /// the workspace is then left as it was.
    pub fn merge(&self, worktree: &Worktree, task_id: &str) -> Result<(), String> {
        let repo = self.main.root();
        // Most subtasks that only run commands change nothing: one git process says so.
        let status = git(
            &worktree.path,
            &["status", "--porcelain", "--untracked-files=all"],
            &[],
        )
        .map_err(|e| e.message)?;
        if status.is_empty() {
            return Ok(());
        }
        let done = self.snapshot(
            &worktree.path,
            &worktree.base,
            &format!("replan: {task_id} done"),
        )?;
        let tree_of = |commit: &str| {
            git(repo, &["rev-parse", &format!("{commit}^{{tree}}")], &[]).map_err(|e| e.message)
        };
        if tree_of(&done)? == tree_of(&worktree.base)? {
            return Ok(());
        }
        let head = git(repo, &["rev-parse", "HEAD"], &[]).map_err(|e| e.message)?;
        let now = self.snapshot(repo, &head, "replan: workspace before the merge")?;
        let merge_base = format!("--merge-base={}", worktree.base);
        let merged = git_output(
            repo,
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                &merge_base,
                &now,
                &done,
            ],
            &[],
        )
        .map_err(|e| e.message)?;
        let out = String::from_utf8_lossy(&merged.stdout).into_owned();
        let mut lines = out.lines();
        let tree = lines.next().unwrap_or_default().trim().to_owned();
        match merged.status.code() {
            Some(0) => {}
            Some(1) => {
                let files: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
                return Err(format!(
                    "merge conflict: subtask {task_id} changed {} in ways that conflict with the \
                     changes merged before it",
                    files.join(", ")
                ));
            }
            _ => {
                return Err(format!(
                    "`git merge-tree` failed: {}",
                    String::from_utf8_lossy(&merged.stderr).trim()
                ));
            }
        }
        let diff = git_output(
            repo,
            &["diff", "--binary", &format!("{now}^{{tree}}"), &tree],
            &[],
        )
        .map_err(|e| e.message)?;
        if !diff.status.success() || diff.stdout.is_empty() {
            return match diff.status.success() {
                true => Ok(()),
                false => Err(String::from_utf8_lossy(&diff.stderr).trim().to_owned()),
            };
        }
        // Through a pipe: a patch file would sit where a command could swap it.
        crate::git::run_with(
            repo,
            &["apply", "--whitespace=nowarn", "-"],
            &[],
            &[],
            Some(&diff.stdout),
        )
        .map(|_| ())
        .map_err(|e| e.message)
    }
}

/// The administrative directory (`<git>/worktrees/<id>`) whose `gitdir` names `path`.
fn admin_dir_of(repo: &Path, path: &Path) -> Result<PathBuf, String> {
    let git_dir = crate::git::command::private_git_dir(repo)
        .ok_or_else(|| "the workspace has no private git directory".to_owned())?;
    let wanted = path.join(".git");
    let entries = std::fs::read_dir(git_dir.join("worktrees"))
        .map_err(|e| format!("cannot read the worktrees of the private git directory: {e}"))?;
    for entry in entries.flatten() {
        let recorded = std::fs::read_to_string(entry.path().join("gitdir")).unwrap_or_default();
        if Path::new(recorded.trim()) == wanted {
            return Ok(entry.path());
        }
    }
    Err(format!("git made no worktree at {}", path.display()))
}
