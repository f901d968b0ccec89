//! Running `git` on a repository, for every part that asks git something.

use super::{ToolError, ToolErrorKind};
use std::path::Path;

/// Run git in `repo` and keep its output as it is (a patch's trailing blank line matters).
pub fn git_output(
    repo: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<std::process::Output, ToolError> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        // A surrounding git (a hook, a worktree) may have set these; they would redirect us.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("cannot run git: {e}")))
}

/// Run git in `repo`; stdout on success, a Failed error with stderr otherwise.
pub fn git(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, ToolError> {
    let output = git_output(repo, args, env)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(ToolError::new(
            ToolErrorKind::Failed,
            format!(
                "`git {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ))
    }
}
