//! The run's private git (`crate::git`) from the run's side: the workspace is adopted before
//! any model action, and at the end of a local run Replan's branches are handed to the
//! developer's checkout through the sandbox, the only way anything of Replan's touches the
//! checkout's `.git` after adoption.

use super::exit::CliError;
use crate::git::Adopted;
use crate::sandbox::SandboxPolicy;
use crate::tools::ToolError;
use crate::tools::git::Publisher;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Adopt `workspace`: its private git directory, outside everything commands may reach.
pub fn adopt(workspace: &Path, env: &BTreeMap<String, String>) -> Result<Adopted, CliError> {
    let forbidden = crate::sandbox::landlock::reachable_paths(workspace);
    let lookup = |name: &str| env.get(name).cloned();
    crate::git::adopt(workspace, &lookup, &forbidden).map_err(|e| CliError::usage(e.message))
}

/// Bring `refs/heads/replan/*` of the private git directory into the checkout's repository
/// at the end of a local run.
pub async fn export_branches(adopted: &Adopted, network: bool) {
    if adopted.git_dir().is_some() {
        export(adopted.work_tree(), "refs/heads/replan/", network).await;
    }
}

/// Bring the refs under `prefix` (or the one ref it names) of `workspace`'s private git
/// directory into the checkout's repository: a bundle of them, fetched by `git` in the sandbox
/// (no credentials, Landlock), because the checkout's `.git` is the model's and may hold
/// anything.
async fn export(workspace: &Path, prefix: &str, network: bool) {
    let Ok(work_tree) = crate::git::run(workspace, &["rev-parse", "--show-toplevel"], &[]) else {
        return;
    };
    let work_tree = std::path::PathBuf::from(work_tree);
    let refs = crate::git::run(
        &work_tree,
        &["for-each-ref", "--format=%(refname)", prefix],
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
    fetch
        .arg("-C")
        .arg(&work_tree)
        .args(["fetch", "--quiet", "--no-write-fetch-head"])
        .arg(&bundle)
        .args(refs.iter().map(|r| format!("+{r}:{r}")))
        .env_clear()
        .envs(crate::tools::env::scrubbed_process_env())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let policy = SandboxPolicy {
        workspace: work_tree.clone(),
        network,
        temp_dir: None,
    };
    let shown: Vec<&str> = refs
        .iter()
        .map(|r| r.trim_start_matches("refs/heads/"))
        .collect();
    let fetched = match crate::sandbox::spawn(&mut fetch, &policy) {
        Ok(mut child) => {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr() {
                use tokio::io::AsyncReadExt as _;
                let _ = pipe.read_to_string(&mut stderr).await;
            }
            child.wait().await.map(|status| (status, stderr))
        }
        Err(e) => Err(e),
    };
    match fetched {
        Ok((status, _)) if status.success() => tracing::debug!(
            "the checkout now has Replan's branches ({}), fetched in the sandbox",
            shown.join(", ")
        ),
        Ok((_, stderr)) => {
            tracing::warn!(
                "could not bring Replan's branches ({}) into the checkout: {}; they are kept in \
                 {}: `git fetch {} '+refs/heads/replan/*:refs/heads/replan/*'` brings them",
                shown.join(", "),
                stderr.trim(),
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

/// A local run's publisher: after each branch it publishes, the developer's checkout gets the
/// branch too (see [`export`]), so a run killed later still leaves it there.
pub struct ExportingPublisher {
    inner: Arc<dyn Publisher>,
    network: bool,
}

impl ExportingPublisher {
    pub fn new(inner: Arc<dyn Publisher>, network: bool) -> Self {
        ExportingPublisher { inner, network }
    }
}

#[async_trait]
impl Publisher for ExportingPublisher {
    async fn publish(&self, repo: &Path, branch: &str) -> Result<(), ToolError> {
        self.inner.publish(repo, branch).await?;
        export(repo, &format!("refs/heads/{branch}"), self.network).await;
        Ok(())
    }

    async fn replace(&self, repo: &Path, branch: &str) -> Result<(), ToolError> {
        self.inner.replace(repo, branch).await?;
        export(repo, &format!("refs/heads/{branch}"), self.network).await;
        Ok(())
    }

    fn pushes_commits(&self) -> bool {
        self.inner.pushes_commits()
    }

    // A save's commit: the local branch moves beside the push, so it is handed over at the end
    // of the run (`export_branches`), not here.
    async fn publish_commit(
        &self,
        repo: &Path,
        commit: &str,
        branch: &str,
    ) -> Result<(), ToolError> {
        self.inner.publish_commit(repo, commit, branch).await
    }
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
