//! Turning `--workspace`, `--config` and `--set` into configuration load options.

use super::args::WorkspaceArgs;
use super::exit::CliError;
use crate::config::{LoadOptions, LoadedConfig, Override};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `--workspace`, else `$GITHUB_WORKSPACE`, else `$CI_PROJECT_DIR`, else the current directory.
pub fn resolve_workspace(
    flag: Option<&PathBuf>,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, CliError> {
    let chosen = flag
        .cloned()
        .or_else(|| {
            env.get("GITHUB_WORKSPACE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            env.get("CI_PROJECT_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
    let dir = match chosen {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| {
            CliError::usage(format!(
                "cannot read the current directory: {e}; pass --workspace DIR"
            ))
        })?,
    };
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "workspace `{}` is not a directory; pass --workspace DIR pointing at the checked-out repository",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Parse `--set key=value` flags.
pub fn overrides(set: &[String]) -> Result<Vec<Override>, CliError> {
    set.iter()
        .map(|raw| {
            let (key, value) = raw.split_once('=').ok_or_else(|| {
                CliError::usage(format!(
                    "--set `{raw}` has no `=`; write it as --set key.path=value"
                ))
            })?;
            Ok(Override::flag(key.trim(), value, "--set"))
        })
        .collect()
}

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
