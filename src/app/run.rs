//! `replan run`: one planning cycle for whatever triggered the job.
//!
//! Exit codes: 0 when the cycle finished or waits for a person (and when the trigger was refused
//! or ignored), 1 when Replan itself failed (a Failure notice says so on the thread), 2 for usage
//! and configuration errors (bad payload, missing token, unknown config key).

use super::exit::{CliError, Exit};
use super::gating::{self, Verdict};
use super::history_sink::{HistorySink, spool_dir};
use super::input::{Decided, decide};
use super::outputs::{self, RunOutputs, status_name};
use super::pr_recorder::PrRecorder;
use super::secrets::{known_secrets, log_redactor};
use super::workspace::{overrides, resolve_workspace};
use crate::actions::log::Workflow;
use crate::bundle::Recorder;
use crate::config::{self, Config, LoadOptions};
use crate::engine::prompts::Prompts;
use crate::engine::{CycleDeps, CycleOutcome, EngineInput, run_cycle};
use crate::forge::github::{GitHubClient, GitHubForge, GitHubHistory, GitHubSettings};
use crate::forge::local::LocalForge;
use crate::forge::{Forge, Reaction};
use crate::history::entry::{RunRequest, RunStatus};
use crate::history::state::Pending;
use crate::history::store::LoadedThread;
use crate::history::{HistoryBackend, LocalHistory};
use crate::report::Reporter;
use crate::report::checklist::ChecklistContext;
use crate::report::forge_reporter::ForgeReporter;
use crate::report::terminal::TerminalReporter;
use crate::tools::registry_builder::{ToolContext, build_registry};
use crate::tools::workspace::Workspace;
use crate::trigger::github_event::load_actions_event;
use crate::trigger::{
    Actor, EventOutcome, EventSet, ForgeKind, GateDecision, GateInput, GatePolicy, MARKER_PREFIX,
    Permission, Request, StartRules, ThreadRef, Trigger, decide as gate_decide,
};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
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
}

/// What every part of the run shares.
struct Ctx {
    env: BTreeMap<String, String>,
    workspace: PathBuf,
    load: LoadOptions,
    config: Config,
    workflow: Workflow,
    /// `--local-dir`, protected from the tools like `.replan/`.
    local_dir: Option<PathBuf>,
    run_id: String,
    started_at: DateTime<Utc>,
    bundle: Option<Arc<Recorder>>,
}

pub async fn run(opts: RunOptions, mut env: BTreeMap<String, String>) -> Result<Exit, CliError> {
    let started_at = Utc::now();
    let run_id = run_id(&env);
    let bundle = match &opts.bundle {
        Some(dir) => Some(Arc::new(
            Recorder::create(dir, &run_id, &mut env).map_err(CliError::usage)?,
        )),
        None => None,
    };
    let workflow = Workflow::detect(&env);
    let redactor = log_redactor();
    redactor.add_secrets(known_secrets(&env, None));
    workflow.mask(&redactor.current());

    let workspace = resolve_workspace(opts.workspace.as_ref(), &env)?;
    let absolute = |path: &PathBuf| {
        if path.is_relative() {
            std::env::current_dir()
                .map(|cwd| cwd.join(path))
                .unwrap_or_else(|_| path.clone())
        } else {
            path.clone()
        }
    };
    let config_path = opts.config.as_ref().map(absolute);
    let load = LoadOptions {
        workspace: workspace.clone(),
        config_path,
        env: env.clone(),
        overrides: overrides(&opts.set)?,
        user: None,
    };
    // The start rules (label, handle) come from the config; the remote layer needs the actor,
    // which needs the event: read the local layers first, the whole config after the gate.
    let local = config::load_local(&load).map_err(|e| CliError::usage(e.to_string()))?;
    // The LLM key's variable and `secrets.extra_values` are known once the config is read.
    redactor.add_secrets(known_secrets(&env, Some(&local.config)));
    workflow.mask(&redactor.current());
    let ctx = Ctx {
        env: env.clone(),
        workspace,
        load,
        config: local.config,
        workflow,
        local_dir: opts.local_dir.as_ref().map(absolute),
        run_id,
        started_at,
        bundle,
    };
    let nonempty = |name: &str| env.get(name).is_some_and(|v| !v.trim().is_empty());
    if nonempty("GITHUB_EVENT_NAME") {
        github(ctx).await
    } else if opts.issue.is_some() {
        local_run(ctx, &opts).await
    } else if env.get("GITLAB_CI").is_some_and(|v| v == "true") {
        gitlab(ctx).await
    } else {
        Err(CliError::usage(
            "no trigger: inside GitHub Actions set GITHUB_EVENT_NAME and GITHUB_EVENT_PATH (the runner does), in GitLab CI the job sets GITLAB_CI; for a local run pass --issue N [--title T --body B]",
        ))
    }
}

fn run_id(env: &BTreeMap<String, String>) -> String {
    match env.get("GITHUB_RUN_ID").filter(|v| !v.is_empty()) {
        Some(id) => format!(
            "{id}-{}",
            env.get("GITHUB_RUN_ATTEMPT")
                .filter(|v| !v.is_empty())
                .map_or("1", String::as_str)
        ),
        // A retried GitLab job gets a new CI_JOB_ID, so the job id alone names one attempt.
        None => match env.get("CI_JOB_ID").filter(|v| !v.is_empty()) {
            Some(job) => format!("gitlab-{job}"),
            None => format!("local-{:016x}", fastrand::u64(..)),
        },
    }
}

fn start_rules(config: &Config, kind: ForgeKind) -> StartRules {
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

fn gate_policy(config: &Config, kind: ForgeKind) -> GatePolicy {
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

fn redact_fn() -> crate::report::forge_reporter::Redact {
    let redactor = log_redactor();
    Arc::new(move |text: &str| redactor.redact(text))
}

// ----- GitHub Actions

async fn github(ctx: Ctx) -> Result<Exit, CliError> {
    let event = ctx
        .env
        .get("GITHUB_EVENT_NAME")
        .cloned()
        .unwrap_or_default();
    let path = PathBuf::from(
        ctx.env
            .get("GITHUB_EVENT_PATH")
            .cloned()
            .unwrap_or_default(),
    );
    if path.as_os_str().is_empty() && event != "schedule" {
        return Err(CliError::usage(format!(
            "GITHUB_EVENT_NAME is `{event}` but GITHUB_EVENT_PATH is not set; it must name the event payload file"
        )));
    }
    let rules = start_rules(&ctx.config, ForgeKind::GitHub);
    let outcome = if path.as_os_str().is_empty() {
        crate::trigger::from_actions_explained(&event, "", &path, &rules)
    } else {
        load_actions_event(&event, &path, &rules)
    }
    .map_err(|e| CliError::usage(e.to_string()))?;
    let mut trigger = match outcome {
        EventOutcome::Run(trigger) => *trigger,
        EventOutcome::Ignored { reason } => {
            tracing::info!("nothing to do: {reason}");
            return Ok(Exit::Ok);
        }
    };
    let mut settings =
        GitHubSettings::from_env(&ctx.env, &trigger.repo).map_err(CliError::usage)?;
    settings.max_body_bytes = ctx.config.forge_api.max_body_bytes();
    trigger.repo = settings.repo.clone();
    let client =
        Arc::new(GitHubClient::new(settings).map_err(|e| CliError::failure(e.to_string()))?);
    let run_url = github_run_url(&ctx.env, &trigger.repo);
    let graphql_url = ctx.env.get("GITHUB_GRAPHQL_URL").cloned();
    let github = Arc::new(
        GitHubForge::new(client.clone())
            .with_run_url(run_url.clone())
            .with_graphql_url(graphql_url),
    );
    let backend = move |config: &Config| -> Arc<dyn HistoryBackend> {
        Arc::new(
            GitHubHistory::new(
                client.clone(),
                &config.history.branch,
                &config.history.directory,
            )
            .with_append_timeout(config.history.append_retry().timeout),
        )
    };
    ci_run(ctx, trigger, github, backend, run_url).await
}

// ----- GitLab CI

async fn gitlab(ctx: Ctx) -> Result<Exit, CliError> {
    use crate::forge::gitlab;
    let rules = start_rules(&ctx.config, ForgeKind::GitLab);
    let vars: std::collections::HashMap<String, String> = ctx
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let outcome =
        crate::trigger::from_gitlab(&vars, &rules).map_err(|e| CliError::usage(e.to_string()))?;
    let mut trigger = match outcome {
        EventOutcome::Run(trigger) => *trigger,
        EventOutcome::Ignored { reason } => {
            tracing::info!("nothing to do: {reason}");
            return Ok(Exit::Ok);
        }
    };
    let connection = gitlab::connect(&trigger, &ctx.config, &ctx.env)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    gitlab::resolve_note(connection.forge.as_ref(), &mut trigger, &rules)
        .await
        .map_err(|e| CliError::failure(e.to_string()))?;
    let history = connection.history.clone();
    let backend = move |_: &Config| history.clone();
    ci_run(ctx, trigger, connection.forge, backend, connection.run_url).await
}

// ----- the CI path shared by the forges

/// Addressed? → current text → gate → config for the actor → closed? → plan? → 👀 → the cycle
/// (or the sweep) → outputs. Nothing is written before the 👀 unless one reply says why not.
async fn ci_run(
    mut ctx: Ctx,
    mut trigger: Trigger,
    forge: Arc<dyn Forge>,
    backend: impl Fn(&Config) -> Arc<dyn HistoryBackend>,
    run_url: Option<String>,
) -> Result<Exit, CliError> {
    if let Some(bundle) = &ctx.bundle {
        bundle.set_origin(trigger.forge, &trigger.repo);
    }
    // Outermost, so the bundle too records only redacted bodies.
    let forge = crate::outbound::forge::RedactingForge::wrap(recorded_forge(&ctx, forge));
    let rules = start_rules(&ctx.config, trigger.forge);
    // A comment not addressed to Replan leaves one log line and nothing else.
    if let (false, Some(thread)) = (gating::addressed(&trigger.request), trigger.thread) {
        let state = match load_thread(backend(&ctx.config).as_ref(), &thread).await {
            Ok(loaded) => Some(loaded.state),
            Err(e) => {
                tracing::warn!("{}", e.message);
                None
            }
        };
        let verdict = gating::plain_comment(&trigger, state.as_ref(), &rules);
        if verdict != Verdict::Go {
            return not_acting(forge.as_ref(), trigger.thread, verdict).await;
        }
    }
    ctx.workflow.group("Replan: trigger and gate");
    tracing::info!(
        event = %trigger.event,
        actor = %trigger.actor.login,
        thread = ?trigger.thread.map(|t| t.to_string()),
        "trigger"
    );
    let refetch = !is_review_comment(&trigger);
    let mut verdict = gating::current_comment(&mut trigger, forge.as_ref(), &rules, refetch).await;
    if verdict == Verdict::Go {
        let decision = gate(&ctx, &trigger, forge.as_ref()).await;
        verdict = gating::refused(
            decision,
            &trigger.request,
            ctx.config.gate.reply_to_outsiders,
        );
    }
    ctx.workflow.end_group();
    if verdict != Verdict::Go {
        return not_acting(forge.as_ref(), trigger.thread, verdict).await;
    }

    // The whole config, with the remote layer for the person who asked.
    if !matches!(trigger.request, Request::Sweep) {
        ctx.load.user = Some(trigger.actor.login.clone());
    }
    let loaded = config::load(&ctx.load)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    ctx.config = loaded.config;
    let redactor = log_redactor();
    redactor.add_secrets(known_secrets(&ctx.env, Some(&ctx.config)));
    ctx.workflow.mask(&redactor.current());

    let backend = recorded_history(&ctx, backend(&ctx.config));
    let bot_login = match trigger.forge {
        ForgeKind::GitLab => ctx.config.gitlab.bot_login.clone(),
        _ => ctx.config.github.bot_login.clone(),
    };
    let reporters = |thread: ThreadRef| -> Arc<dyn Reporter> {
        Arc::new(
            ForgeReporter::new(
                forge.clone(),
                thread,
                ChecklistContext {
                    run_url: run_url.clone(),
                    model: ctx.config.llm.model.clone(),
                },
                redact_fn(),
            )
            .with_bot_login(bot_login.clone())
            .with_effects(notice_effects(&backend, thread, &ctx.run_id)),
        )
    };

    if matches!(trigger.request, Request::Sweep) {
        return sweep(&ctx, &forge, &backend, &reporters, &trigger).await;
    }
    let Some(thread) = trigger.thread else {
        return Err(CliError::usage(format!(
            "the `{}` event names no issue or pull request",
            trigger.event
        )));
    };
    let closed = gating::is_closed(&mut trigger, &thread, forge.as_ref())
        .await
        .map_err(|e| CliError::failure(format!("could not read {thread}: {e}")))?;
    let spool = spool_dir(ctx.local_dir.as_deref(), &ctx.workspace, &thread);
    replay_spool(backend.as_ref(), &thread, spool.as_deref()).await?;
    let history = load_thread(backend.as_ref(), &thread).await?;
    let verdict = if closed {
        gating::closed_thread(&trigger.request, &thread)
    } else {
        gating::no_plan(&trigger.request, &history.state)
    };
    if verdict != Verdict::Go {
        return not_acting(forge.as_ref(), Some(thread), verdict).await;
    }
    // Review comments live under /pulls/comments, not /issues/comments: react to the PR.
    let react_to = trigger
        .comment
        .as_ref()
        .filter(|_| !is_review_comment(&trigger))
        .map(|c| c.id.as_str());
    let react = forge.react(&thread, react_to, Reaction::Eyes);
    if let Err(e) = react.await {
        tracing::warn!("could not add the 👀 reaction: {e}");
    }
    let result = cycle_on_thread(
        &ctx,
        forge.clone(),
        backend.clone(),
        reporters(thread),
        thread,
        &trigger,
        Some(history),
    )
    .await;
    finish(&ctx, result)
}

/// One log line, and the one reply when the verdict has one. Exit 0: nothing failed.
async fn not_acting(
    forge: &dyn Forge,
    thread: Option<ThreadRef>,
    verdict: Verdict,
) -> Result<Exit, CliError> {
    match verdict {
        Verdict::Go => {}
        Verdict::Silent(reason) => tracing::info!("not acting on this trigger: {reason}"),
        Verdict::Reply { reason, body } => {
            tracing::info!("not acting on this trigger: {reason}");
            if let Some(thread) = thread
                && let Err(e) = forge.post_comment(&thread, &redact_fn()(&body)).await
            {
                tracing::warn!("could not post the reply: {e}");
            }
        }
    }
    Ok(Exit::Ok)
}

/// Commit what a run killed on this machine left in the thread's spool, before the thread is read.
async fn replay_spool(
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

async fn load_thread(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
) -> Result<LoadedThread, CliError> {
    crate::history::store::load(backend, thread)
        .await
        .map_err(|e| CliError::failure(format!("could not read the history of {thread}: {e}")))
}

fn is_review_comment(trigger: &Trigger) -> bool {
    trigger.event.starts_with("pull_request_review_comment")
}

fn github_run_url(env: &BTreeMap<String, String>, repo: &str) -> Option<String> {
    let id = env.get("GITHUB_RUN_ID").filter(|v| !v.is_empty())?;
    let server = env
        .get("GITHUB_SERVER_URL")
        .filter(|v| !v.is_empty())
        .map_or("https://github.com", String::as_str);
    Some(format!(
        "{}/{repo}/actions/runs/{id}",
        server.trim_end_matches('/')
    ))
}

/// Fail closed: a failed permission look-up refuses. The trigger's comment is the one read
/// again at run start ([`gating::current_comment`]).
async fn gate(ctx: &Ctx, trigger: &Trigger, forge: &dyn Forge) -> GateDecision {
    let policy = gate_policy(&ctx.config, trigger.forge);
    let body = trigger
        .comment
        .as_ref()
        .map(|c| c.body.as_str())
        .unwrap_or_default();
    let needs_lookup = !matches!(trigger.request, Request::Sweep)
        && !trigger.actor.is_bot
        && !body.contains(MARKER_PREFIX);
    let permission = if needs_lookup {
        forge.gate_permission(&trigger.actor.login).await
    } else {
        Permission::Unknown("not looked up (bot, own comment or schedule)".into())
    };
    gate_decide(&GateInput::for_trigger(
        trigger,
        permission,
        &policy,
        ctx.started_at,
    ))
}

/// The scheduled sweep: every thread whose question waited past `auto_assume_timeout_minutes`
/// continues on the stated assumptions.
async fn sweep(
    ctx: &Ctx,
    forge: &Arc<dyn Forge>,
    backend: &Arc<dyn HistoryBackend>,
    reporters: &dyn Fn(ThreadRef) -> Arc<dyn Reporter>,
    trigger: &Trigger,
) -> Result<Exit, CliError> {
    let timeout = i64::from(
        ctx.config
            .planning
            .replanning
            .goal_understanding
            .auto_assume_timeout_minutes,
    );
    let threads = backend
        .threads()
        .await
        .map_err(|e| CliError::failure(format!("the sweep could not list the threads: {e}")))?;
    let mut exit = Exit::Ok;
    for thread in threads {
        let loaded = match crate::history::store::load(backend.as_ref(), &thread).await {
            Ok(loaded) => loaded,
            Err(e) => {
                ctx.workflow.warning(&format!(
                    "sweep: could not read the history of {thread}: {e}"
                ));
                continue;
            }
        };
        let Some(Pending::Question { asked_at, .. }) = &loaded.state.pending else {
            continue;
        };
        if ctx.started_at - *asked_at < ChronoDuration::minutes(timeout) {
            continue;
        }
        tracing::info!(
            "sweep: {thread} waited past {timeout} minutes; continuing on the assumptions"
        );
        let mut per_thread = trigger.clone();
        per_thread.thread = Some(thread);
        let result = cycle_on_thread(
            ctx,
            forge.clone(),
            backend.clone(),
            reporters(thread),
            thread,
            &per_thread,
            Some(loaded),
        )
        .await;
        if let Err(e) = finish(ctx, result) {
            ctx.workflow.error(&e.message);
            exit = e.exit;
        }
    }
    Ok(exit)
}

/// In split-trust mode the forge's writes go to the bundle; reads still reach the forge.
fn recorded_forge(ctx: &Ctx, forge: Arc<dyn Forge>) -> Arc<dyn Forge> {
    match &ctx.bundle {
        Some(bundle) => bundle.forge(forge),
        None => forge,
    }
}

/// The journal a reporter records its notices' keys in (the keys already in the history reach
/// it through the session state).
fn notice_effects(
    backend: &Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    run_id: &str,
) -> Arc<dyn crate::tools::effects::EffectJournal> {
    Arc::new(crate::tools::effects::HistoryEffects::new(
        backend.clone(),
        thread,
        run_id,
        &[],
    ))
}

fn recorded_history(ctx: &Ctx, backend: Arc<dyn HistoryBackend>) -> Arc<dyn HistoryBackend> {
    match &ctx.bundle {
        Some(bundle) => bundle.history(backend),
        None => backend,
    }
}

// ----- local runs

/// The local forge and history usually sit inside the workspace; a `.gitignore` of `*` in their
/// directory keeps them out of the commit that `open_pull_request` makes from the working tree.
fn keep_out_of_commits(dir: &std::path::Path) -> Result<(), CliError> {
    let ignore = dir.join(".gitignore");
    if ignore.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&ignore, "# Replan's local forge and history\n*\n"))
        .map_err(|e| CliError::usage(format!("cannot prepare --local-dir {}: {e}", dir.display())))
}

async fn local_run(mut ctx: Ctx, opts: &RunOptions) -> Result<Exit, CliError> {
    let number = opts.issue.unwrap_or(1);
    let dir = opts
        .local_dir
        .clone()
        .unwrap_or_else(|| ctx.workspace.join(".replan"));
    keep_out_of_commits(&dir)?;
    ctx.local_dir.get_or_insert_with(|| dir.clone());
    let local = Arc::new(LocalForge::new(&dir).with_repository(&ctx.workspace));
    let forge = crate::outbound::forge::RedactingForge::wrap(recorded_forge(&ctx, local.clone()));
    let backend = recorded_history(
        &ctx,
        Arc::new(LocalHistory::new(
            &dir,
            ctx.config.history.directory.clone(),
        )),
    );
    let body = match opts.body.as_deref() {
        Some(spec) if spec.starts_with('@') => {
            let path = &spec[1..];
            std::fs::read_to_string(path).map_err(|e| {
                CliError::usage(format!("--body {spec}: cannot read the file {path}: {e}"))
            })?
        }
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let thread = ThreadRef::issue(number);
    let given = opts.title.is_some() || opts.body.is_some();
    if given
        && opts.title.as_deref().unwrap_or_default().trim().is_empty()
        && body.trim().is_empty()
    {
        return Err(CliError::usage(
            "the goal is empty: --title and --body are blank; say what the issue asks in --title (and --body)",
        ));
    }
    // A body without a title still names a goal: its first line becomes the title.
    let title = match opts.title.as_deref().map(str::trim) {
        Some(title) if !title.is_empty() => title.to_owned(),
        _ => body.trim().lines().next().unwrap_or_default().to_owned(),
    };
    let created = match local.thread_file(&thread).await {
        Ok(_) => false,
        Err(crate::forge::ForgeError::NotFound { .. }) if !title.trim().is_empty() => {
            local
                .create_thread(
                    thread,
                    &crate::outbound::redact(&title),
                    &crate::outbound::redact(&body),
                    local.local_user(),
                )
                .await
                .map_err(|e| CliError::failure(e.to_string()))?;
            true
        }
        Err(crate::forge::ForgeError::NotFound { what }) => {
            return Err(CliError::usage(format!(
                "there is no {what} yet: pass --title and --body to create issue #{number} for a local run"
            )));
        }
        Err(e) => return Err(CliError::usage(e.to_string())),
    };
    let trigger = Trigger {
        forge: ForgeKind::Local,
        repo: String::new(),
        thread: Some(thread),
        actor: Actor {
            login: local.local_user().to_owned(),
            id: None,
            is_bot: false,
        },
        request: Request::Start { title, body },
        comment: None,
        event: "local.run".into(),
        project_id: None,
        api_url: None,
        closed: None,
    };
    let checklist = ChecklistContext {
        run_url: None,
        model: ctx.config.llm.model.clone(),
    };
    // The checklist and notices also go into the local forge, as comments would on a forge.
    let reporter: Arc<dyn Reporter> = Arc::new(crate::report::tee::TeeReporter {
        primary: Arc::new(
            ForgeReporter::new(forge.clone(), thread, checklist.clone(), redact_fn())
                .with_min_interval(std::time::Duration::ZERO)
                .with_effects(notice_effects(&backend, thread, &ctx.run_id)),
        ),
        also: Arc::new(TerminalReporter::new(checklist)),
    });
    // The start (for a new thread or without comments), then each comment: it lands on the
    // thread first, then the cycle reads it as the forge's comment event would.
    let start = (opts.comments.is_empty() || created).then_some(None);
    let steps = start.into_iter().chain(opts.comments.iter().map(Some));
    let rules = start_rules(&ctx.config, ForgeKind::Local);
    let mut exit = Exit::Ok;
    let run_id = ctx.run_id.clone();
    for (n, text) in steps.enumerate() {
        let mut on_step = trigger.clone();
        if let Some(text) = text {
            // One run per comment, as one CI job per comment event would be.
            ctx.run_id = format!("{run_id}-{n}");
            let comment = local
                .add_comment_as(&thread, local.local_user(), text)
                .await
                .map_err(|e| {
                    CliError::failure(format!("could not add the comment to {thread}: {e}"))
                })?;
            on_step.request = crate::trigger::classify_comment(text, &rules);
            on_step.event = "local.comment".into();
            on_step.comment = Some(crate::trigger::TriggerComment {
                id: comment.id,
                body: comment.body,
                created_at: Some(comment.created_at),
                updated_at: Some(comment.updated_at),
            });
        }
        let result = cycle_on_thread(
            &ctx,
            forge.clone(),
            backend.clone(),
            reporter.clone(),
            thread,
            &on_step,
            None,
        )
        .await;
        exit = finish(&ctx, result)?;
    }
    Ok(exit)
}

// ----- the cycle on one thread

struct ThreadRun {
    outcome: Option<CycleOutcome>,
    pull_request: Option<String>,
    history_commit: Option<String>,
    ctx: ChecklistContext,
}

fn request_name(request: &Request) -> String {
    match request {
        Request::Start { .. } => "start".into(),
        Request::Command(command) => format!("command:/{}", command.name()),
        Request::Answer { .. } => "answer".into(),
        Request::Mention { .. } => "mention".into(),
        Request::Sweep => "sweep".into(),
        Request::FetchComment { .. } => "fetch_comment".into(),
        Request::Ignore { .. } => "ignore".into(),
    }
}

fn input_text(input: &EngineInput) -> (Option<String>, Option<String>) {
    match input {
        EngineInput::Start { title, body, .. } => (Some(title.clone()), Some(body.clone())),
        EngineInput::Replan { reason, .. } | EngineInput::Reject { reason, .. } => {
            (None, reason.clone())
        }
        EngineInput::Answer { text, .. } => (None, Some(text.clone())),
        _ => (None, None),
    }
}

async fn cycle_on_thread(
    ctx: &Ctx,
    forge: Arc<dyn Forge>,
    backend: Arc<dyn HistoryBackend>,
    reporter: Arc<dyn Reporter>,
    thread: ThreadRef,
    trigger: &Trigger,
    loaded: Option<LoadedThread>,
) -> Result<ThreadRun, CliError> {
    let checklist = ChecklistContext {
        run_url: forge.run_url(),
        model: ctx.config.llm.model.clone(),
    };
    let spool = spool_dir(ctx.local_dir.as_deref(), &ctx.workspace, &thread);
    let loaded = match loaded {
        Some(loaded) => loaded,
        None => {
            replay_spool(backend.as_ref(), &thread, spool.as_deref()).await?;
            load_thread(backend.as_ref(), &thread).await?
        }
    };
    for corrupt in &loaded.corrupt {
        ctx.workflow.warning(&format!(
            "history of {thread}: line {} is corrupt ({}) and was skipped (it stays in the file as it is)",
            corrupt.line_no, corrupt.error
        ));
    }
    let needs_thread = match &trigger.request {
        Request::Start { title, body } => title.trim().is_empty() && body.trim().is_empty(),
        Request::Mention { .. } => true,
        _ => false,
    };
    let (title, body) = if needs_thread {
        match forge.thread(&thread).await {
            Ok(t) => (t.title, t.body),
            Err(e) => {
                return Err(CliError::failure(format!("could not read {thread}: {e}")));
            }
        }
    } else {
        (String::new(), String::new())
    };
    let input = match decide(
        &trigger.request,
        &trigger.actor.login,
        &loaded.state,
        &title,
        &body,
    ) {
        Decided::Run(input) => input,
        Decided::Nothing(reason) => {
            tracing::info!("{thread}: {reason}");
            return Ok(ThreadRun {
                outcome: None,
                pull_request: None,
                history_commit: None,
                ctx: checklist,
            });
        }
    };

    let llm = crate::llm::detect::create_budgeted(&ctx.config.llm, &ctx.env)
        .map_err(|e| CliError::usage(format!("LLM set-up: {e}")))?;
    let mut workspace = Workspace::new(&ctx.workspace)
        .map_err(|e| CliError::usage(format!("workspace {}: {e}", ctx.workspace.display())))?;
    // The config was read once, above; the model may not change what the next run reads.
    if let Some(config) = &ctx.load.config_path {
        workspace.protect(config, false);
    }
    if let Some(dir) = &ctx.local_dir {
        workspace.protect(dir, true);
        workspace.protect(&dir.join(&ctx.config.history.directory), true);
    }
    let mut tool_context = ToolContext::new(workspace, ctx.config.tools.clone());
    tool_context.mcp_servers = ctx.config.mcp_servers.clone();
    if forge.kind() == ForgeKind::GitLab {
        // GitLab's CI checkout pushes with CI_JOB_TOKEN, which may not push: use GITLAB_TOKEN.
        if let Some(publisher) = crate::tools::git::TokenPushPublisher::gitlab(&ctx.env) {
            tool_context.publisher = Arc::new(publisher);
        }
    }
    if let Some(bundle) = &ctx.bundle {
        tool_context.publisher = bundle.publisher();
    }
    crate::app::work_branch::restore(ctx.workspace.clone(), thread, &loaded.state).await;
    let reporter: Arc<dyn Reporter> = Arc::new(crate::app::work_branch::WorkBranchReporter::new(
        reporter,
        ctx.workspace.clone(),
        thread,
        tool_context.publisher.clone(),
        tool_context.author.clone(),
        loaded.state.tasks_done(),
    ));
    let recorder = Arc::new(PrRecorder::new(forge.clone()));
    tool_context.forge = Some((recorder.clone(), thread));
    tool_context.effects = Some(Arc::new(crate::tools::effects::HistoryEffects::new(
        backend.clone(),
        thread,
        &ctx.run_id,
        &loaded.entries,
    )));
    // Prompt overrides are read, like the config, before anything model-driven starts (MCP
    // servers start while the registry is built).
    let prompts =
        Prompts::with_overrides(&ctx.workspace).map_err(|e| CliError::usage(e.to_string()))?;
    let tools = build_registry(tool_context).await;
    let mut sink = HistorySink::new(backend.clone(), thread, ctx.config.history.commit_every);
    if let Some(dir) = &spool {
        sink = sink.with_spool(dir, &ctx.run_id);
    }
    let sink = Arc::new(sink);
    let on_sigterm = sink.flush_on_sigterm();
    let (req_title, req_text) = input_text(&input);
    let deps = CycleDeps {
        llm: Arc::new(llm),
        tools: tools.registry,
        reporter,
        store: sink.clone(),
        config: ctx.config.clone(),
        clock: Arc::new(Utc::now),
        run_id: ctx.run_id.clone(),
        prompts,
        request: RunRequest {
            event: trigger.event.clone(),
            actor: trigger.actor.login.clone(),
            request: request_name(&trigger.request),
            title: req_title,
            text: req_text,
            run_url: forge.run_url(),
        },
    };
    ctx.workflow
        .group(&format!("Replan: planning cycle on {thread}"));
    let mut result = run_cycle(&deps, loaded.state, &input).await;
    ctx.workflow.end_group();
    tools.mcp.shutdown().await;
    if let Err(unsaved) = sink.close(&ctx.env).await
        && result.is_ok()
    {
        result = Err(crate::engine::CycleError::Fatal(unsaved));
    }
    on_sigterm.abort();
    let history_commit = sink.last_commit();
    match result {
        Ok(outcome) => Ok(ThreadRun {
            outcome: Some(outcome),
            pull_request: recorder.opened().map(|pr| pr.url),
            history_commit,
            ctx: checklist,
        }),
        Err(e) => {
            let message = format!("the planning cycle on {thread} failed: {e}");
            outputs::write(
                &ctx.env,
                &RunOutputs {
                    status: status_name(RunStatus::Failed),
                    history_commit,
                    ..RunOutputs::default()
                },
                None,
            );
            Err(CliError::failure(message))
        }
    }
}

fn finish(ctx: &Ctx, result: Result<ThreadRun, CliError>) -> Result<Exit, CliError> {
    let run = match result {
        Ok(run) => run,
        Err(e) => {
            if e.exit == Exit::Failure {
                ctx.workflow.annotate_error(&e.message);
            }
            return Err(e);
        }
    };
    let Some(outcome) = run.outcome else {
        return Ok(Exit::Ok);
    };
    let pull_request = outcome.pull_request.clone().or(run.pull_request);
    let outputs = RunOutputs {
        status: status_name(outcome.status),
        plan_version: outcome.plan_version,
        tasks_done: outcome.tasks_done,
        tasks_total: outcome.tasks_total,
        pull_request,
        history_commit: run.history_commit,
    };
    outputs::write(
        &ctx.env,
        &outputs,
        Some((&outcome.state, outcome.status, &run.ctx)),
    );
    tracing::info!(
        status = %outputs.status,
        plan_version = outputs.plan_version,
        tasks = %format!("{}/{}", outputs.tasks_done, outputs.tasks_total),
        "cycle finished"
    );
    if let Some(line) = crate::report::summary::llm_time_line(&outcome.state.usage) {
        tracing::info!("{line}");
    }
    match outcome.status {
        RunStatus::Failed => {
            ctx.workflow
                .error("the planning cycle failed; see the thread for details");
            Ok(Exit::Failure)
        }
        _ => Ok(Exit::Ok),
    }
}
