//! The pull request's branch as a `git bundle`: written by the agent phase, checked and fetched
//! into the checkout by publish.

use crate::tools::git::git;
use std::path::Path;

/// Bundle `refs/heads/<branch>` of `repo` into `file`, leaving out what the checkout's HEAD
/// already holds (publish runs on a checkout of the same commit). Returns the branch's commit.
pub fn create(repo: &Path, branch: &str, file: &Path) -> Result<String, String> {
    let reference = format!("refs/heads/{branch}");
    let commit = git(repo, &["rev-parse", "--verify", &reference], &[]).map_err(|e| e.message)?;
    let head = git(repo, &["rev-parse", "--verify", "HEAD"], &[]).map_err(|e| e.message)?;
    // A bundle leaves as surely as a push: the same push protection.
    crate::git::push_scan::refuse_secrets(repo, &reference).map_err(|e| e.message)?;
    let file_text = file.to_string_lossy();
    let mut args = vec!["bundle", "create", "--quiet", &file_text, &reference];
    let exclude = format!("^{head}");
    if head != commit {
        args.push(&exclude);
    }
    git(repo, &args, &[]).map_err(|e| format!("cannot bundle branch `{branch}`: {}", e.message))?;
    Ok(commit)
}

/// Make `refs/heads/<branch>` in `repo` the bundle's commit: the bundle must apply to this
/// checkout (its prerequisite commits present), hold `branch` at exactly `commit`, and a branch
/// of that name that already exists must be `commit` or an ancestor of it (a fan-out subtask
/// redone as a fast-forward of its earlier attempt): nothing is ever forced.
pub fn apply(repo: &Path, file: &Path, branch: &str, commit: &str) -> Result<(), String> {
    let file_text = file.to_string_lossy();
    let reference = format!("refs/heads/{branch}");
    git(repo, &["bundle", "verify", "--quiet", &file_text], &[]).map_err(|e| {
        format!(
            "the branch `{branch}` in {} does not apply to this checkout ({}); check out the commit the agent job ran on",
            file.display(),
            e.message
        )
    })?;
    let heads =
        git(repo, &["bundle", "list-heads", &file_text, &reference], &[]).map_err(|e| e.message)?;
    let bundled = heads.split_whitespace().next().unwrap_or_default();
    if bundled != commit {
        return Err(format!(
            "{} holds `{branch}` at {bundled:?}, but the manifest says {commit}: the bundle was changed",
            file.display()
        ));
    }
    let existing = git(repo, &["rev-parse", "--verify", "--quiet", &reference], &[]).ok();
    if existing.as_deref() == Some(commit) {
        return Ok(());
    }
    // Without `+`: git refuses to move an existing branch anywhere but forward.
    let refspec = format!("{reference}:{reference}");
    git(repo, &["fetch", "--quiet", &file_text, &refspec], &[])
        .map(|_| ())
        .map_err(|e| match existing {
            Some(existing) => format!(
                "branch `{branch}` already exists at {existing}, and the bundle's {commit} does not \
                 build on it ({}); delete it or publish into a fresh checkout",
                e.message
            ),
            None => format!(
                "cannot fetch `{branch}` from {}: {}",
                file.display(),
                e.message
            ),
        })
}
