//! GitHub Actions: the event payload → a trigger and a [`Connection`] to the repository.

use super::ci::ci_run;
use super::context::{Connection, Ctx, start_rules};
use crate::app::exit::{CliError, Exit};
use crate::config::Config;
use crate::forge::github::{GitHubClient, GitHubForge, GitHubHistory, GitHubSettings};
use crate::history::HistoryBackend;
use crate::trigger::github_event::load_actions_event;
use crate::trigger::{EventOutcome, ForgeKind};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub(super) async fn github(ctx: Ctx) -> Result<Exit, CliError> {
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
    let history = move |config: &Config| -> Arc<dyn HistoryBackend> {
        Arc::new(
            GitHubHistory::new(
                client.clone(),
                &config.history.branch,
                &config.history.directory,
            )
            .with_append_timeout(config.history.append_timeout()),
        )
    };
    let connection = Connection {
        forge: github,
        history: Box::new(history),
        run_url,
    };
    ci_run(ctx, trigger, connection).await
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
