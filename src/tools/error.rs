//! How a tool call fails: the kind decides the seed 000 §7.5 error class.

use crate::plan::model::ErrorClassification;

/// Why a tool call failed; the engine maps it to the seed 000 §7.5 error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    NotFound,
    Denied,
    Timeout,
    InvalidArguments,
    Failed,
    /// The service behind the tool is temporarily unavailable (rate limit, 5xx, connection).
    Unavailable,
}

impl ToolErrorKind {
    /// Default seed 000 §7.5 class: what a retry of the same call can be expected to do.
    pub fn classification(self) -> ErrorClassification {
        match self {
            ToolErrorKind::Timeout | ToolErrorKind::Unavailable => ErrorClassification::Transient,
            ToolErrorKind::NotFound
            | ToolErrorKind::Denied
            | ToolErrorKind::InvalidArguments
            | ToolErrorKind::Failed => ErrorClassification::Persistent,
        }
    }
}

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
