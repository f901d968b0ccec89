//! What a sandboxed child may reach.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The only tree (besides the temp dir) the child may write.
    pub workspace: PathBuf,
    /// `tools.network`: TCP allowed.
    pub network: bool,
}
