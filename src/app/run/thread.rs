//! The cycle on one thread: LLM, tools and sinks set up, the engine run, outputs written.

use super::context::{Ctx, load_thread, replay_spool};
use crate::app::exit::{CliError, Exit};
use crate::app::history_sink::{HistorySink, spool_dir};
use crate::app::input::{Decided, decide};
use crate::app::outputs::{self, RunOutputs, status_name};
use crate::app::pr_recorder::PrRecorder;
use crate::engine::prompts::Prompts;
use crate::engine::{CycleDeps, CycleOutcome, EngineInput, run_cycle};
use crate::forge::Forge;
use crate::forge::layer::Layered;
use crate::history::HistoryBackend;
use crate::history::entry::{RunRequest, RunStatus};
use crate::history::store::LoadedThread;
use crate::report::Reporter;
use crate::report::checklist::ChecklistContext;
use crate::tools::registry_builder::{ToolContext, build_registry};
use crate::tools::workspace::Workspace;
use crate::trigger::{ForgeKind, Request, ThreadRef, Trigger};
use chrono::Utc;
use std::sync::Arc;

pub(super) struct ThreadRun {
    outcome: Option<CycleOutcome>,
    pull_request: Option<String>,
    history_commit: Option<String>,
    ctx: ChecklistContext,
    /// The job summary's section on the repository instructions read.
    instructions: Option<String>,
}

impl ThreadRun {
    /// The thread's state after the cycle, when one ran.
    pub(super) fn state(&self) -> Option<&crate::history::SessionState> {
        self.outcome.as_ref().map(|o| &o.state)
    }
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
        Request::CiResult(_) => "ci_result".into(),
        Request::Review(_) => "review".into(),
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

pub(super) async fn cycle_on_thread(
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
        per_thread: crate::history::ledger::ThreadCap::configured(&ctx.config.llm.budget),
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
    let request = match &ctx.stage {
        Some(stage) => {
            stage.check(&loaded.state, thread)?;
            stage.request(&trigger.request)
        }
        None => trigger.request.clone(),
    };
    let needs_thread = match &request {
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
    let input = match decide(&request, &trigger.actor.login, &loaded.state, &title, &body) {
        Decided::Run(input) => input,
        Decided::Nothing(reason) => {
            tracing::info!("{thread}: {reason}");
            return Ok(ThreadRun {
                outcome: None,
                pull_request: None,
                history_commit: None,
                ctx: checklist,
                instructions: None,
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
    tool_context.pull_request_branch = loaded.state.pull_request_branch.clone();
    if let Request::CiResult(run) = &request
        && tool_context.pull_request_branch.is_none()
    {
        tool_context.pull_request_branch = Some(run.branch.clone());
    }
    tool_context.verify = Some(ctx.config.verify.clone());
    if forge.kind() == ForgeKind::GitLab {
        // GitLab's CI checkout pushes with CI_JOB_TOKEN, which may not push: use GITLAB_TOKEN.
        if let Some(publisher) = crate::tools::git::TokenPushPublisher::gitlab(&ctx.env) {
            tool_context.publisher = Arc::new(publisher);
        }
    }
    if forge.kind() == ForgeKind::Local {
        // The developer's checkout gets each branch as it is published (through the sandbox).
        tool_context.publisher = Arc::new(crate::app::private_git::ExportingPublisher::new(
            tool_context.publisher.clone(),
            ctx.config.tools.network,
        ));
    }
    if let Some(bundle) = &ctx.bundle {
        tool_context.publisher = bundle.publisher();
    }
    let (publisher, author) = (tool_context.publisher.clone(), tool_context.author.clone());
    let checkout = || crate::app::stage::Checkout {
        workspace: ctx.workspace.clone(),
        thread,
        publisher: publisher.clone(),
        author: author.clone(),
    };
    let loaded = match &ctx.stage {
        Some(stage) => {
            crate::app::stage::before_cycle(
                stage,
                &checkout(),
                loaded,
                backend.as_ref(),
                &ctx.run_id,
            )
            .await?
        }
        None => loaded,
    };
    crate::app::work_branch::restore(ctx.workspace.clone(), thread, &loaded.state).await;
    let work_saver = match &ctx.stage {
        Some(stage) if !stage.saves_work_branch() => None,
        _ => Some(crate::app::work_branch::WorkBranchReporter::new(
            reporter.clone(),
            ctx.workspace.clone(),
            thread,
            publisher.clone(),
            author.clone(),
            loaded.state.tasks_done(),
            ctx.config.history.save_work_every(),
        )),
    };
    let reporter: Arc<dyn Reporter> = match &work_saver {
        Some(saver) => saver.clone(),
        None => reporter,
    };
    let recorded_intents = loaded.intents.clone();
    let recorder = Arc::new(Layered::new(forge.clone(), PrRecorder::default()));
    tool_context.forge = Some((recorder.clone(), thread));
    tool_context.effects = Some(Arc::new(
        crate::history::effects::HistoryEffects::new(
            backend.clone(),
            thread,
            &ctx.run_id,
            loaded.intents.clone(),
        )
        .routed(ctx.effect_route.clone()),
    ));
    // Prompt overrides are read, like the config, before anything model-driven starts (MCP
    // servers start while the registry is built).
    let instructions = crate::app::instructions::load(
        &ctx.workspace,
        &ctx.env,
        &thread,
        ctx.start_commit.as_deref(),
        &ctx.config.instructions,
    );
    let instructions_summary = crate::app::instructions::summary_section(&instructions);
    let prompts = Prompts::with_overrides(&ctx.workspace)
        .map_err(|e| CliError::usage(e.to_string()))?
        .with_instructions(instructions);
    let workspace = tool_context.workspace.clone();
    let tools = build_registry(tool_context).await;
    let mut sink = HistorySink::new(backend.clone(), thread, ctx.config.history.commit_every);
    if let Some(dir) = &spool {
        sink = sink.with_spool(dir, &ctx.run_id);
    }
    if let Some(saver) = work_saver {
        sink = sink.with_before_commit(saver);
    }
    let sink = sink.shared();
    let journal: Arc<dyn crate::history::effects::Journal> = sink.clone();
    ctx.effect_route.bind(Arc::downgrade(&journal));
    let on_sigterm = sink.flush_on_sigterm();
    let (req_title, req_text) = input_text(&input);
    let llm = llm.with_thread_cap(
        crate::engine::budget_command::cap_for_run(&loaded.state, &input, &ctx.config.llm.budget),
        loaded.state.usage,
        ctx.stage
            .as_ref()
            .map_or(1, |stage| stage.ledger_share(&loaded.state)),
    );
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
            request: request_name(&request),
            title: req_title,
            text: req_text,
            run_url: forge.run_url(),
        },
        workspace: Some(workspace),
        scope: ctx
            .stage
            .as_ref()
            .map_or(crate::engine::Scope::Whole, |s| s.scope()),
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
    if let (Some(stage), Ok(outcome)) = (&ctx.stage, &result) {
        crate::app::stage::after_cycle(stage, &ctx.env, checkout(), outcome).await?;
    }
    if let Ok(outcome) = &result
        && crate::app::pr_verification::reports_on(outcome.status)
    {
        let link = crate::app::pr_verification::history_link(
            &ctx.env,
            forge.kind(),
            &ctx.config.history,
            &thread,
        );
        crate::app::pr_verification::after_run(
            recorder.as_ref(),
            &outcome.state,
            &recorded_intents,
            recorder.layer().opened(),
            &link,
        )
        .await;
    }
    match result {
        Ok(outcome) => Ok(ThreadRun {
            outcome: Some(outcome),
            pull_request: recorder.layer().opened().map(|pr| pr.url),
            history_commit,
            ctx: checklist,
            instructions: instructions_summary,
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

pub(super) fn finish(ctx: &Ctx, result: Result<ThreadRun, CliError>) -> Result<Exit, CliError> {
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
    if let (Some(section), Some(path)) = (
        &run.instructions,
        ctx.env.get("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()),
    ) && let Err(e) = crate::actions::summary::append(std::path::Path::new(path), section)
    {
        tracing::warn!("could not write the job summary to {path}: {e}");
    }
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
