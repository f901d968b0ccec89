//! `replan run --issue N`: a local forge and history under `--local-dir`, no CI.

use super::context::{
    Ctx, RunOptions, notice_effects, recorded_forge, recorded_history, redact_fn, start_rules,
};
use super::thread::{cycle_on_thread, finish};
use crate::app::exit::{CliError, Exit};
use crate::forge::local::LocalForge;
use crate::history::LocalHistory;
use crate::report::Reporter;
use crate::report::checklist::ChecklistContext;
use crate::report::forge_reporter::ForgeReporter;
use crate::report::terminal::TerminalReporter;
use crate::trigger::{Actor, ForgeKind, Request, ThreadRef, Trigger};
use std::sync::Arc;

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

pub(super) async fn local_run(mut ctx: Ctx, opts: &RunOptions) -> Result<Exit, CliError> {
    let number = opts.issue.unwrap_or(1);
    let dir = opts
        .local_dir
        .clone()
        .unwrap_or_else(|| ctx.workspace.join(".replan"));
    keep_out_of_commits(&dir)?;
    ctx.local_dir.get_or_insert_with(|| dir.clone());
    let local = Arc::new(LocalForge::new(&dir).with_repository(&ctx.workspace));
    let forge = crate::forge::redacting::redacting(recorded_forge(&ctx, local.clone()));
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
        per_thread: crate::history::ledger::ThreadCap::configured(&ctx.config.llm.budget),
    };
    // The checklist and notices also go into the local forge, as comments would on a forge.
    let reporter: Arc<dyn Reporter> = Arc::new(crate::report::tee::TeeReporter {
        primary: Arc::new(
            ForgeReporter::new(forge.clone(), thread, checklist.clone(), redact_fn())
                .with_min_interval(std::time::Duration::ZERO)
                .with_effects(notice_effects(&backend, thread, &ctx)),
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
