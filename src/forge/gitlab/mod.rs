//! GitLab: a hand-written client for the REST API v4, the [`Forge`] over issues and merge
//! requests, and the history branch through the commits API.
//!
//! Needs a project or personal access token with the `api` scope in `GITLAB_TOKEN`;
//! `CI_JOB_TOKEN` cannot post notes, commit or open merge requests (see [`token`]).

pub(crate) mod client;
mod discussions;
pub(crate) mod forge_impl;
pub(crate) mod history_branch;
mod pipelines;
pub(crate) mod token;

pub use client::{GitLabClient, RetryPolicy};
pub use forge_impl::GitLabForge;
pub use history_branch::GitLabHistory;
pub use token::gitlab_token;

use crate::config::Config;
use crate::forge::{Forge, ForgeError};
use crate::history::HistoryBackend;
use crate::trigger::{Actor, Request, StartRules, Trigger, TriggerComment};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a run on GitLab talks to.
pub struct GitLabConnection {
    pub forge: Arc<dyn Forge>,
    pub history: Arc<dyn HistoryBackend>,
    /// The CI job's page (`CI_JOB_URL`, else the pipeline's), for "View run" links.
    pub run_url: Option<String>,
}

/// The API root: the trigger's `CI_API_V4_URL`, else the environment's, else
/// `CI_SERVER_URL` + `/api/v4` (self-managed instances), else gitlab.com.
pub fn api_url(trigger: &Trigger, env: &BTreeMap<String, String>) -> String {
    let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    trigger
        .api_url
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .or_else(|| var("CI_API_V4_URL"))
        .map(str::to_owned)
        .or_else(|| {
            var("CI_SERVER_URL").map(|server| format!("{}/api/v4", server.trim_end_matches('/')))
        })
        .unwrap_or_else(|| "https://gitlab.com/api/v4".to_owned())
}

/// Builds the GitLab forge and history backend for a trigger. No request is made here; a
/// missing token (or only `CI_JOB_TOKEN`) is an error that says what to set up.
pub async fn connect(
    trigger: &Trigger,
    cfg: &Config,
    env: &BTreeMap<String, String>,
) -> Result<GitLabConnection, ForgeError> {
    let token = gitlab_token(env)?;
    let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let project = trigger
        .project_id
        .as_deref()
        .or_else(|| var("CI_PROJECT_ID"))
        .or(Some(trigger.repo.as_str()).filter(|r| !r.is_empty()))
        .or_else(|| var("CI_PROJECT_PATH"))
        .ok_or_else(|| {
            ForgeError::Other(
                "no GitLab project: run inside a GitLab CI job (CI_PROJECT_ID) or set CI_PROJECT_PATH to the project path".into(),
            )
        })?
        .to_owned();
    let client = GitLabClient::new(&api_url(trigger, env), &project, &token)?
        .with_max_body_bytes(cfg.forge_api.max_body_bytes());
    let run_url = var("CI_JOB_URL")
        .or_else(|| var("CI_PIPELINE_URL"))
        .map(str::to_owned);
    let forge = GitLabForge::new(client.clone(), run_url.clone());
    let mut history = GitLabHistory::new(client, &cfg.history.branch, &cfg.history.directory);
    history.retry = crate::history::cas::Retry::with_timeout(cfg.history.append_timeout());
    Ok(GitLabConnection {
        forge: Arc::new(forge),
        history: Arc::new(history),
        run_url,
    })
}

/// Completes a trigger from a pipeline started with `REPLAN_NOTE_ID`: fetches the note and makes
/// its author the actor and its text the request (the pipeline user only owns the trigger
/// token). Other triggers are left as they are. Call it before the gate.
pub async fn resolve_note(
    forge: &dyn Forge,
    trigger: &mut Trigger,
    rules: &StartRules,
) -> Result<(), ForgeError> {
    let Request::FetchComment { id } = &trigger.request else {
        return Ok(());
    };
    let id = id.clone();
    let thread = trigger.thread.ok_or_else(|| {
        ForgeError::Other(format!(
            "REPLAN_NOTE_ID={id} needs REPLAN_ISSUE_IID to say which issue the note is on"
        ))
    })?;
    let note = forge
        .comments(&thread)
        .await?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| ForgeError::NotFound {
            what: format!("note {id} (REPLAN_NOTE_ID) on {thread}"),
        })?;
    let author = Actor {
        login: note.author.clone(),
        id: None,
        is_bot: note.author_is_bot,
    };
    let comment = TriggerComment {
        id: note.id,
        body: note.body,
        created_at: Some(note.created_at),
        updated_at: Some(note.updated_at),
    };
    trigger.resolve_comment(comment, author, rules);
    Ok(())
}
