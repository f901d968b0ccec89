//! Push protection, on Replan's side of every push and branch bundle: each object the push adds
//! (blobs, and commit messages) is searched for the run's known secrets in every form the
//! redactor masks (`outbound::secret_scan`). A hit refuses the push, naming the file and the
//! secret's variable, never the value, as GitHub's push protection does: bytes a command wrote
//! are never masked silently, and never leave.

use super::command::output_with;
use super::error::GitError;
use std::path::Path;

/// Refuse when anything `source` (a branch, or a commit id) adds to what the remotes' branches
/// already have holds a known secret.
pub fn refuse_secrets(dir: &Path, source: &str) -> Result<(), GitError> {
    let redactor = crate::outbound::secrets().current();
    let listed = output_with(
        dir,
        &["rev-list", "--objects", source, "--not", "--remotes", "--"],
        &[],
        &[],
        None,
    )?;
    if !listed.status.success() {
        return Err(GitError::new(format!(
            "could not list what the push of `{source}` adds: {}",
            String::from_utf8_lossy(&listed.stderr).trim()
        )));
    }
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    // `<id> <path>` for blobs and trees, `<id>` alone for commits.
    let objects: Vec<(&str, &str)> = listed
        .lines()
        .filter_map(|line| {
            let (id, path) = line.split_once(' ').unwrap_or((line, ""));
            (!id.is_empty()).then_some((id, path))
        })
        .collect();
    if objects.is_empty() {
        return Ok(());
    }
    let input: String = objects.iter().map(|(id, _)| format!("{id}\n")).collect();
    let contents = output_with(
        dir,
        &["cat-file", "--batch"],
        &[],
        &[],
        Some(input.as_bytes()),
    )?;
    if !contents.status.success() {
        return Err(GitError::new(format!(
            "could not read what the push of `{source}` adds: {}",
            String::from_utf8_lossy(&contents.stderr).trim()
        )));
    }
    let mut rest: &[u8] = &contents.stdout;
    for (id, path) in objects {
        // `<id> <type> <size>\n<contents>\n` per object.
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let header = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut fields = header.split(' ');
        let (_, kind, size) = (fields.next(), fields.next(), fields.next());
        let size: usize = size.and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = &rest[end + 1..(end + 1 + size).min(rest.len())];
        rest = &rest[(end + 2 + size).min(rest.len())..];
        let what = match kind {
            Some("blob") => format!("`{path}`"),
            Some("commit") => format!("the message of commit {id}"),
            _ => continue,
        };
        if let Some(hit) = crate::outbound::secret_scan::find_with(&redactor, body) {
            return Err(GitError::new(format!(
                "push refused: {what} holds {hit}; Replan never pushes a known secret. Remove it \
                 from the file (the work stays in the working tree) and run again"
            )));
        }
    }
    Ok(())
}
