//! The run's private git (`crate::git`) from the run's side: the workspace is adopted before
//! any model action, and at the end of a local run Replan's branches are handed to the
//! developer's checkout through the sandbox, the only way anything of Replan's touches the
//! checkout's `.git` after adoption.

use super::exit::CliError;
use crate::git::Adopted;
use crate::sandbox::SandboxPolicy;
use std::collections::BTreeMap;
use std::path::Path;

/// Adopt `workspace`: its private git directory, outside everything commands may reach.
pub fn adopt(workspace: &Path, env: &BTreeMap<String, String>) -> Result<Adopted, CliError> {
    let forbidden = crate::sandbox::landlock::reachable_paths(workspace);
    let lookup = |name: &str| env.get(name).cloned();
    crate::git::adopt(workspace, &lookup, &forbidden).map_err(|e| CliError::usage(e.message))
}

/// Bring `refs/heads/replan/*` of the private git directory into the checkout's repository:
/// a bundle of them, fetched by `git` in the sandbox (no credentials, Landlock), because the
/// checkout's `.git` is the model's and may hold anything.
pub async fn export_branches(adopted: &Adopted, network: bool) {
    let Some(_) = adopted.git_dir() else {
        return;
    };
    let work_tree = adopted.work_tree().to_path_buf();
    let refs = crate::git::run(
        &work_tree,
        &["for-each-ref", "--format=%(refname)", "refs/heads/replan/"],
        &[],
    )
    .unwrap_or_default();
    let refs: Vec<&str> = refs.lines().filter(|l| !l.is_empty()).collect();
    if refs.is_empty() {
        return;
    }
    let dir = match tempfile_dir() {
        Ok(dir) => dir,
        Err(e) => {
            tracing::warn!("could not hand Replan's branches to the checkout: {e}");
            return;
        }
    };
    let bundle = dir.join("branches.bundle");
    let bundle_text = bundle.to_string_lossy().into_owned();
    let mut args = vec!["bundle", "create", "--quiet", bundle_text.as_str()];
    args.extend(refs.iter().copied());
    if let Err(e) = crate::git::run(&work_tree, &args, &[]) {
        tracing::warn!("could not bundle Replan's branches: {}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let mut fetch = tokio::process::Command::new("git");
    crate::sandbox::confine(
        &mut fetch,
        &SandboxPolicy {
            workspace: work_tree.clone(),
            network,
            temp_dir: None,
        },
    );
    fetch
        .arg("-C")
        .arg(&work_tree)
        .args(["fetch", "--quiet", "--no-write-fetch-head"])
        .arg(&bundle)
        .arg("+refs/heads/replan/*:refs/heads/replan/*")
        .env_clear()
        .envs(crate::tools::env::scrubbed_process_env())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match fetch.output().await {
        Ok(out) if out.status.success() => tracing::info!(
            "the checkout now has Replan's branches ({}), fetched in the sandbox",
            refs.iter()
                .map(|r| r.trim_start_matches("refs/heads/"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Ok(out) => {
            tracing::warn!(
                "could not bring Replan's branches into the checkout: {}; they are kept in {}: \
                 `git fetch {} '+refs/heads/replan/*:refs/heads/replan/*'` brings them",
                String::from_utf8_lossy(&out.stderr).trim(),
                bundle.display(),
                bundle.display()
            );
            return;
        }
        Err(e) => {
            tracing::warn!(
                "could not run git to bring Replan's branches back ({e}); they are kept in {}",
                bundle.display()
            );
            return;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new directory under the temporary directory (readable by the sandboxed fetch).
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "replan-branches-{}-{:016x}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}
