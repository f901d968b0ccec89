//! Replan's own git: the privileged side's one git module.
//!
//! Every git process Replan starts is made by [`command::command`], with a fixed environment and
//! settings that beat any config file; a checkout is adopted at the start of a run
//! ([`private::adopt`]) and from then on reached only through its private copy. The model's
//! tools never come here (they live in `tools/`).

pub mod command;
pub mod credentials;
mod error;
pub mod private;
pub mod push_scan;

pub use command::{output_with, run, run_with};
pub use error::GitError;
pub use private::{Adopted, adopt};

/// The run's private directory of the work tree `dir` belongs to (where its worktrees and
/// temporary files go), when it was adopted.
pub fn private_root(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    command::private_git_dir(dir).and_then(|git| git.parent().map(std::path::Path::to_path_buf))
}
