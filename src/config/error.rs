//! Configuration errors: each names the key, where its value came from, and the fix.

use std::path::PathBuf;

use super::source::Source;

/// A configuration problem. The CLI exits with code 2 on any of these.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {} does not exist; fix: pass an existing file to --config or drop the flag", .path.display())]
    FileNotFound { path: PathBuf },

    #[error("cannot read config file {}: {error}; fix: check the file's permissions", .path.display())]
    FileRead {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },

    #[error("config file {} is not valid YAML: {message}; fix: correct the YAML syntax", .path.display())]
    FileSyntax { path: PathBuf, message: String },

    #[error(
        "{origin} must be a mapping of config keys at the top level; fix: start it with keys such as `planning:`"
    )]
    NotAMapping { origin: Source },

    #[error("unknown config key `{key}` (from {origin}){}; fix: remove it or use one of: {}",
        .suggestion.as_ref().map(|s| format!(", did you mean `{s}`?")).unwrap_or_default(),
        .allowed.join(", "))]
    UnknownKey {
        key: String,
        origin: Source,
        suggestion: Option<String>,
        allowed: Vec<String>,
    },

    #[error("invalid value for config key `{key}` (from {origin}): {message}; fix: {fix}")]
    InvalidValue {
        key: String,
        origin: Source,
        message: String,
        fix: String,
    },

    #[error(
        "remote config {url} failed: {message}; fix: check `user_config_api` (url, token_env) or remove it"
    )]
    Remote { url: String, message: String },
}

impl ConfigError {
    /// The dotted key path the error is about, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. } | ConfigError::InvalidValue { key, .. } => {
                Some(key)
            }
            _ => None,
        }
    }

    /// Exit code the binary uses for configuration errors.
    pub const EXIT_CODE: i32 = 2;
}
