//! How a tool call fails: the kind decides the seed 000 §7.5 error class.

use crate::plan::model::ErrorClassification;

pub use crate::history::outcome::ToolErrorKind;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct ToolError {
    pub kind: ToolErrorKind,
    pub message: String,
}

impl ToolError {
    pub fn classification(&self) -> ErrorClassification {
        self.kind.classification()
    }

    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }
}
