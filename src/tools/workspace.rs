//! The checked-out repository the workspace tools are confined to.
//!
//! Every path from the model is relative to the root; `..` that climbs above it, absolute paths,
//! symlinks resolving outside it and anything under `.git` (which may hold the checkout's
//! credentials) are denied. The file tools go further: they reach files only through
//! [`Confined`], which the kernel keeps beneath the root and off every symlink.

use super::confined::{Confined, FilePath};
use super::error::{ToolError, ToolErrorKind};
use crate::sandbox::protected::ProtectedPaths;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    /// What the writing tools refuse and commands get restored (`sandbox::protected`).
    protected: ProtectedPaths,
    /// The temporary directory commands get (`TMPDIR`, writable): a parallel subtask's own,
    /// else the process's.
    temp: Option<PathBuf>,
}

/// A path from the model, checked to be inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    /// Absolute path on disk (symlinks in existing parts resolved).
    pub absolute: PathBuf,
    /// Path relative to the root, `/`-separated, for messages.
    pub relative: String,
}

impl Workspace {
    /// Use `root` (which must be an existing directory) as the workspace.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, String> {
        let root = root.as_ref();
        let canonical = root.canonicalize().map_err(|e| {
            format!(
                "workspace `{}` cannot be used: {e}; pass --workspace with the repository checkout",
                root.display()
            )
        })?;
        if !canonical.is_dir() {
            return Err(format!(
                "workspace `{}` is not a directory; pass --workspace with the repository checkout",
                root.display()
            ));
        }
        Ok(Workspace {
            temp: None,
            protected: ProtectedPaths::new(&canonical),
            root: canonical,
        })
    }

    /// `--workspace`, else `GITHUB_WORKSPACE`, else `CI_PROJECT_DIR`, else the current directory.
    pub fn detect(explicit: Option<&Path>) -> Result<Self, String> {
        Self::detect_with(explicit, |name| std::env::var_os(name))
    }

    pub fn detect_with(
        explicit: Option<&Path>,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, String> {
        if let Some(path) = explicit {
            return Self::new(path);
        }
        for name in ["GITHUB_WORKSPACE", "CI_PROJECT_DIR"] {
            if let Some(value) = env(name).filter(|v| !v.is_empty()) {
                return Self::new(PathBuf::from(value))
                    .map_err(|e| format!("{name} points to an unusable directory: {e}"));
            }
        }
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?;
        Self::new(cwd)
    }

    /// Another checkout of this workspace at `root` (a parallel subtask's worktree), with the
    /// same protected paths.
    pub fn checkout_at(&self, root: &Path) -> Result<Self, String> {
        let mut other = Self::new(root)?;
        other.protected = self.protected.rebased(&other.root);
        Ok(other)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This workspace whose commands get `temp` as their temporary directory.
    pub fn with_temp_dir(mut self, temp: &Path) -> Self {
        self.temp = Some(temp.to_path_buf());
        self
    }

    /// The temporary directory of commands run here (`None`: the process's).
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_deref()
    }

    /// Check a path the model gave (a command's working folder); it need not exist yet (its
    /// nearest existing ancestor must be inside the workspace).
    pub fn resolve(&self, path: &str) -> Result<WorkspacePath, ToolError> {
        let relative = self.normalise(path)?;
        let joined = self.root.join(&relative);
        let absolute = match std::fs::symlink_metadata(&joined) {
            Ok(_) => {
                let target = joined.canonicalize().map_err(|_| {
                    denied(format!(
                        "`{path}` is a symlink whose target does not exist; it may point outside \
                         the workspace"
                    ))
                })?;
                self.ensure_inside(path, &target)?;
                target
            }
            Err(_) => {
                let (ancestor, rest) = nearest_existing_ancestor(&joined);
                let resolved = ancestor
                    .canonicalize()
                    .map_err(|e| denied(format!("`{path}` cannot be resolved: {e}")))?;
                self.ensure_inside(path, &resolved)?;
                resolved.join(rest)
            }
        };
        let relative = absolute
            .strip_prefix(&self.root)
            .map(slash_path)
            .unwrap_or_else(|_| slash_path(&relative));
        if relative.split('/').next() == Some(".git") {
            return Err(denied(format!(
                "`{path}` is inside .git, which the tools may not touch"
            )));
        }
        Ok(WorkspacePath { absolute, relative })
    }

    /// Also protects `path` (the `--config` file, the local dir, the history directory) when
    /// it lies inside the workspace.
    pub fn protect(&mut self, path: &Path, dir: bool) {
        self.protected.add(path, dir);
    }

    pub fn protected(&self) -> &ProtectedPaths {
        &self.protected
    }

    /// Resolve a path that must exist.
    pub fn resolve_existing(&self, path: &str) -> Result<WorkspacePath, ToolError> {
        let resolved = self.resolve(path)?;
        if !resolved.absolute.exists() {
            return Err(ToolError::new(
                ToolErrorKind::NotFound,
                format!("`{path}` does not exist in the workspace"),
            ));
        }
        Ok(resolved)
    }

    /// A path the model gave, for the file tools: normalised (an inner `..` that stays inside is
    /// resolved by name, never by the kernel) and refused if it names `.git` in any case.
    pub fn file_path(&self, path: &str) -> Result<FilePath, ToolError> {
        FilePath::new(&self.normalise(path)?)
    }

    /// [`Workspace::file_path`] for a path `tool` is about to create, change or delete:
    /// protected paths are refused.
    pub fn writable_file_path(&self, tool: &str, path: &str) -> Result<FilePath, ToolError> {
        let resolved = self.file_path(path)?;
        self.protected
            .check(tool, &resolved.relative)
            .map_err(denied)?;
        Ok(resolved)
    }

    /// The handle every read and write of the file tools goes through.
    pub fn files(&self) -> Result<Confined, ToolError> {
        Confined::open(&self.root)
    }

    /// The relative path of something found by walking the workspace.
    pub fn relative_of(&self, absolute: &Path) -> String {
        absolute
            .strip_prefix(&self.root)
            .map(slash_path)
            .unwrap_or_else(|_| absolute.display().to_string())
    }

    /// Lexically normalise a relative path, refusing anything that leaves the root.
    fn normalise(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "the path is empty; give a path relative to the workspace root (`.` for the root)",
            ));
        }
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(denied(format!(
                            "`{path}` uses `..` to leave the workspace; paths must stay inside \
                             the repository"
                        )));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(denied(format!(
                        "`{path}` is absolute; give a path relative to the workspace root"
                    )));
                }
            }
        }
        Ok(parts.iter().collect())
    }

    fn ensure_inside(&self, path: &str, resolved: &Path) -> Result<(), ToolError> {
        if resolved.starts_with(&self.root) {
            Ok(())
        } else {
            Err(denied(format!(
                "`{path}` resolves to `{}`, outside the workspace (through a symlink)",
                resolved.display()
            )))
        }
    }
}

fn nearest_existing_ancestor(path: &Path) -> (PathBuf, PathBuf) {
    let mut ancestor = path.to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&ancestor).is_err() {
        match (ancestor.parent(), ancestor.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                ancestor = parent.to_path_buf();
            }
            _ => break,
        }
    }
    rest.reverse();
    (ancestor, rest.iter().collect())
}

fn slash_path(path: &Path) -> String {
    let text = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    if text.is_empty() {
        ".".to_owned()
    } else {
        text
    }
}

fn denied(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::Denied, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_prefers_the_flag_then_github_then_gitlab() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let env = |name: &str| match name {
            "GITHUB_WORKSPACE" => Some(a.path().into()),
            "CI_PROJECT_DIR" => Some(b.path().into()),
            _ => None,
        };
        let flagged = Workspace::detect_with(Some(b.path()), env).unwrap();
        assert_eq!(flagged.root(), b.path().canonicalize().unwrap());
        let github = Workspace::detect_with(None, env).unwrap();
        assert_eq!(github.root(), a.path().canonicalize().unwrap());
        let gitlab = Workspace::detect_with(None, |name| {
            (name == "CI_PROJECT_DIR").then(|| b.path().into())
        })
        .unwrap();
        assert_eq!(gitlab.root(), b.path().canonicalize().unwrap());
    }

    #[test]
    fn a_missing_workspace_names_the_fix() {
        let error = Workspace::new("/definitely/not/here").unwrap_err();
        assert!(error.contains("--workspace"), "{error}");
    }

    #[test]
    fn inner_dot_dot_that_stays_inside_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        assert_eq!(
            ws.resolve("src/../README.md").unwrap().relative,
            "README.md"
        );
        assert_eq!(
            ws.resolve("./src/new/file.rs").unwrap().relative,
            "src/new/file.rs"
        );
    }

    #[test]
    fn the_file_tools_resolve_inner_dot_dot_by_name_and_refuse_dot_git_in_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        assert_eq!(ws.file_path("a/../b.txt").unwrap().relative, "b.txt");
        for path in ["../x", ".GIT/config", "a/.Git/x", "/etc/passwd"] {
            let error = ws.file_path(path).unwrap_err();
            assert_eq!(error.kind, ToolErrorKind::Denied, "{path}: {error}");
        }
    }

    #[test]
    fn dot_git_is_off_limits() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let error = ws.resolve(".git/config").unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::Denied);
    }
}
