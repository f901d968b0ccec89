//! Why an event could not be understood. Every message names the input and how to fix it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error(
        "cannot read the event payload {}: {source}; check that the variable naming it ({variable}) points to the event file",
        path.display()
    )]
    Read {
        path: PathBuf,
        variable: &'static str,
        source: std::io::Error,
    },

    #[error(
        "the event payload {} is not valid JSON (line {line}, column {column}): {message}",
        path.display()
    )]
    InvalidJson {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error(
        "the `{event}` event payload {} has no `{field}`; {hint}",
        path.display()
    )]
    MissingField {
        path: PathBuf,
        event: String,
        field: String,
        hint: String,
    },

    #[error("the event payload {}: `{field}` {problem}", path.display())]
    BadValue {
        path: PathBuf,
        field: String,
        problem: String,
    },

    #[error("CI variable {name} {problem}")]
    BadVariable { name: String, problem: String },
}

impl TriggerError {
    pub(crate) fn from_json(path: &std::path::Path, err: &serde_json::Error) -> Self {
        let full = err.to_string();
        // serde_json appends " at line L column C"; the fields carry that already.
        let message = match full.rfind(" at line ") {
            Some(cut) => full[..cut].to_owned(),
            None => full,
        };
        TriggerError::InvalidJson {
            path: path.to_owned(),
            line: err.line(),
            column: err.column(),
            message,
        }
    }

    pub(crate) fn missing(path: &std::path::Path, event: &str, field: &str) -> Self {
        TriggerError::MissingField {
            path: path.to_owned(),
            event: event.to_owned(),
            field: field.to_owned(),
            hint: "this does not look like the payload of that event; check the event name and the payload file".into(),
        }
    }
}
