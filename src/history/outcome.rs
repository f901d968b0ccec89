//! How a tool call ends: ok, or the kind of failure. Tools report the kind ([`ToolErrorKind`],
//! which decides the seed 000 §7.5 error class) and the history records the outcome
//! ([`ActionOutcome`], one word in the `action` entry: `ok`, `not_found`, `timeout`, …).

use crate::plan::model::ErrorClassification;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a tool call failed; the engine maps it to the seed 000 §7.5 error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// How a recorded tool call ended. Stored as one word: `ok`, or the failure's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionOutcome {
    Ok,
    Err(ToolErrorKind),
}

impl ActionOutcome {
    /// A call that failed for a reason no finer kind describes.
    pub const FAILED: ActionOutcome = ActionOutcome::Err(ToolErrorKind::Failed);
}

impl Serialize for ActionOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ActionOutcome::Ok => serializer.serialize_str("ok"),
            ActionOutcome::Err(kind) => kind.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ActionOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        if word == "ok" {
            return Ok(ActionOutcome::Ok);
        }
        let kind = serde::de::value::StrDeserializer::<D::Error>::new(&word);
        ToolErrorKind::deserialize(kind).map(ActionOutcome::Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_is_one_word_in_the_history() {
        for (outcome, word) in [
            (ActionOutcome::Ok, "ok"),
            (ActionOutcome::Err(ToolErrorKind::NotFound), "not_found"),
            (
                ActionOutcome::Err(ToolErrorKind::InvalidArguments),
                "invalid_arguments",
            ),
            (ActionOutcome::FAILED, "failed"),
            (
                ActionOutcome::Err(ToolErrorKind::Unavailable),
                "unavailable",
            ),
        ] {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{word}\""));
            assert_eq!(
                serde_json::from_str::<ActionOutcome>(&json).unwrap(),
                outcome
            );
        }
        assert!(serde_json::from_str::<ActionOutcome>("\"exploded\"").is_err());
    }
}
