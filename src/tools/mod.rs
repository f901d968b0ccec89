//! Tools the model can call during execution, behind one trait, collected in a registry.

pub(crate) mod apply_patch;
pub(crate) mod args;
pub(crate) mod blocking;
pub(crate) mod detect;
pub(crate) mod edit_file;
pub(crate) mod effects;
pub(crate) mod env;
pub(crate) mod forge_tools;
pub mod git;
pub(crate) mod list_files;
pub(crate) mod mcp;
pub mod output;
pub(crate) mod read_file;
pub mod registry_builder;
pub(crate) mod run_command;
pub(crate) mod search;
pub mod workspace;
pub(crate) mod write_file;

use crate::llm::ToolSpec;
use crate::plan::model::ErrorClassification;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

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

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Text returned to the model (already capped by the tool).
    pub content: String,
}

pub type ToolResult = Result<ToolOutput, ToolError>;

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;

    /// Run with validated-by-the-tool arguments. Tools enforce their own time limits.
    async fn call(&self, arguments: Value) -> ToolResult;
}

/// The tools offered in this run, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// Call a tool by name; an unknown name is a `NotFound` error the model can recover from.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        match self.tools.get(name) {
            Some(tool) => tool.call(arguments).await,
            None => Err(ToolError::new(
                ToolErrorKind::NotFound,
                format!(
                    "no tool named `{name}`; available: {}",
                    self.tools.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }
}
