//! Turning `--workspace`, `--config` and `--set` into configuration load options.

use super::args::WorkspaceArgs;
use crate::app::exit::CliError;
use crate::app::workspace::{overrides, resolve_workspace};
use crate::config::{LoadOptions, LoadedConfig};
use std::collections::BTreeMap;

pub fn load_options(args: &WorkspaceArgs, user: Option<String>) -> Result<LoadOptions, CliError> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let workspace = resolve_workspace(args.workspace.as_ref(), &env)?;
    let config_path = match &args.config {
        Some(path) if path.is_relative() => Some(
            std::env::current_dir()
                .map(|cwd| cwd.join(path))
                .unwrap_or_else(|_| path.clone()),
        ),
        other => other.clone(),
    };
    Ok(LoadOptions {
        workspace,
        config_path,
        env,
        overrides: overrides(&args.set)?,
        user,
    })
}

/// Load the configuration; every problem is a usage error (exit 2) naming the key and its source.
pub async fn load_config(
    args: &WorkspaceArgs,
    user: Option<String>,
) -> Result<(LoadOptions, LoadedConfig), CliError> {
    let opts = load_options(args, user)?;
    let loaded = crate::config::load(&opts)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    // `secrets.extra_values` and the LLM key's variable are masked in what this command prints.
    crate::outbound::add_secrets(crate::app::secrets::known_secrets(
        &opts.env,
        Some(&loaded.config),
    ));
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    Ok((opts, loaded))
}
