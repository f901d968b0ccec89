//! What a sandboxed child may reach.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The only tree (besides the temp dir) the child may write.
    pub workspace: PathBuf,
    /// `tools.network`: TCP allowed.
    pub network: bool,
    /// The temporary directory the child may write and gets as `TMPDIR` (a parallel subtask's
    /// own); `None`: the process's.
    pub temp_dir: Option<PathBuf>,
}

impl SandboxPolicy {
    /// The temporary directory the child may write.
    pub fn temp_dir(&self) -> PathBuf {
        self.temp_dir.clone().unwrap_or_else(std::env::temp_dir)
    }
}
