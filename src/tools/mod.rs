//! Tools the model can call during execution, behind one trait, collected in a registry.

/// `Tool::rooted_at` for a tool whose only tie to the checkout is its `workspace` field.
macro_rules! rooted_by_workspace_field {
    () => {
        fn rooted_at(
            &self,
            workspace: &$crate::tools::workspace::Workspace,
        ) -> Option<std::sync::Arc<dyn $crate::tools::Tool>> {
            let mut tool = self.clone();
            tool.workspace = workspace.clone();
            Some(std::sync::Arc::new(tool))
        }
    };
}

pub(crate) mod apply_patch;
pub(crate) mod args;
pub(crate) mod blocking;
pub mod checks;
pub(crate) mod confined;
pub(crate) mod detect;
pub(crate) mod edit_file;
pub(crate) mod env;
mod error;
pub(crate) mod forge_tools;
pub mod git;
mod git_command;
pub(crate) mod list_files;
pub(crate) mod mcp;
pub mod output;
pub(crate) mod process;
pub(crate) mod read_file;
pub mod registry_builder;
pub(crate) mod run_command;
pub(crate) mod search;
pub mod workspace;
pub use error::{ToolError, ToolErrorKind};
pub(crate) mod write_file;

use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

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

    /// This tool working in another checkout of the workspace (a parallel subtask's worktree);
    /// `None` for a tool that does not touch the workspace and is shared as it is.
    fn rooted_at(&self, _workspace: &workspace::Workspace) -> Option<Arc<dyn Tool>> {
        None
    }
}

/// The tools offered in this run, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// The checks Replan runs itself (never offered to the model), in the same checkout.
    checks: Option<Arc<checks::CheckRunner>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// The same tools, those that work on files and commands confined to `workspace` instead.
    pub fn rooted_at(&self, workspace: &workspace::Workspace) -> ToolRegistry {
        let tools = self
            .tools
            .iter()
            .map(|(name, tool)| {
                let tool = tool.rooted_at(workspace).unwrap_or_else(|| tool.clone());
                (name.clone(), tool)
            })
            .collect();
        let checks = self
            .checks
            .as_ref()
            .map(|runner| Arc::new(runner.rooted_at(workspace)));
        ToolRegistry { tools, checks }
    }

    /// Run `runner`'s checks in this registry's checkout.
    pub fn set_checks(&mut self, runner: checks::CheckRunner) {
        self.checks = Some(Arc::new(runner));
    }

    /// The checks of this run, when there is a checkout to run them in.
    pub fn checks(&self) -> Option<&checks::CheckRunner> {
        self.checks.as_deref()
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
