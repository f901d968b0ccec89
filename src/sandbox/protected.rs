//! Paths no tool and no command may create, change or delete: the configuration
//! (`.replan.yml`, `.github/replan.yml`, a `--config` file inside the workspace), Replan's local
//! state (`.replan/`, `--local-dir`, the history directory) and `.git`.
//!
//! `.github/replan/` (prompt overrides) is protected for the same reason as the configuration.
//!
//! The file tools refuse them up front ([`ProtectedPaths::check`]). Commands and MCP servers
//! cannot be refused up front and Landlock cannot make part of the writable workspace read-only,
//! so each command, each MCP server start and each MCP tool call runs between a [`Snapshot`] and
//! [`Snapshot::restore`] ([`restoring`]): whatever it changed there is put back
//! and the command is reported failed. For `.git` the snapshot covers what can run code or
//! redirect a push (`config`, `hooks/`, `info/`, `HEAD`, `refs/`, `packed-refs`), not the object
//! store, which is append-only in practice and large.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Always protected, relative to the workspace root; a trailing `/` marks a directory.
/// `.github/replan/` holds the prompt overrides, which steer the next run like the config does.
pub const ALWAYS: &[&str] = &[
    ".replan.yml",
    ".github/replan.yml",
    ".github/replan/",
    ".replan/",
    ".git/",
];

/// The parts of `.git` a command's changes are undone in.
const GIT_SNAPSHOT: &[&str] = &[
    ".git/config",
    ".git/hooks/",
    ".git/info/",
    ".git/HEAD",
    ".git/refs/",
    ".git/packed-refs",
];

/// Protected paths of one workspace, relative and `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPaths {
    root: PathBuf,
    /// Files as `a/b`, directories as `a/b/`.
    entries: Vec<String>,
}

impl ProtectedPaths {
    /// The [`ALWAYS`] list for the workspace at `root` (canonical).
    pub fn new(root: &Path) -> Self {
        ProtectedPaths {
            root: root.to_path_buf(),
            entries: ALWAYS.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// The same relative entries for a checkout of the workspace at `root` (canonical).
    pub fn rebased(&self, root: &Path) -> Self {
        ProtectedPaths {
            root: root.to_path_buf(),
            entries: self.entries.clone(),
        }
    }

    /// Adds `path` (absolute, or relative to the root) when it lies inside the workspace;
    /// `dir` marks a directory.
    pub fn add(&mut self, path: &Path, dir: bool) {
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let absolute = absolute.canonicalize().unwrap_or(absolute);
        let Ok(relative) = absolute.strip_prefix(&self.root) else {
            return;
        };
        let mut text = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if text.is_empty() {
            return;
        }
        if dir {
            text.push('/');
        }
        if !self.entries.contains(&text) {
            self.entries.push(text);
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// The protected entry `relative` (a workspace path, `/`-separated) falls under, if any.
    pub fn covering(&self, relative: &str) -> Option<&str> {
        let relative = relative.trim_end_matches('/');
        self.entries
            .iter()
            .find(|entry| match entry.strip_suffix('/') {
                Some(dir) => relative == dir || relative.starts_with(entry.as_str()),
                None => relative == entry.as_str(),
            })
            .map(String::as_str)
    }

    /// Why `tool` may not write `relative`, when it is protected.
    pub fn check(&self, tool: &str, relative: &str) -> Result<(), String> {
        match self.covering(relative) {
            Some(entry) => Err(format!(
                "{tool}: `{relative}` is protected (`{entry}`: Replan's configuration, local \
                 state or git metadata); tools may not create, change or delete it"
            )),
            None => Ok(()),
        }
    }

    /// What a command may not change, as it is now.
    pub fn snapshot(&self) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut roots = Vec::new();
        for entry in &self.entries {
            if entry == ".git/" {
                roots.extend(GIT_SNAPSHOT.iter().map(|s| (*s).to_owned()));
            } else {
                roots.push(entry.clone());
            }
        }
        for root in &roots {
            let path = self.root.join(root.trim_end_matches('/'));
            record(&path, &mut files);
        }
        Snapshot {
            roots: roots
                .iter()
                .map(|r| self.root.join(r.trim_end_matches('/')))
                .collect(),
            files,
            workspace: self.root.clone(),
        }
    }
}

/// Runs `work`, then puts back whatever it changed under the protected paths; also returns
/// those paths (empty when nothing changed).
pub async fn restoring<T>(
    protected: &ProtectedPaths,
    work: impl std::future::Future<Output = T>,
) -> (T, Vec<String>) {
    let snapshot = protected.snapshot();
    let output = work.await;
    let restored = tokio::task::spawn_blocking(move || snapshot.restore())
        .await
        .unwrap_or_default();
    (output, restored)
}

/// One node of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
}

/// The protected paths' content before a command.
#[derive(Debug)]
pub struct Snapshot {
    roots: Vec<PathBuf>,
    files: BTreeMap<PathBuf, Node>,
    workspace: PathBuf,
}

fn record(path: &Path, out: &mut BTreeMap<PathBuf, Node>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() {
        if let Ok(target) = std::fs::read_link(path) {
            out.insert(path.to_path_buf(), Node::Link(target));
        }
    } else if meta.is_dir() {
        out.insert(path.to_path_buf(), Node::Dir);
        if let Ok(children) = std::fs::read_dir(path) {
            for child in children.flatten() {
                record(&child.path(), out);
            }
        }
    } else if let Ok(bytes) = std::fs::read(path) {
        out.insert(path.to_path_buf(), Node::File(bytes));
    }
}

fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

impl Snapshot {
    /// Puts back every protected path the command changed; returns them (workspace-relative),
    /// empty when nothing changed.
    pub fn restore(&self) -> Vec<String> {
        let mut now = BTreeMap::new();
        for root in &self.roots {
            record(root, &mut now);
        }
        if now == self.files {
            return Vec::new();
        }
        let mut changed = Vec::new();
        // New or changed paths: remove what should not be there (deepest first).
        for (path, node) in now.iter().rev() {
            if self.files.get(path) != Some(node) {
                changed.push(path.clone());
                if !(matches!(node, Node::Dir) && self.files.get(path) == Some(&Node::Dir)) {
                    remove(path);
                }
            }
        }
        // Missing or changed: write back what was there (parents first).
        for (path, node) in &self.files {
            if now.get(path) == Some(node) {
                continue;
            }
            if !changed.contains(path) {
                changed.push(path.clone());
            }
            let _ = match node {
                Node::Dir => std::fs::create_dir_all(path),
                Node::File(bytes) => {
                    remove(path);
                    std::fs::write(path, bytes)
                }
                Node::Link(target) => {
                    remove(path);
                    std::os::unix::fs::symlink(target, path)
                }
            };
        }
        let mut shown: Vec<String> = changed
            .iter()
            .map(|p| {
                p.strip_prefix(&self.workspace)
                    .unwrap_or(p)
                    .display()
                    .to_string()
            })
            .collect();
        shown.sort();
        shown.dedup();
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_cover_files_and_directories_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut protected = ProtectedPaths::new(&root);
        protected.add(&root.join("conf/replan.yaml"), false);
        protected.add(Path::new("/elsewhere/state"), true);
        for path in [
            ".replan.yml",
            ".github/replan.yml",
            ".replan",
            ".replan/planning_history/issues/1.jsonl",
            ".git/config",
            "conf/replan.yaml",
        ] {
            assert!(protected.covering(path).is_some(), "{path}");
        }
        for path in [
            ".replan.yml.bak",
            ".replanx/a",
            "src/.replan.yml",
            "conf",
            ".github/x",
        ] {
            assert!(protected.covering(path).is_none(), "{path}");
        }
        assert!(!protected.entries().iter().any(|e| e.contains("elsewhere")));
    }

    #[test]
    fn a_snapshot_puts_changed_created_and_deleted_paths_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".replan.yml"), "tools: {}\n").unwrap();
        std::fs::create_dir_all(root.join(".replan/planning_history")).unwrap();
        std::fs::write(root.join(".replan/planning_history/1.jsonl"), "{}\n").unwrap();
        let protected = ProtectedPaths::new(&root);
        let snapshot = protected.snapshot();
        assert!(snapshot.restore().is_empty());

        std::fs::write(
            root.join(".replan.yml"),
            "tools: {allowed_commands: [bash]}\n",
        )
        .unwrap();
        std::fs::remove_dir_all(root.join(".replan/planning_history")).unwrap();
        std::fs::create_dir_all(root.join(".github")).unwrap();
        std::fs::write(root.join(".github/replan.yml"), "x: 1\n").unwrap();
        std::fs::write(root.join("ordinary.txt"), "kept\n").unwrap();
        let changed = snapshot.restore();

        assert!(changed.contains(&".replan.yml".to_owned()), "{changed:?}");
        assert!(
            changed.contains(&".github/replan.yml".to_owned()),
            "{changed:?}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".replan.yml")).unwrap(),
            "tools: {}\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".replan/planning_history/1.jsonl")).unwrap(),
            "{}\n"
        );
        assert!(!root.join(".github/replan.yml").exists());
        assert!(root.join("ordinary.txt").exists());
    }
}
