//! The workspace directory and `--set` overrides of a run, shared by `replan run` and the
//! configuration commands.

use super::exit::CliError;
use crate::config::Override;
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
