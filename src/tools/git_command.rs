//! Running `git` for the parts of `tools` that ask git something: through Replan's one git
//! function (`crate::git::command`), with its errors as tool errors.

use super::error::{ToolError, ToolErrorKind};
use std::path::Path;

fn tool_error(e: crate::git::GitError) -> ToolError {
    ToolError::new(ToolErrorKind::Failed, e.message)
}

/// Run git in `repo` and keep its output as it is (a patch's trailing blank line matters).
pub fn git_output(
    repo: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<std::process::Output, ToolError> {
    crate::git::output_with(repo, args, env, &[], None).map_err(tool_error)
}

/// Run git in `repo`; stdout on success, a Failed error with stderr otherwise.
pub fn git(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, ToolError> {
    crate::git::run(repo, args, env).map_err(tool_error)
}

/// [`git`] with `config` settings (sent as `GIT_CONFIG_*` variables, never on the command line)
/// and `input` on standard input.
pub fn git_with(
    repo: &Path,
    args: &[&str],
    config: &[(&str, &str)],
    input: Option<&[u8]>,
) -> Result<String, ToolError> {
    crate::git::run_with(repo, args, &[], config, input).map_err(tool_error)
}
