//! The CI path shared by the forges: gate, config for the actor, the cycle or the sweep.

use super::ci_round::Round;
use super::context::{
    Connection, Ctx, gate_policy, load_thread, notice_effects, recorded_forge, recorded_history,
    redact_fn, replay_spool, start_rules,
};
use super::early_history;
use super::thread::{cycle_on_thread, finish};
use crate::app::exit::{CliError, Exit};
use crate::app::gating::{self, Verdict};
use crate::app::history_sink::spool_dir;
use crate::app::secrets::known_secrets;
use crate::config;
use crate::forge::{Forge, Reaction, ReactionTarget};
use crate::history::HistoryBackend;
use crate::history::state::Pending;
use crate::report::Reporter;
use crate::report::checklist::ChecklistContext;
use crate::report::forge_reporter::ForgeReporter;
use crate::trigger::{
    ForgeKind, GateDecision, GateInput, MARKER_PREFIX, Permission, Request, ThreadRef, Trigger,
    decide as gate_decide,
};
use chrono::Duration as ChronoDuration;
use std::sync::Arc;

/// Addressed? → current text → gate → config for the actor → closed? → plan? → 👀 → the cycle
/// (or the sweep) → outputs. Nothing is written before the 👀 unless one reply says why not.
pub(super) async fn ci_run(
    mut ctx: Ctx,
    mut trigger: Trigger,
    connection: Connection,
) -> Result<Exit, CliError> {
    let Connection {
        forge,
        history: backend,
        run_url,
    } = connection;
    if let Some(bundle) = &ctx.bundle {
        bundle.set_origin(trigger.forge, &trigger.repo);
    }
    // Outermost, so the bundle too records only redacted bodies.
    let forge = crate::forge::redacting::redacting(recorded_forge(&ctx, forge));
    let rules = start_rules(&ctx.config, trigger.forge);
    // A review of Replan's own pull request continues the thread that opened it.
    let was_review = matches!(trigger.request, Request::Review(_));
    let review =
        crate::app::review::resolve(&mut trigger, backend(&ctx.config).as_ref(), &rules).await;
    if let (true, Request::Ignore { reason }) = (was_review, &trigger.request) {
        // A review of somebody else's pull request: not an event Replan acts on, as before.
        return not_acting(forge.as_ref(), None, Verdict::Silent(reason.clone())).await;
    }
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
    let thread = trigger
        .thread
        .filter(|_| !matches!(trigger.request, Request::Sweep));
    let gated = async {
        let mut verdict =
            gating::current_comment(&mut trigger, forge.as_ref(), &rules, refetch).await;
        if verdict == Verdict::Go {
            let decision = gate(&ctx, &trigger, forge.as_ref()).await;
            verdict = gating::refused(
                decision,
                &trigger.request,
                ctx.config.gate.reply_to_outsiders,
            );
        }
        verdict
    };
    let history_of = review.map(|r| r.owner).or(thread);
    let (verdict, early) = tokio::join!(gated, early_history::read(&ctx, history_of, &backend));
    ctx.workflow.end_group();
    if verdict != Verdict::Go {
        return not_acting(forge.as_ref(), trigger.thread, verdict).await;
    }
    if let Some(review) = review {
        trigger.thread = Some(review.owner);
    }

    // The whole config, with the remote layer for the person who asked.
    if !matches!(trigger.request, Request::Sweep | Request::CiResult(_)) {
        ctx.load.user = Some(trigger.actor.login.clone());
    }
    let loaded = config::load(&ctx.load)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    ctx.config = loaded.config;
    let redactor = crate::outbound::secrets();
    redactor.add_secrets(known_secrets(&ctx.env, Some(&ctx.config)));
    ctx.workflow.mask(&redactor.current());

    let early = early.and_then(|early| early.for_config(&ctx.config));
    let backend = match &early {
        Some((backend, _)) => backend.clone(),
        None => recorded_history(&ctx, backend(&ctx.config)),
    };
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
                    per_thread: crate::history::ledger::ThreadCap::configured(
                        &ctx.config.llm.budget,
                    ),
                },
                redact_fn(),
            )
            .with_bot_login(bot_login.clone())
            .with_effects(notice_effects(&backend, thread, &ctx)),
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
    let history = match early {
        Some((_, history)) => history,
        None => {
            let spool = spool_dir(ctx.local_dir.as_deref(), &ctx.workspace, &thread);
            replay_spool(backend.as_ref(), &thread, spool.as_deref()).await?;
            load_thread(backend.as_ref(), &thread).await?
        }
    };
    let verdict = if closed {
        gating::closed_thread(&trigger.request, &thread)
    } else if let Request::Review(event) = &trigger.request
        && history.state.review(&event.review_id).is_some()
    {
        // One review, one cycle: the review's other events find it taken up.
        Verdict::Silent(format!(
            "review {} of {thread}'s pull request was taken up already",
            event.review_id
        ))
    } else {
        gating::no_plan(&trigger.request, &history.state)
    };
    if verdict != Verdict::Go {
        return not_acting(forge.as_ref(), Some(thread), verdict).await;
    }
    if let Request::CiResult(run) = &trigger.request {
        let run = run.clone();
        return ci_result_round(
            &ctx, &forge, &backend, &reporters, thread, &trigger, &run, history,
        )
        .await;
    }
    if review.is_some() {
        let policy = gate_policy(&ctx.config, trigger.forge);
        crate::app::review::collect(
            &mut trigger,
            forge.as_ref(),
            &history.state,
            &policy,
            ctx.started_at,
        )
        .await
        .map_err(|e| CliError::failure(format!("could not read the review threads: {e}")))?;
    }
    // Review comments live under /pulls/comments, not /issues/comments: react to the PR.
    let react_to = trigger
        .comment
        .as_ref()
        .filter(|_| !is_review_comment(&trigger))
        .map(|c| c.id.as_str());
    let react_on = review.map_or(thread, |r| r.pull_request);
    let react = forge.react(
        ReactionTarget {
            thread: &react_on,
            comment_id: react_to,
        },
        Reaction::Eyes,
    );
    let react = async {
        if let Err(e) = react.await {
            tracing::warn!("could not add the 👀 reaction: {e}");
        }
    };
    // The acknowledgement goes out first and the cycle does not wait for the forge's answer: it
    // has nothing to learn from it.
    let ((), result) = tokio::join!(
        react,
        cycle_on_thread(
            &ctx,
            forge.clone(),
            backend.clone(),
            reporters(thread),
            thread,
            &trigger,
            Some(history),
        )
    );
    if let (Request::Review(event), Ok(run)) = (&trigger.request, &result)
        && let Some(state) = run.state()
    {
        crate::app::review::answer(forge.as_ref(), state, &event.review_id, &ctx.workspace).await;
    }
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

/// A finished CI run on the thread's pull request branch, from an event or the sweep: recorded,
/// and a failure fixed by one cycle on the same branch.
#[allow(clippy::too_many_arguments)]
async fn ci_result_round(
    ctx: &Ctx,
    forge: &Arc<dyn Forge>,
    backend: &Arc<dyn HistoryBackend>,
    reporters: &dyn Fn(ThreadRef) -> Arc<dyn Reporter>,
    thread: ThreadRef,
    trigger: &Trigger,
    run: &crate::trigger::CiRun,
    history: crate::history::store::LoadedThread,
) -> Result<Exit, CliError> {
    let round = super::ci_round::prepare(
        ctx,
        forge.as_ref(),
        backend.as_ref(),
        reporters(thread).as_ref(),
        thread,
        run,
        &history,
    )
    .await?;
    match round {
        Round::NotOurs(reason) => {
            not_acting(forge.as_ref(), Some(thread), Verdict::Silent(reason)).await
        }
        Round::Recorded => {
            let loaded = load_thread(backend.as_ref(), &thread).await?;
            let link = crate::app::pr_verification::history_link(
                &ctx.env,
                forge.kind(),
                &ctx.config.history,
                &thread,
            );
            crate::app::pr_verification::after_run(
                forge.as_ref(),
                &loaded.state,
                &loaded.intents,
                None,
                &link,
            )
            .await;
            Ok(Exit::Ok)
        }
        Round::Fix(fixing) => {
            let mut trigger = trigger.clone();
            trigger.thread = Some(thread);
            trigger.request = Request::CiResult(fixing);
            let history = load_thread(backend.as_ref(), &thread).await?;
            let result = cycle_on_thread(
                ctx,
                forge.clone(),
                backend.clone(),
                reporters(thread),
                thread,
                &trigger,
                Some(history),
            )
            .await;
            finish(ctx, result)
        }
    }
}

/// GitHub's review comments live under /pulls/comments, not /issues/comments; a GitLab diff
/// note on Replan's own merge request is read again with its discussion when the round is
/// collected. Neither is fetched again as a comment nor reacted to.
fn is_review_comment(trigger: &Trigger) -> bool {
    trigger.event.starts_with("pull_request_review_comment")
        || matches!(trigger.request, Request::Review(_))
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
/// continues on the stated assumptions, and every thread whose merge request's latest pipeline
/// finished without being recorded yet gets its CI round (installations without a pipeline
/// webhook see CI results this way).
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
            if let Err(e) = sweep_ci(ctx, forge, backend, reporters, trigger, thread, loaded).await
            {
                ctx.workflow.error(&e.message);
                exit = e.exit;
            }
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

/// The sweep's CI round for one thread: the latest finished run of its pull / merge request,
/// read through the API, unless the history records a result for that commit already.
async fn sweep_ci(
    ctx: &Ctx,
    forge: &Arc<dyn Forge>,
    backend: &Arc<dyn HistoryBackend>,
    reporters: &dyn Fn(ThreadRef) -> Arc<dyn Reporter>,
    trigger: &Trigger,
    thread: ThreadRef,
    loaded: crate::history::store::LoadedThread,
) -> Result<(), CliError> {
    let Some(branch) = loaded.state.pull_request_branch.clone() else {
        return Ok(());
    };
    let run = match forge.latest_ci_run(&branch).await {
        Ok(Some(run)) => run,
        Ok(None) => return Ok(()),
        Err(e) => {
            ctx.workflow.warning(&format!(
                "sweep: could not read the CI runs of `{branch}` ({thread}): {e}"
            ));
            return Ok(());
        }
    };
    let recorded = loaded
        .state
        .ci_results
        .iter()
        .any(|r| r.branch == run.branch && r.head_sha == run.head_sha);
    if recorded {
        return Ok(());
    }
    tracing::info!(
        "sweep: CI {} on `{branch}` ({}) for {thread}",
        run.conclusion,
        run.head_sha
    );
    ci_result_round(
        ctx, forge, backend, reporters, thread, trigger, &run, loaded,
    )
    .await
    .map(drop)
}
