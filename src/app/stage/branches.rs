//! The git side of a fan-out. Subtask and join jobs fetch the thread's work branch from `origin`
//! and put HEAD (detached) at the commit the work started from, so the cycle restores the work
//! branch's files as on any resume and the tools see the thread's changes as changes (a pull
//! request gets them all). A subtask job pushes its tree, on top of the work branch, to
//! `replan/<thread>-tasks/<ID>` (a redone subtask as a fast-forward of its earlier attempt, so no
//! push is ever forced: in split-trust mode a publish job makes it); the join merges those
//! branches into the work branch in plan order and pushes it.

use crate::app::exit::CliError;
use crate::app::work_branch::work_branch;
use crate::tools::forge_tools::branch_prefix;
use crate::tools::git::{CommitAuthor, Publisher, Snapshots, git};
use crate::trigger::ThreadRef;
use std::path::{Path, PathBuf};

/// `replan/issue-7-tasks/task_1`. Not under `replan/issue-7/`: git cannot hold both that and
/// the pull request's branch `replan/issue-7` on one remote.
pub fn subtask_branch(thread: &ThreadRef, id: &str) -> String {
    format!("{}-tasks/{id}", branch_prefix(thread))
}

fn failed(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::failure(format!("{what}: {e}"))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CliError> + Send + 'static,
) -> Result<T, CliError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| failed("a git step of the stage stopped", e))?
}

/// Whether `origin` has the branch.
fn on_origin(repo: &Path, branch: &str) -> Result<bool, CliError> {
    let refs = git(
        repo,
        &[
            "ls-remote",
            "--heads",
            "origin",
            &format!("refs/heads/{branch}"),
        ],
        &[],
    )
    .map_err(|e| failed("could not list the branches of `origin`", e.message))?;
    Ok(!refs.trim().is_empty())
}

/// Fetch the work branch as `origin` has it (when it has it) and detach HEAD where the work
/// started: the subtask and join jobs build on the subtasks merged so far, even when the
/// checkout's branch moved on since.
pub async fn prepare_checkout(workspace: PathBuf, thread: ThreadRef) -> Result<(), CliError> {
    blocking(move || {
        let repo = workspace.as_path();
        if git(repo, &["remote", "get-url", "origin"], &[]).is_err() {
            return Err(CliError::usage(format!(
                "--stage subtask and --stage join exchange work through the `origin` remote, and {} has none: run them in a clone of the repository (locally: `git remote add origin <bare repository>`)",
                repo.display()
            )));
        }
        let dirty = git(repo, &["status", "--porcelain"], &[])
            .map_err(|e| failed("could not read the checkout's status", e.message))?;
        if !dirty.trim().is_empty() {
            return Err(CliError::usage(format!(
                "--stage subtask and --stage join need a clean checkout, and {} has changes: run them in a fresh clone",
                repo.display()
            )));
        }
        let branch = work_branch(&thread);
        let local = format!("refs/heads/{branch}");
        let mut start = "HEAD".to_owned();
        if on_origin(repo, &branch)? {
            start = git(repo, &["fetch", "--quiet", "origin", &format!("+{local}:{local}")], &[])
                .and_then(|_| git(repo, &["merge-base", "HEAD", &local], &[]))
                .map_err(|e| failed(&format!("could not fetch `{branch}` from `origin`"), e.message))?;
        }
        // Detached even without a work branch: the join's merges never move a branch of the
        // checkout.
        git(repo, &["checkout", "--quiet", "--detach", &start], &[])
            .map_err(|e| failed("could not detach HEAD", e.message))?;
        Ok(())
    })
    .await
}

/// Commit the subtask job's working tree on top of the work branch it started from (HEAD when
/// there is none yet) as `replan/<thread>-tasks/<ID>` and push it, replacing an earlier attempt's
/// branch.
pub async fn push_subtask(
    workspace: PathBuf,
    thread: ThreadRef,
    id: String,
    publisher: std::sync::Arc<dyn Publisher>,
    author: CommitAuthor,
) -> Result<String, CliError> {
    let branch = subtask_branch(&thread, &id);
    let (repo, name) = (workspace.clone(), branch.clone());
    blocking(move || {
        let local = format!("refs/heads/{name}");
        let base = work_tip(&repo, &thread).unwrap_or_else(|| "HEAD".to_owned());
        git(&repo, &["update-ref", &local, &base], &[])
            .map_err(|e| failed(&format!("could not start `{name}`"), e.message))?;
        let message = format!("Replan: subtask {id} of {thread}");
        Snapshots::open(&repo, &name)
            .and_then(|mut snapshots| snapshots.save(&repo, &name, &message, &author))
            .map_err(|e| {
                failed(
                    &format!("could not commit subtask {id} to `{name}`"),
                    e.message,
                )
            })?;
        keep_earlier_attempt(&repo, &name, &author)
    })
    .await?;
    publisher
        .replace(&workspace, &branch)
        .await
        .map_err(|e| failed(&format!("could not push `{branch}` to `origin`"), e.message))?;
    Ok(branch)
}

/// A subtask redone after a conflict (or a failed job) finds its earlier attempt on `origin`.
/// The new commit gets that attempt as a second parent, with the new tree, so the branch moves
/// as a fast-forward: a publish job pushes it without forcing (and may refuse anything else),
/// and the join merges the new tree (the earlier attempt's base is older than the new one's).
fn keep_earlier_attempt(repo: &Path, name: &str, author: &CommitAuthor) -> Result<(), CliError> {
    if !on_origin(repo, name)? {
        return Ok(());
    }
    let earlier_ref = format!("refs/replan-fanout/earlier/{name}");
    let earlier = git(
        repo,
        &[
            "fetch",
            "--quiet",
            "origin",
            &format!("+refs/heads/{name}:{earlier_ref}"),
        ],
        &[],
    )
    .and_then(|_| git(repo, &["rev-parse", "--verify", &earlier_ref], &[]))
    .map_err(|e| {
        failed(
            &format!("could not fetch `{name}` from `origin`"),
            e.message,
        )
    })?;
    let local = format!("refs/heads/{name}");
    let commit = git(repo, &["rev-parse", "--verify", &local], &[])
        .map_err(|e| failed(&format!("could not read `{name}`"), e.message))?;
    if git(
        repo,
        &["merge-base", "--is-ancestor", &earlier, &commit],
        &[],
    )
    .is_ok()
    {
        return Ok(());
    }
    let tree = format!("{commit}^{{tree}}");
    let message = format!("Replan: `{name}` redone on the merged work, replacing {earlier}");
    let merged = git(
        repo,
        &[
            "commit-tree",
            &tree,
            "-p",
            &commit,
            "-p",
            &earlier,
            "-m",
            &message,
        ],
        &author.identity(),
    )
    .and_then(|merged| git(repo, &["update-ref", &local, &merged], &[]).map(|_| merged))
    .map_err(|e| failed(&format!("could not keep the earlier `{name}`"), e.message))?;
    tracing::info!("`{name}`: redone as {merged}, a fast-forward of the earlier attempt {earlier}");
    Ok(())
}

/// What merging the subtask branches did.
#[derive(Debug, Default)]
pub struct Joined {
    pub merged: Vec<String>,
    /// A subtask whose branch conflicted with the ones merged before it, and the files.
    pub conflicts: Vec<(String, Vec<String>)>,
}

/// Merge the branches of `done` (plan order) into HEAD, skipping those already in it; a conflict
/// is aborted and reported. The work branch then points at the result and is pushed.
pub async fn join_subtask_branches(
    workspace: PathBuf,
    thread: ThreadRef,
    done: Vec<String>,
    publisher: std::sync::Arc<dyn Publisher>,
    author: CommitAuthor,
) -> Result<Joined, CliError> {
    let repo = workspace.clone();
    let joined = blocking(move || merge_all(&repo, &thread, &done, &author)).await?;
    let branch = work_branch(&thread);
    publisher
        .publish(&workspace, &branch)
        .await
        .map_err(|e| failed(&format!("could not push `{branch}` to `origin`"), e.message))?;
    Ok(joined)
}

fn merge_all(
    repo: &Path,
    thread: &ThreadRef,
    done: &[String],
    author: &CommitAuthor,
) -> Result<Joined, CliError> {
    let identity = author.identity();
    let fork = git(repo, &["rev-parse", "HEAD"], &[])
        .map_err(|e| failed("could not read HEAD", e.message))?;
    if let Some(tip) = work_tip(repo, thread) {
        git(repo, &["checkout", "--quiet", "--detach", &tip], &[])
            .map_err(|e| failed("could not check out the work branch", e.message))?;
    }
    // Every subtask branch in one fetch, into refs of our own (not branches of the checkout).
    let fetched = format!("refs/replan-fanout/{}", branch_prefix(thread));
    let all = format!(
        "+refs/heads/{}/*:{fetched}/*",
        subtask_branch(thread, "").trim_end_matches('/')
    );
    git(repo, &["fetch", "--quiet", "origin", &all], &[])
        .map_err(|e| failed("could not fetch the subtask branches", e.message))?;
    let mut joined = Joined::default();
    for id in done {
        let branch = subtask_branch(thread, id);
        let Ok(tip) = git(
            repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{fetched}/{id}"),
            ],
            &[],
        ) else {
            tracing::warn!("subtask {id} is done but `origin` has no `{branch}`; nothing to merge");
            continue;
        };
        if git(repo, &["merge-base", "--is-ancestor", &tip, "HEAD"], &[]).is_ok() {
            continue;
        }
        let message = format!("Replan: merge subtask {id} ({branch})");
        let merge = [
            "merge",
            "--quiet",
            "--no-ff",
            "--no-edit",
            "-m",
            &message,
            &tip,
        ];
        match git(repo, &merge, &identity) {
            Ok(_) => joined.merged.push(id.clone()),
            Err(e) => {
                let files =
                    git(repo, &["diff", "--name-only", "--diff-filter=U"], &[]).unwrap_or_default();
                let files: Vec<String> = files.lines().map(str::to_owned).collect();
                if git(repo, &["merge", "--abort"], &[]).is_err() || files.is_empty() {
                    return Err(failed(&format!("could not merge `{branch}`"), e.message));
                }
                tracing::warn!(
                    "subtask {id}: merging `{branch}` conflicts in {}",
                    files.join(", ")
                );
                joined.conflicts.push((id.clone(), files));
            }
        }
    }
    let local = format!("refs/heads/{}", work_branch(thread));
    git(repo, &["update-ref", &local, "HEAD"], &[])
        .and_then(|_| git(repo, &["checkout", "--quiet", "--detach", &fork], &[]))
        .map_err(|e| {
            failed(
                "could not move the work branch to the merged subtasks",
                e.message,
            )
        })?;
    Ok(joined)
}

/// The local work branch's commit, when there is one.
fn work_tip(repo: &Path, thread: &ThreadRef) -> Option<String> {
    let local = format!("refs/heads/{}", work_branch(thread));
    git(repo, &["rev-parse", "--verify", "--quiet", &local], &[]).ok()
}

/// Leave the join's checkout on the work branch (the merged subtasks and whatever the join
/// saved), with the working tree as it is.
pub async fn settle_join_checkout(workspace: PathBuf, thread: ThreadRef) -> Result<(), CliError> {
    blocking(move || {
        let local = format!("refs/heads/{}", work_branch(&thread));
        git(&workspace, &["symbolic-ref", "HEAD", &local], &[])
            .and_then(|_| git(&workspace, &["reset", "--quiet"], &[]))
            .map_err(|e| failed("could not check out the work branch", e.message))?;
        Ok(())
    })
    .await
}
