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

    /// Valid JSON of the wrong shape: the field and the type it should have.
    #[error(
        "the event payload {} does not have the expected shape at `{field}`: {message}; check that it is the payload of the event named",
        path.display()
    )]
    WrongShape {
        path: PathBuf,
        field: String,
        message: String,
    },

    #[error("CI variable {name} {problem}")]
    BadVariable { name: String, problem: String },
}

impl TriggerError {
    pub(crate) fn from_json(path: &std::path::Path, err: &serde_json::Error) -> Self {
        let message = without_position(err);
        TriggerError::InvalidJson {
            path: path.to_owned(),
            line: err.line(),
            column: err.column(),
            message,
        }
    }

    /// Parse a payload: a syntax error is "not valid JSON", a wrong shape names the field path
    /// and the expected type.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(
        path: &std::path::Path,
        json: &str,
    ) -> Result<T, Self> {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            if inner.classify() != serde_json::error::Category::Data {
                return TriggerError::from_json(path, &inner);
            }
            TriggerError::WrongShape {
                path: path.to_owned(),
                field,
                message: without_position(&inner),
            }
        })
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

/// serde_json appends " at line L column C"; the error's fields carry that already.
fn without_position(err: &serde_json::Error) -> String {
    let full = err.to_string();
    match full.rfind(" at line ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    }
}
