//! `replan run`: one planning cycle for whatever triggered the job.
//!
//! Exit codes: 0 when the cycle finished or waits for a person (and when the trigger was refused
//! or ignored), 1 when Replan itself failed (a Failure notice says so on the thread), 2 for usage
//! and configuration errors (bad payload, missing token, unknown config key).
//!
//! One file a platform (`github`, `gitlab`, `local`), each building a [`Connection`]; `ci` is
//! the gate-to-outputs path the two CI platforms share, `thread` the cycle on one thread.

mod ci;
mod ci_round;
mod context;
mod early_history;
mod github;
mod gitlab;
mod local;
mod thread;

pub use context::RunOptions;
pub(crate) use context::{gate_policy, start_rules};

use super::exit::{CliError, Exit};
use super::secrets::known_secrets;
use super::workspace::{overrides, resolve_workspace};
use crate::actions::log::Workflow;
use crate::app::bundle::Recorder;
use crate::config::{self, LoadOptions};
use chrono::Utc;
use context::Ctx;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub async fn run(opts: RunOptions, mut env: BTreeMap<String, String>) -> Result<Exit, CliError> {
    let stage = opts.stage.resolve()?;
    let started_at = Utc::now();
    let run_id = run_id(&env);
    // The bundle takes `$GITHUB_OUTPUT` over; the digest goes to the job's own.
    let job_output = env
        .get("GITHUB_OUTPUT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let bundle = match &opts.bundle {
        Some(dir) => Some(Arc::new(
            Recorder::create(dir, &run_id, &mut env).map_err(CliError::usage)?,
        )),
        None => None,
    };
    let workflow = Workflow::detect(&env);
    let redactor = crate::outbound::secrets();
    redactor.add_secrets(known_secrets(&env, None));
    workflow.mask(&redactor.current());

    let workspace = resolve_workspace(opts.workspace.as_ref(), &env)?;
    // Before anything the model does: Replan's own git moves to a private copy (issue 35).
    let private = super::private_git::adopt(&workspace, &env)?;
    let start_commit = super::instructions::start_commit(&workspace);
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
    let network = local.config.tools.network;
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
        stage,
        effect_route: Default::default(),
        start_commit,
    };
    let bundle_dir = ctx.bundle.as_ref().map(|b| b.dir().to_path_buf());
    let nonempty = |name: &str| env.get(name).is_some_and(|v| !v.trim().is_empty());
    let result = if nonempty("GITHUB_EVENT_NAME") {
        github::github(ctx).await
    } else if opts.issue.is_some() {
        let result = local::local_run(ctx, &opts).await;
        super::private_git::export_branches(&private, network).await;
        result
    } else if env.get("GITLAB_CI").is_some_and(|v| v == "true") {
        gitlab::gitlab(ctx).await
    } else {
        Err(CliError::usage(
            "no trigger: inside GitHub Actions set GITHUB_EVENT_NAME and GITHUB_EVENT_PATH (the runner does), in GitLab CI the job sets GITLAB_CI; for a local run pass --issue N [--title T --body B]",
        ))
    };
    // The cycle is over and every command and MCP server it started with it: nothing Replan
    // runs writes the bundle after this.
    if let Some(dir) = bundle_dir
        && let Err(e) = crate::app::bundle::digest::report(&dir, job_output.as_deref())
    {
        tracing::error!("{e}");
        return Err(CliError::failure(e));
    }
    result
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
