//! `write_file`: create or replace a file of the workspace.

use super::args::Args;
use super::blocking::run_blocking;
use super::workspace::Workspace;
use super::{Tool, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
pub struct WriteFileTool {
    pub workspace: Workspace,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for WriteFileTool {
    rooted_by_workspace_field!();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create a file, or replace a file's whole content. Missing folders are \
                          created. Prefer edit_file or apply_patch to change part of a file."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repository root"},
                    "content": {"type": "string"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("write_file", &arguments)?;
        let path = args.string("path")?;
        let content = crate::outbound::redact_known(args.string("content")?);
        let target = self.workspace.writable_file_path("write_file", path)?;
        let workspace = self.workspace.clone();
        run_blocking("write_file", self.timeout, move || {
            let existed = workspace.files()?.write(&target, content.as_bytes())?;
            Ok(ToolOutput {
                content: format!(
                    "{} `{}` ({} bytes)",
                    if existed { "replaced" } else { "created" },
                    target.relative,
                    content.len()
                ),
            })
        })
        .await
    }
}
