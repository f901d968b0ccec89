//! GitLab CI: the pipeline's variables → a trigger and a [`Connection`] to the project.

use super::ci::ci_run;
use super::context::{Connection, Ctx, start_rules};
use crate::app::exit::{CliError, Exit};
use crate::config::Config;
use crate::trigger::{EventOutcome, ForgeKind};

pub(super) async fn gitlab(ctx: Ctx) -> Result<Exit, CliError> {
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
    let history = connection.history;
    let connection = Connection {
        forge: connection.forge,
        history: Box::new(move |_: &Config| history.clone()),
        run_url: connection.run_url,
    };
    ci_run(ctx, trigger, connection).await
}
