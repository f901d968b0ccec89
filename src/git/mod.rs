//! Replan's own git: the privileged side's one git module.
//!
//! Every git process Replan starts is made by [`command::command`], with a fixed environment and
//! settings that beat any config file; a checkout is adopted at the start of a run
//! ([`private::adopt`]) and from then on reached only through its private copy. The model's
//! tools never come here (they live in `tools/`).

pub mod command;
pub mod credentials;
pub mod private;

pub use command::{output_with, run, run_with};
pub use private::{Adopted, adopt};

/// A git operation that failed, with what git said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    pub message: String,
}

impl GitError {
    pub fn new(message: impl Into<String>) -> Self {
        GitError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GitError {}

/// The run's private directory of the work tree `dir` belongs to (where its worktrees and
/// temporary files go), when it was adopted.
pub fn private_root(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    command::private_git_dir(dir).and_then(|git| git.parent().map(std::path::Path::to_path_buf))
}
