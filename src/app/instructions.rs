//! Which commit the repository's instructions are read from, and reading them (config
//! `instructions`; the files and the prompts are `engine::instructions`).
//!
//! Never from anything the model or a pull request's author can write: an issue's run reads the
//! commit the checkout was on when the run started (before any model action, through Replan's
//! private git); a pull request's run reads the base branch, never the head, so an outsider's
//! pull request cannot rewrite the agent's instructions.

use crate::config::InstructionsConfig;
use crate::engine::instructions::{RepoInstructions, read::read};
use crate::trigger::{ThreadKind, ThreadRef};
use std::collections::BTreeMap;
use std::path::Path;

/// The commit `workspace`'s HEAD names now: call it before anything the model does.
pub fn start_commit(workspace: &Path) -> Option<String> {
    crate::git::run(
        workspace,
        &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        &[],
    )
    .ok()
    .filter(|s| !s.is_empty())
}

/// The instructions for a run on `thread`: read, logged, and what was cut warned about. A
/// failure leaves them out with a warning (the run goes on without them).
pub fn load(
    workspace: &Path,
    env: &BTreeMap<String, String>,
    thread: &ThreadRef,
    start: Option<&str>,
    cfg: &InstructionsConfig,
) -> RepoInstructions {
    if cfg.files.is_empty() || cfg.max_bytes == 0 {
        return RepoInstructions::default();
    }
    let read = trusted_commit(workspace, env, thread.kind, start)
        .and_then(|(commit, source)| read(workspace, &commit, &source, cfg));
    match read {
        Ok(instructions) => {
            for cut in &instructions.cut {
                tracing::warn!("repository instructions: {cut}");
            }
            if !instructions.is_empty() {
                tracing::info!(
                    "repository instructions from {} ({}): {}",
                    instructions.source,
                    instructions.commit,
                    instructions.listing().join(", ")
                );
            }
            instructions
        }
        Err(e) => {
            tracing::warn!("repository instructions are not used in this run: {e}");
            RepoInstructions::default()
        }
    }
}

/// The job summary's section on the instructions (`None` when none were read).
pub fn summary_section(instructions: &RepoInstructions) -> Option<String> {
    if instructions.is_empty() && instructions.cut.is_empty() {
        return None;
    }
    let mut out = format!(
        "\n### Repository instructions\n\nRead from {} (`{}`):\n\n",
        instructions.source, instructions.commit
    );
    for line in instructions.listing() {
        out.push_str(&format!("- {line}\n"));
    }
    for cut in &instructions.cut {
        out.push_str(&format!("- {cut}\n"));
    }
    Some(out)
}

/// The commit to read and why. A pull request's: its base (the event's base commit, else its
/// base branch, else the default branch), as this checkout has it; an issue's: `start`.
pub fn trusted_commit(
    workspace: &Path,
    env: &BTreeMap<String, String>,
    kind: ThreadKind,
    start: Option<&str>,
) -> Result<(String, String), String> {
    if kind != ThreadKind::PullRequest {
        return start
            .map(|c| (c.to_owned(), "the commit the run started at".to_owned()))
            .ok_or_else(|| "the workspace was not a git repository when the run started".into());
    }
    let candidates = pull_request_bases(env);
    for (name, why) in &candidates {
        let found = crate::git::run(
            workspace,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{name}^{{commit}}"),
            ],
            &[],
        );
        if let Ok(commit) = found
            && !commit.is_empty()
        {
            return Ok((commit, why.clone()));
        }
    }
    if candidates.is_empty() {
        return Err("the event names no base branch for the pull request".into());
    }
    Err(format!(
        "the pull request's base ({}) is not in this checkout; fetch it (actions/checkout with \
         `fetch-depth: 0`, GitLab `GIT_DEPTH: 0`): the head's files are never read",
        candidates
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Revisions naming the pull request's base, best first, each with a phrase for the summary.
/// Read from the runner's own event (GitHub) or the pipeline's variables (GitLab).
fn pull_request_bases(env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let get = |name: &str| {
        env.get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let mut shas: Vec<String> = Vec::new();
    let mut branches: Vec<(String, &str)> = Vec::new();
    if let Some(path) = get("GITHUB_EVENT_PATH")
        && let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(event) = serde_json::from_str::<serde_json::Value>(&text)
    {
        let base = &event["pull_request"]["base"];
        shas.extend(base["sha"].as_str().map(str::to_owned));
        branches.extend(base["ref"].as_str().map(|b| (b.to_owned(), "base branch")));
        branches.extend(
            event["repository"]["default_branch"]
                .as_str()
                .map(|b| (b.to_owned(), "default branch")),
        );
    }
    shas.extend(get("CI_MERGE_REQUEST_DIFF_BASE_SHA"));
    branches.extend(get("GITHUB_BASE_REF").map(|b| (b, "base branch")));
    branches.extend(get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME").map(|b| (b, "target branch")));
    branches.extend(get("CI_DEFAULT_BRANCH").map(|b| (b, "default branch")));
    let mut out: Vec<(String, String)> = shas
        .into_iter()
        .filter(|s| s.len() >= 7 && s.chars().all(|c| c.is_ascii_hexdigit()))
        .map(|s| (s.clone(), format!("the pull request's base commit {s}")))
        .collect();
    for (branch, what) in branches {
        let plain = !branch.is_empty()
            && !branch.starts_with(['-', '/'])
            && !branch.contains("..")
            && !branch
                .chars()
                .any(|c| c.is_whitespace() || "~^:?*[\\".contains(c));
        if !plain {
            continue;
        }
        for prefix in ["refs/remotes/origin/", "refs/heads/"] {
            out.push((
                format!("{prefix}{branch}"),
                format!("the {what} `{branch}`"),
            ));
        }
    }
    out
}

/// `replan config --explain`: the files an issue's run in `workspace` would read, from its
/// HEAD, as comment lines.
pub fn explain(workspace: &Path, cfg: &InstructionsConfig) -> Vec<String> {
    if cfg.files.is_empty() || cfg.max_bytes == 0 {
        return vec!["# repository instructions: off (instructions.files is empty)".into()];
    }
    let read = start_commit(workspace)
        .ok_or_else(|| "the workspace is not a git repository with a commit".to_owned())
        .and_then(|commit| read(workspace, &commit, "HEAD", cfg));
    match read {
        Ok(i) if i.is_empty() && i.cut.is_empty() => vec![format!(
            "# repository instructions: none of {} in HEAD ({})",
            cfg.files.join(", "),
            i.commit
        )],
        Ok(i) => std::iter::once(format!(
            "# repository instructions from HEAD ({}):",
            i.commit
        ))
        .chain(i.listing().into_iter().map(|l| format!("#   {l}")))
        .chain(i.cut.iter().map(|c| format!("#   {c}")))
        .collect(),
        Err(e) => vec![format!("# repository instructions: not read: {e}")],
    }
}
