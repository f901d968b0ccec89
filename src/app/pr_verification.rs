//! After a run ends (completed, unverified, no changes, or a CI result recorded), the thread's
//! own pull / merge request body gets its "Verification" section (issue 37, point 5): the
//! checklist footer's facts and a link to the history file, replaced in place between its
//! markers (`forge::pr_section`), so repeated runs never stack sections.
//!
//! "The thread's own" is what the thread's history records, never what an event or a bundle
//! says: the pull request this run opened, or the one whose `effect` entry names the thread's
//! pull request branch, found on the forge by its idempotency key. Publish (split-trust mode)
//! decides it the same way, with [`recorded_pull_request`].

use crate::config::HistoryConfig;
use crate::forge::{Forge, PullRequestRef};
use crate::history::SessionState;
use crate::history::effects::Intent;
use crate::history::entry::{EffectKind, RunStatus};
use crate::report::verification::{HistoryLink, pull_request_section};
use crate::trigger::{ForgeKind, ThreadRef};
use std::collections::BTreeMap;

/// The statuses a plan that ran to its end leaves: the ones the section reports on.
pub fn reports_on(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Completed | RunStatus::Unverified | RunStatus::NoChanges
    )
}

/// The pull request Replan opened for the thread, as its history records it.
pub async fn recorded_pull_request(
    forge: &dyn Forge,
    state: &SessionState,
    intents: &BTreeMap<String, Intent>,
) -> Result<Option<PullRequestRef>, String> {
    let Some(branch) = state.pull_request_branch.as_deref() else {
        return Ok(None);
    };
    let keys = intents.values().filter(|intent| {
        intent.effect == EffectKind::PullRequest && intent.target.as_deref() == Some(branch)
    });
    for intent in keys {
        let found = forge
            .find_pull_request(&intent.key)
            .await
            .map_err(|e| format!("cannot look up the pull request from `{branch}`: {e}"))?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// Where the history file of `thread` is, with a link on GitHub and GitLab.
pub fn history_link(
    env: &BTreeMap<String, String>,
    kind: ForgeKind,
    history: &HistoryConfig,
    thread: &ThreadRef,
) -> HistoryLink {
    let path = thread.history_path(&history.directory);
    let present = |name: &str| env.get(name).filter(|v| !v.is_empty()).cloned();
    let url = match kind {
        ForgeKind::GitHub => present("GITHUB_REPOSITORY").map(|repo| {
            let server =
                present("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
            format!(
                "{}/{repo}/blob/{}/{path}",
                server.trim_end_matches('/'),
                history.branch
            )
        }),
        ForgeKind::GitLab => present("CI_PROJECT_URL").map(|project| {
            format!(
                "{}/-/blob/{}/{path}",
                project.trim_end_matches('/'),
                history.branch
            )
        }),
        ForgeKind::Local => None,
    };
    HistoryLink {
        path,
        branch: history.branch.clone(),
        url,
    }
}

/// Write the section into `pull_request`'s body. A failure is a warning: the run's work and
/// its history are already where they belong.
pub async fn update(
    forge: &dyn Forge,
    state: &SessionState,
    pull_request: &PullRequestRef,
    history: &HistoryLink,
) {
    let section = pull_request_section(state, history);
    match forge
        .update_pull_request_section(pull_request, &section)
        .await
    {
        Ok(()) => tracing::info!(
            "the Verification section of {} is up to date",
            pull_request.url
        ),
        Err(e) => tracing::warn!(
            "could not update the Verification section of {}: {e}",
            pull_request.url
        ),
    }
}

/// After a run on `thread` ended in `status`: the section of the pull request this run opened
/// (`opened`) or of the one the history records.
pub async fn after_run(
    forge: &dyn Forge,
    state: &SessionState,
    intents: &BTreeMap<String, Intent>,
    opened: Option<PullRequestRef>,
    history: &HistoryLink,
) {
    let target = match opened {
        Some(pr) => Some(pr),
        None => recorded_pull_request(forge, state, intents)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!("{e}");
                None
            }),
    };
    if let Some(pr) = target {
        update(forge, state, &pr, history).await;
    }
}
