//! Wrong-shape JSON errors that name the field path: `task_decomposition.subtasks: missing`,
//! `ts: invalid type: integer `5`, expected a string`. Valid JSON of the wrong shape must not read
//! as "not valid JSON", nor as an empty value.

use serde::de::DeserializeOwned;

/// Deserialize `json` tracking the path; the error says which field and what was wrong.
pub fn from_str<T: DeserializeOwned>(json: &str) -> Result<T, ShapeError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut deserializer).map_err(ShapeError::from)
}

/// [`from_str`] for a value already parsed (`prefix` is the value's own path, "" at the root).
pub fn from_value<T: DeserializeOwned>(
    prefix: &str,
    value: serde_json::Value,
) -> Result<T, ShapeError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut shape = ShapeError::from(e);
        shape.path = join(prefix, &shape.path);
        shape
    })
}

/// A wrong-shape (or syntax) error at a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// Dotted path of the field, "" for the whole document.
    pub path: String,
    /// What is wrong there, without serde's " at line L column C".
    pub message: String,
    /// Not JSON at all (as opposed to JSON of the wrong shape).
    pub syntax: bool,
    pub line: usize,
    pub column: usize,
}

impl From<serde_path_to_error::Error<serde_json::Error>> for ShapeError {
    fn from(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = match e.path().to_string() {
            p if p == "." => String::new(),
            p => p,
        };
        let inner = e.into_inner();
        let message = without_position(&inner);
        // serde names a missing field in the message of its parent: move it into the path.
        let (path, message) = match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(field) => (join(&path, field), "missing".to_owned()),
            None => (path, message),
        };
        ShapeError {
            path,
            message,
            syntax: inner.classify() != serde_json::error::Category::Data,
            line: inner.line(),
            column: inner.column(),
        }
    }
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.path, self.message)
        }
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) if path.starts_with('[') => format!("{prefix}{path}"),
        (false, false) => format!("{prefix}.{path}"),
    }
}

/// serde_json appends " at line L column C"; callers report the position on their own.
pub fn without_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanningResponse, TaskDecomposition};

    #[test]
    fn a_missing_nested_field_is_named_by_its_path() {
        let err = from_str::<PlanningResponse>(r#"{"task_decomposition": {"reasoning": "x"}}"#)
            .unwrap_err();
        assert_eq!(err.to_string(), "`task_decomposition.subtasks`: missing");
        assert!(!err.syntax);
    }

    #[test]
    fn a_wrong_type_names_the_path_and_the_expected_type() {
        let err = from_str::<TaskDecomposition>(
            r#"{"subtasks": [{"id": "a", "description": "d", "dependencies": "b"}]}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "subtasks[0].dependencies");
        assert!(err.message.contains("expected a sequence"), "{err}");
    }

    #[test]
    fn syntax_errors_are_told_apart() {
        let err = from_str::<TaskDecomposition>("{\"subtasks\": [").unwrap_err();
        assert!(err.syntax);
    }

    #[test]
    fn a_prefix_is_joined_to_the_path() {
        let err = from_value::<TaskDecomposition>("plan.task_decomposition", serde_json::json!({}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`plan.task_decomposition.subtasks`: missing"
        );
    }
}
