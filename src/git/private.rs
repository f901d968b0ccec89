//! Adopting a checkout: before any model action, Replan copies the checkout's repository into a
//! private directory no sandboxed process can reach, and from then on every git operation of
//! Replan's on that checkout uses the copy (see [`super::command`]). The checkout's own `.git`
//! becomes the model's scratch copy: whatever is planted there is never run, followed or read
//! as configuration by Replan.
//!
//! What is copied: objects, refs, `packed-refs` (or a reftable), `shallow`, `HEAD`, the index
//! and `info/exclude`. What is not: hooks, `commondir`, worktrees, modules, and the config,
//! which is written fresh with the repository format, the remotes (credentials removed) and
//! the identity. Credentials are taken out of the checkout's config ([`super::credentials`]) and
//! kept in memory for Replan's own fetches and pushes.

use super::command::{self, register, register_no_repository, unregister};
use super::credentials::{self, Taken};
use super::error::GitError;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A run's private directory: the private git directory, the subtasks' worktrees and every
/// temporary file Replan writes. Removed (and the work tree forgotten) when dropped.
#[derive(Debug)]
pub struct Adopted {
    root: PathBuf,
    work_tree: PathBuf,
    git_dir: Option<PathBuf>,
}

impl Adopted {
    /// The run's private directory (mode 0700).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The private git directory, `None` when the workspace is not a repository.
    pub fn git_dir(&self) -> Option<&Path> {
        self.git_dir.as_deref()
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        unregister(&self.work_tree);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The private directory's parent, the first of: `$REPLAN_PRIVATE_DIR`, `$RUNNER_TEMP/replan`,
/// `$XDG_CACHE_HOME/replan` (else `~/.cache/replan`), `/var/tmp/replan-<uid>`, that lies
/// outside every path commands may read or write (`forbidden`).
pub fn private_parent(
    env: &dyn Fn(&str) -> Option<String>,
    forbidden: &[PathBuf],
) -> Result<PathBuf, GitError> {
    let uid = unsafe_uid();
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    if let Some(dir) = env("REPLAN_PRIVATE_DIR").filter(|v| !v.is_empty()) {
        // Named explicitly: used or refused, never skipped.
        let dir = PathBuf::from(dir);
        return usable(&dir, forbidden, uid)
            .map(|()| dir.clone())
            .map_err(|why| {
                GitError::new(format!(
                    "REPLAN_PRIVATE_DIR `{}` cannot hold Replan's private git directory: {why}; \
                 point it at a directory outside the workspace and $TMPDIR, owned by this user",
                    dir.display()
                ))
            });
    }
    if let Some(dir) = env("RUNNER_TEMP").filter(|v| !v.is_empty()) {
        candidates.push(("RUNNER_TEMP".into(), PathBuf::from(dir).join("replan")));
    }
    match env("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => candidates.push(("XDG_CACHE_HOME".into(), PathBuf::from(dir).join("replan"))),
        None => {
            if let Some(home) = env("HOME").filter(|v| !v.is_empty()) {
                candidates.push(("HOME".into(), PathBuf::from(home).join(".cache/replan")));
            }
        }
    }
    candidates.push((
        "/var/tmp".into(),
        PathBuf::from(format!("/var/tmp/replan-{uid}")),
    ));
    let mut refused = Vec::new();
    for (source, dir) in candidates {
        match usable(&dir, forbidden, uid) {
            Ok(()) => return Ok(dir),
            Err(why) => refused.push(format!("{} ({source}): {why}", dir.display())),
        }
    }
    Err(GitError::new(format!(
        "no directory can hold Replan's private git directory: {}; set REPLAN_PRIVATE_DIR to a \
         directory outside the workspace and $TMPDIR",
        refused.join("; ")
    )))
}

fn unsafe_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// Whether `dir` can be (or become) a private parent: outside every `forbidden` tree, and, when
/// it exists, a real directory (no symlink) owned by this user.
fn usable(dir: &Path, forbidden: &[PathBuf], uid: u32) -> Result<(), String> {
    if !dir.is_absolute() {
        return Err("not an absolute path".into());
    }
    let resolved = resolve_existing_prefix(dir);
    if let Some(inside) = forbidden
        .iter()
        .find(|f| resolved.starts_with(f) || dir.starts_with(f))
    {
        return Err(format!(
            "inside {}, which commands may read or write",
            inside.display()
        ));
    }
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        return Err(format!("cannot create it: {e}"));
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory (or a symlink)".into());
    }
    if meta.uid() != uid {
        return Err(format!(
            "owned by user {}, not by this user ({uid})",
            meta.uid()
        ));
    }
    Ok(())
}

/// `path` with its longest existing prefix resolved (symlinks followed).
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
    let mut resolved = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    resolved
}

/// Adopt `workspace` (see the module comment). `forbidden` are the trees commands may read or
/// write (the private directory must lie outside all of them). A workspace that is not in a
/// git repository is registered as such: a repository the model makes there is never used.
pub fn adopt(
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    forbidden: &[PathBuf],
) -> Result<Adopted, GitError> {
    let parent = private_parent(env, forbidden)?;
    remove_abandoned(&parent);
    let root = make_run_dir(&parent)?;
    let work_tree_of = |dir: &Path| {
        command::run(dir, &["rev-parse", "--show-toplevel"], &[])
            .ok()
            .map(PathBuf::from)
    };
    let Some(work_tree) = work_tree_of(workspace) else {
        if std::process::Command::new("git")
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_err()
        {
            tracing::warn!(
                "git is not installed: Replan cannot save the work branch or open a pull request \
                 in this job; use an image with git (and run git-less steps elsewhere)"
            );
        }
        register_no_repository(workspace);
        return Ok(Adopted {
            root,
            work_tree: workspace.to_path_buf(),
            git_dir: None,
        });
    };
    let adopted = (|| {
        let dirs = command::run(
            &work_tree,
            &["rev-parse", "--absolute-git-dir", "--git-common-dir"],
            &[],
        )?;
        let mut lines = dirs.lines();
        let own = PathBuf::from(lines.next().unwrap_or_default());
        let common = lines
            .next()
            .map(|c| {
                let c = PathBuf::from(c);
                if c.is_absolute() {
                    c
                } else {
                    work_tree.join(c)
                }
            })
            .unwrap_or_else(|| own.clone());
        let Taken {
            config,
            credentials,
        } = credentials::take(&work_tree, &own, env)?;
        let git_dir = root.join("git");
        copy_repository(&own, &common, &git_dir)?;
        std::fs::write(git_dir.join("config"), config)
            .map_err(|e| GitError::new(format!("cannot write the private config: {e}")))?;
        Ok::<_, GitError>((git_dir, credentials))
    })();
    let (git_dir, credentials) = match adopted {
        Ok(adopted) => adopted,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&root);
            return Err(e);
        }
    };
    // A workspace that is a folder of the repository is reached through the same route.
    register(&work_tree, &git_dir, credentials);
    tracing::debug!(
        "git: Replan's own git uses a private copy of the repository in {} (the checkout's .git \
         is never used by Replan again in this run)",
        root.display()
    );
    Ok(Adopted {
        root,
        work_tree,
        git_dir: Some(git_dir),
    })
}

/// Remove the run directories of processes that are gone (a run killed with SIGKILL cannot
/// remove its own).
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("run-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `<parent>/run-<pid>-<random>`, mode 0700, new.
fn make_run_dir(parent: &Path) -> Result<PathBuf, GitError> {
    for _ in 0..8 {
        let dir = parent.join(format!(
            "run-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                // The mode passed to mkdir is masked by the umask; this is not.
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(GitError::new(format!(
                    "cannot create Replan's private directory under {}: {e}",
                    parent.display()
                )));
            }
        }
    }
    Err(GitError::new(format!(
        "cannot create a new private directory under {}",
        parent.display()
    )))
}

/// Copy what git needs of a repository whose own git directory is `own` (HEAD, index) and
/// common directory `common` (objects, refs) into a new git directory `to`.
fn copy_repository(own: &Path, common: &Path, to: &Path) -> Result<(), GitError> {
    let error = |what: &Path, e: std::io::Error| {
        GitError::new(format!(
            "cannot copy {} into Replan's private git directory: {e}",
            what.display()
        ))
    };
    std::fs::create_dir_all(to.join("info")).map_err(|e| error(to, e))?;
    for dir in ["objects", "refs", "reftable"] {
        let from = common.join(dir);
        if from.is_dir() {
            copy_tree(&from, &to.join(dir)).map_err(|e| error(&from, e))?;
        }
    }
    std::fs::create_dir_all(to.join("refs/heads")).map_err(|e| error(to, e))?;
    std::fs::create_dir_all(to.join("objects")).map_err(|e| error(to, e))?;
    for (dir, name) in [
        (common, "packed-refs"),
        (common, "shallow"),
        (common, "info/exclude"),
        (own, "HEAD"),
        (own, "index"),
    ] {
        let from = dir.join(name);
        match std::fs::symlink_metadata(&from) {
            Ok(meta) if meta.is_file() => {
                std::fs::copy(&from, to.join(name)).map_err(|e| error(&from, e))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// A recursive copy of regular files and directories (symlinks are not followed or copied:
/// git makes none in these directories).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_inside_a_forbidden_tree_is_skipped_and_an_explicit_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let forbidden = vec![tmp.path().canonicalize().unwrap()];
        let home = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("cache").to_string_lossy().into_owned();
        let home_path = home.path().to_string_lossy().into_owned();
        let env = |name: &str| match name {
            "XDG_CACHE_HOME" => Some(inside.clone()),
            "HOME" => Some(home_path.clone()),
            _ => None,
        };
        let chosen = private_parent(&env, &forbidden).unwrap();
        assert!(!chosen.starts_with(tmp.path()), "{}", chosen.display());
        let explicit = |name: &str| (name == "REPLAN_PRIVATE_DIR").then(|| inside.clone());
        let error = private_parent(&explicit, &forbidden).unwrap_err();
        assert!(error.message.contains("REPLAN_PRIVATE_DIR"), "{error}");
        assert!(
            error.message.contains("commands may read or write"),
            "{error}"
        );
    }

    #[test]
    fn a_private_parent_owned_by_another_user_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("theirs");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let why = usable(&dir, &[], 0).unwrap_err();
        assert!(why.contains("owned by user 65534"), "{why}");
    }
}
