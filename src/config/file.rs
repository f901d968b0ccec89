//! The repository config file: discovery and YAML parsing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::ConfigError;
use super::source::Source;

/// Candidate locations inside the workspace, first wins.
pub const REPO_FILE_CANDIDATES: &[&str] = &[".github/replan.yml", ".replan.yml"];

/// The file to read: the explicit one (which must exist), else the first candidate present.
/// The second return value is a warning when both candidates exist.
pub(crate) fn discover(
    workspace: &Path,
    explicit: Option<&Path>,
) -> Result<(Option<PathBuf>, Option<String>), ConfigError> {
    if let Some(path) = explicit {
        let path = if path.is_absolute() {
            path.to_owned()
        } else {
            workspace.join(path)
        };
        if !path.is_file() {
            return Err(ConfigError::FileNotFound { path });
        }
        return Ok((Some(path), None));
    }
    let present: Vec<PathBuf> = REPO_FILE_CANDIDATES
        .iter()
        .map(|candidate| workspace.join(candidate))
        .filter(|path| path.is_file())
        .collect();
    let warning = (present.len() > 1).then(|| {
        format!(
            "both {} and {} exist; using {} and ignoring the other (delete one to silence this)",
            present[0].display(),
            present[1].display(),
            present[0].display()
        )
    });
    Ok((present.into_iter().next(), warning))
}

/// Reads a YAML config file into a JSON tree (empty file = no settings).
pub(crate) fn read(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::FileRead {
        path: path.to_owned(),
        error,
    })?;
    parse(&text, path)
}

pub(crate) fn parse(text: &str, path: &Path) -> Result<Value, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let value: Value = serde_saphyr::from_str(text).map_err(|e| ConfigError::FileSyntax {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Default::default())),
        _ => Err(ConfigError::NotAMapping {
            origin: Source::File(path.to_owned()),
        }),
    }
}
