//! What the parts of `replan run` share: the options, the run's context, the [`Connection`] a
//! platform builds, and the small helpers every platform uses.

use crate::actions::log::Workflow;
use crate::app::bundle::Recorder;
use crate::app::exit::CliError;
use crate::config::{self, Config, LoadOptions};
use crate::forge::Forge;
use crate::history::HistoryBackend;
use crate::history::store::LoadedThread;
use crate::trigger::{EventSet, ForgeKind, GatePolicy, Permission, StartRules, ThreadRef};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The command-line side of `replan run`, free of clap.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub workspace: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub set: Vec<String>,
    pub issue: Option<u64>,
    pub title: Option<String>,
    pub body: Option<String>,
    /// Comments to add to the local thread, each followed by the cycle on it.
    pub comments: Vec<String>,
    pub local_dir: Option<PathBuf>,
    /// Split-trust mode: record the forge writes in this directory instead of making them.
    pub bundle: Option<PathBuf>,
    /// `--stage plan|subtask|join` and its flags: one part of the cycle per CI job.
    pub stage: crate::app::stage::StageOptions,
}

/// What every part of the run shares.
pub(super) struct Ctx {
    pub(super) env: BTreeMap<String, String>,
    pub(super) workspace: PathBuf,
    pub(super) load: LoadOptions,
    pub(super) config: Config,
    pub(super) workflow: Workflow,
    /// `--local-dir`, protected from the tools like `.replan/`.
    pub(super) local_dir: Option<PathBuf>,
    pub(super) run_id: String,
    pub(super) started_at: DateTime<Utc>,
    pub(super) bundle: Option<Arc<Recorder>>,
    pub(super) stage: Option<crate::app::stage::StageRun>,
    /// Bound to the run's history sink once it exists: the forge writes' effect entries (the
    /// reporter's notices, the tools' comments and pull requests) commit through it.
    pub(super) effect_route: Arc<crate::history::effects::EffectRoute>,
    /// The commit the checkout was on when the run started (before any model action): an
    /// issue's repository instructions are read from it (`app::instructions`).
    pub(super) start_commit: Option<String>,
}

pub(crate) fn start_rules(config: &Config, kind: ForgeKind) -> StartRules {
    let forge = match kind {
        ForgeKind::GitLab => &config.gitlab,
        _ => &config.github,
    };
    StartRules {
        label: forge.trigger_label.clone(),
        handle: forge
            .mention_handle
            .trim()
            .trim_start_matches('@')
            .to_owned(),
        issues: event_set(&config.triggers.issues),
        pull_requests: event_set(&config.triggers.pull_requests),
        comments: config.triggers.comments,
    }
}

fn event_set(events: &[config::ThreadEvent]) -> EventSet {
    EventSet {
        opened: events.contains(&config::ThreadEvent::Opened),
        reopened: events.contains(&config::ThreadEvent::Reopened),
        labeled: events.contains(&config::ThreadEvent::Labeled),
    }
}

pub(super) fn redact_fn() -> crate::report::forge_reporter::Redact {
    Arc::new(crate::outbound::redact)
}

/// In split-trust mode the forge's writes go to the bundle; reads still reach the forge.
pub(super) fn recorded_forge(ctx: &Ctx, forge: Arc<dyn Forge>) -> Arc<dyn Forge> {
    match &ctx.bundle {
        Some(bundle) => bundle.forge(forge),
        None => forge,
    }
}

pub(super) fn recorded_history(
    ctx: &Ctx,
    backend: Arc<dyn HistoryBackend>,
) -> Arc<dyn HistoryBackend> {
    match &ctx.bundle {
        Some(bundle) => bundle.history(backend),
        None => backend,
    }
}

/// Commit what a run killed on this machine left in the thread's spool, before the thread is read.
pub(super) async fn replay_spool(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
    spool: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let Some(dir) = spool else {
        return Ok(());
    };
    crate::history::spool::replay(backend, thread, dir)
        .await
        .map(drop)
        .map_err(|e| {
            CliError::failure(format!(
                "could not commit the history entries a killed run left in {}: {e}",
                dir.display()
            ))
        })
}

/// The journal a reporter records its notices' keys in (the keys already in the history reach
/// it through the session state).
pub(super) fn notice_effects(
    backend: &Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    ctx: &Ctx,
) -> Arc<dyn crate::history::effects::EffectJournal> {
    Arc::new(
        crate::history::effects::HistoryEffects::new(
            backend.clone(),
            thread,
            &ctx.run_id,
            Default::default(),
        )
        .routed(ctx.effect_route.clone()),
    )
}

pub(super) async fn load_thread(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
) -> Result<LoadedThread, CliError> {
    crate::history::store::load(backend, thread)
        .await
        .map_err(|e| CliError::failure(format!("could not read the history of {thread}: {e}")))
}

/// The history backend for the whole config.
pub(super) type HistoryFor = Box<dyn Fn(&Config) -> Arc<dyn HistoryBackend> + Send + Sync>;

/// What a run talks to, built per platform: the forge, the history backend (which may depend
/// on the whole config, read only after the gate) and the run's page for "View run" links.
pub(super) struct Connection {
    pub(super) forge: Arc<dyn Forge>,
    pub(super) history: HistoryFor,
    pub(super) run_url: Option<String>,
}

/// Who may steer Replan on `kind`, from the config: the gate's policy, shared by the run and
/// by publish (which computes the review round again).
pub(crate) fn gate_policy(config: &Config, kind: ForgeKind) -> GatePolicy {
    let forge = match kind {
        ForgeKind::GitLab => &config.gitlab,
        _ => &config.github,
    };
    GatePolicy {
        allowed_users: forge.allowed_users.clone(),
        allowed_bots: forge.allowed_bots.clone(),
        github_min_permission: Permission::from_github(&config.github.min_permission),
        gitlab_min_access_level: config.gitlab.min_access_level,
    }
}
