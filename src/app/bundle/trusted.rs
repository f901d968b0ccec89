//! What the publish job knows on its own, before it reads the bundle: the thread it publishes
//! for, who asked and in which comment, where a pull request may go and who Replan is on this
//! forge. Every target a bundle names is checked against these (`vet.rs`); none comes from it.

use crate::app::exit::CliError;
use crate::config::Config;
use crate::forge::Forge;
use crate::tools::git::git;
use crate::trigger::{EventOutcome, ForgeKind, Request, ThreadRef, Trigger};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct Trusted {
    /// The one thread this publish job may write to; `None` when its own event names none (a
    /// scheduled sweep, an ignored event): then no threaded write is published.
    pub thread: Option<ThreadRef>,
    /// The comment that triggered the run, the only comment a reaction may go on.
    pub comment_id: Option<String>,
    /// Who triggered the run; the only person whose decision a history entry may record.
    pub actor: String,
    pub request: Request,
    /// Where a pull / merge request may go: the repository's default branch.
    pub bases: Vec<String>,
    /// Replan's own login: config `bot_login`, else the token's account as the forge says.
    pub own_login: Option<String>,
    /// The job's event is a review of the pull request Replan opened for `thread`: the one
    /// pull request whose review threads a bundle may answer and resolve.
    pub review: Option<crate::app::review::ReviewTarget>,
    /// The threads of that review's round, computed from this job's own event and the forge
    /// (`review_round.rs`): the only review threads a bundle may answer, resolve or record.
    pub review_round: Option<Vec<String>>,
}

impl Trusted {
    pub fn thread_name(&self) -> String {
        self.thread
            .map_or_else(|| "no thread".to_owned(), |t| t.to_string())
    }
}

/// The trusted inputs of this job: its own event (the GitHub payload, the GitLab CI variables)
/// or `--issue N`, the default branch, and the forge's answer for Replan's login.
pub async fn derive(
    kind: ForgeKind,
    config: &Config,
    env: &BTreeMap<String, String>,
    workspace: &Path,
    issue: Option<u64>,
    forge: &dyn Forge,
    history: &dyn crate::history::HistoryBackend,
) -> Result<Trusted, CliError> {
    let (mut trigger, default_branch) = match kind {
        ForgeKind::GitHub => github_event(config, env)?,
        ForgeKind::GitLab => gitlab_event(config, env, forge).await?,
        ForgeKind::Local => (None, current_branch(workspace)),
    };
    // A review of Replan's own pull request is for the thread that opened it, as in the agent
    // job, decided here again from this job's own event and the history.
    let review = match &mut trigger {
        Some(trigger) => {
            let rules = crate::app::run::start_rules(config, kind);
            crate::app::review::resolve(trigger, history, &rules).await
        }
        None => None,
    };
    let review_round = match (&review, &trigger) {
        (
            Some(target),
            Some(Trigger {
                request: Request::Review(event),
                ..
            }),
        ) => {
            let policy = crate::app::run::gate_policy(config, kind);
            Some(
                super::review_round::of_this_event(kind, target, event, forge, history, &policy)
                    .await
                    .map_err(CliError::failure)?,
            )
        }
        _ => None,
    };
    let event_thread = review
        .map(|r| r.owner)
        .or_else(|| trigger.as_ref().and_then(|t| t.thread));
    let thread = match (event_thread, issue) {
        (Some(event), Some(number)) if event != ThreadRef::issue(number) => {
            return Err(CliError::usage(format!(
                "--issue {number} disagrees with this job's own event, which is for {event}; drop --issue"
            )));
        }
        (Some(event), _) => Some(event),
        (None, Some(number)) => Some(ThreadRef::issue(number)),
        (None, None) if kind == ForgeKind::Local => {
            return Err(CliError::usage(
                "a local publish needs the thread it publishes for: pass --issue N (the issue of the `replan run --bundle` run)",
            ));
        }
        (None, None) => None,
    };
    let own_login = match kind {
        ForgeKind::GitLab => config.gitlab.bot_login.clone(),
        _ => config.github.bot_login.clone(),
    }
    .filter(|login| !login.trim().is_empty());
    let own_login = match own_login {
        Some(login) => Some(login),
        None => forge.own_login().await,
    }
    .map(|login| login.trim().trim_start_matches('@').to_owned());
    Ok(Trusted {
        thread,
        comment_id: trigger
            .as_ref()
            .and_then(|t| t.comment.as_ref().map(|c| c.id.clone())),
        actor: trigger
            .as_ref()
            .map(|t| t.actor.login.clone())
            .unwrap_or_default(),
        request: trigger.map_or(Request::Sweep, |t| t.request),
        bases: default_branch.into_iter().collect(),
        own_login,
        review,
        review_round,
    })
}

fn github_event(
    config: &Config,
    env: &BTreeMap<String, String>,
) -> Result<(Option<Trigger>, Option<String>), CliError> {
    let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let (Some(event), Some(path)) = (var("GITHUB_EVENT_NAME"), var("GITHUB_EVENT_PATH")) else {
        return Ok((None, None));
    };
    let path = PathBuf::from(path);
    let rules = crate::app::run::start_rules(config, ForgeKind::GitHub);
    let outcome = crate::trigger::github_event::load_actions_event(event, &path, &rules)
        .map_err(|e| CliError::usage(e.to_string()))?;
    // The payload was just read and parsed; read again only for the one field the trigger
    // does not keep.
    let default_branch = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|payload| {
            payload
                .pointer("/repository/default_branch")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
    Ok((outcome_trigger(outcome), default_branch))
}

async fn gitlab_event(
    config: &Config,
    env: &BTreeMap<String, String>,
    forge: &dyn Forge,
) -> Result<(Option<Trigger>, Option<String>), CliError> {
    let rules = crate::app::run::start_rules(config, ForgeKind::GitLab);
    let vars: std::collections::HashMap<String, String> =
        env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let outcome =
        crate::trigger::from_gitlab(&vars, &rules).map_err(|e| CliError::usage(e.to_string()))?;
    let mut trigger = outcome_trigger(outcome);
    if let Some(trigger) = &mut trigger {
        crate::forge::gitlab::resolve_note(forge, trigger, &rules)
            .await
            .map_err(|e| CliError::failure(e.to_string()))?;
    }
    let default_branch = env
        .get("CI_DEFAULT_BRANCH")
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    Ok((trigger, default_branch))
}

fn outcome_trigger(outcome: EventOutcome) -> Option<Trigger> {
    match outcome {
        EventOutcome::Run(trigger) => Some(*trigger),
        EventOutcome::Ignored { reason } => {
            tracing::info!("this job's own event names nothing to publish for: {reason}");
            None
        }
    }
}

/// A local publish runs in the checkout the agent ran in: its branch is the base.
fn current_branch(workspace: &Path) -> Option<String> {
    git(
        workspace,
        &["symbolic-ref", "--quiet", "--short", "HEAD"],
        &[],
    )
    .ok()
    .map(|b| b.trim().to_owned())
    .filter(|b| !b.is_empty())
}
