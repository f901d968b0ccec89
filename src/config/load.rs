//! Loading: the five sources merged in order, decoded, validated.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::error::ConfigError;
use super::layers::{Layered, normalize_camel_case_sections};
use super::source::{Provenance, Source};
use super::{Config, decode, env, file, overrides, remote, retired, validate};
use overrides::Override;

/// What [`load`] reads. The environment is passed in (not read from the process) so that callers
/// decide what counts and tests stay hermetic; the binary passes `std::env::vars()`.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The repository checkout; the repo file is looked up here.
    pub workspace: PathBuf,
    /// `--config PATH` / the `config_path` input: must exist. Relative to `workspace`.
    pub config_path: Option<PathBuf>,
    /// Environment variables: seed names, `REPLAN_*`, and `INPUT_*` action inputs.
    pub env: BTreeMap<String, String>,
    /// CLI flag overrides; they win over everything, including action inputs.
    pub overrides: Vec<Override>,
    /// Login of the user the run acts for; the remote config is fetched for them. Without a
    /// user the remote layer is skipped.
    pub user: Option<String>,
}

/// The merged configuration and where each value came from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    pub provenance: Provenance,
    /// The repository file that was read, if any.
    pub file: Option<PathBuf>,
    /// Non-fatal findings to show the user (e.g. both repo file locations exist).
    pub warnings: Vec<String>,
}

/// Loads the configuration from all five sources: defaults < repo file < remote
/// `user_config_api` < environment < action inputs < CLI flags.
///
/// Async because of the remote endpoint, which is fetched only when `user_config_api` is set (by
/// the file, the environment or a flag) and `opts.user` is known. Any remote failure is an error.
pub async fn load(opts: &LoadOptions) -> Result<LoadedConfig, ConfigError> {
    let local = LocalLayers::read(opts)?;
    let without_remote = local.merge(None, opts)?;
    let (Some(api), Some(user)) = (&without_remote.config.user_config_api, &opts.user) else {
        return Ok(without_remote);
    };
    let url = remote::display_url(&api.url);
    let mut data = remote::fetch(api, user, &opts.env).await?;
    if data.get("user_config_api").is_some() {
        return Err(ConfigError::Remote {
            url,
            message: "the response may not set `user_config_api` itself".to_owned(),
        });
    }
    normalize_camel_case_sections(&mut data);
    local.merge(Some((data, Source::Remote(url))), opts)
}

/// [`load`] without the remote layer, for offline uses (tests, `config --explain --offline`).
pub fn load_local(opts: &LoadOptions) -> Result<LoadedConfig, ConfigError> {
    LocalLayers::read(opts)?.merge(None, opts)
}

/// The repository file, read once, and any warning about it.
struct LocalLayers {
    file: Option<(PathBuf, Value)>,
    warnings: Vec<String>,
}

impl LocalLayers {
    fn read(opts: &LoadOptions) -> Result<Self, ConfigError> {
        let (path, warning) = file::discover(&opts.workspace, opts.config_path.as_deref())?;
        if let Some(warning) = &warning {
            tracing::warn!("{warning}");
        }
        let file = match path {
            Some(path) => {
                let mut tree = file::read(&path)?;
                normalize_camel_case_sections(&mut tree);
                Some((path, tree))
            }
            None => None,
        };
        Ok(Self {
            file,
            warnings: warning.into_iter().collect(),
        })
    }

    fn merge(
        &self,
        remote: Option<(Value, Source)>,
        opts: &LoadOptions,
    ) -> Result<LoadedConfig, ConfigError> {
        let defaults = serde_json::to_value(Config::default()).expect("config serializes");
        let mut layered = Layered::new(defaults);
        if let Some((path, tree)) = &self.file {
            layered.apply(tree.clone(), &Source::File(path.clone()));
        }
        if let Some((tree, source)) = remote {
            layered.apply(tree, &source);
        }
        env::apply(&mut layered, &opts.env)?;
        for o in overrides::action_inputs(&opts.env)
            .iter()
            .chain(&opts.overrides)
        {
            layered.apply_raw(&o.key, &o.value, &o.source);
        }
        let retired = retired::take_out(&mut layered);
        for warning in &retired {
            tracing::warn!("{warning}");
        }
        let config = decode::decode(&mut layered)?;
        validate::validate(&config, &layered.provenance)?;
        Ok(LoadedConfig {
            config,
            provenance: layered.provenance,
            file: self.file.as_ref().map(|(p, _)| p.clone()),
            warnings: self.warnings.iter().cloned().chain(retired).collect(),
        })
    }
}
