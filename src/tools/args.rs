//! Reading tool arguments with errors the model can act on.

use super::{ToolError, ToolErrorKind};
use serde_json::Value;

/// The arguments object of one call, with the tool name for error messages.
pub struct Args<'a> {
    tool: &'a str,
    value: &'a Value,
}

impl<'a> Args<'a> {
    pub fn new(tool: &'a str, value: &'a Value) -> Result<Self, ToolError> {
        if !value.is_object() && !value.is_null() {
            return Err(invalid(format!(
                "{tool}: arguments must be a JSON object, got {value}"
            )));
        }
        Ok(Args { tool, value })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.value.get(key).filter(|v| !v.is_null())
    }

    pub fn string(&self, key: &str) -> Result<&'a str, ToolError> {
        self.opt_string(key)?.ok_or_else(|| {
            invalid(format!(
                "{}: `{key}` is required and must be a string",
                self.tool
            ))
        })
    }

    pub fn opt_string(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(format!(
                "{}: `{key}` must be a string, got {other}",
                self.tool
            ))),
        }
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                invalid(format!(
                    "{}: `{key}` must be a non-negative integer, got {v}",
                    self.tool
                ))
            }),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(invalid(format!(
                "{}: `{key}` must be true or false, got {other}",
                self.tool
            ))),
        }
    }

    pub fn string_list(&self, key: &str) -> Result<Vec<String>, ToolError> {
        let error = || {
            invalid(format!(
                "{}: `{key}` is required and must be a non-empty array of strings",
                self.tool
            ))
        };
        let items = self.get(key).and_then(Value::as_array).ok_or_else(error)?;
        let list: Option<Vec<String>> = items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect();
        match list {
            Some(list) if !list.is_empty() => Ok(list),
            _ => Err(error()),
        }
    }
}

pub fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

pub fn failed(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorKind::Failed, message)
}
