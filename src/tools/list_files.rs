//! `list_files`: the files of the workspace (or a folder of it), honouring .gitignore.

use super::args::{Args, invalid};
use super::blocking::run_blocking;
use super::confined::{Kind, is_dot_git};
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

#[derive(Clone)]
pub struct ListFilesTool {
    pub workspace: Workspace,
    pub max_results: usize,
    pub timeout: Duration,
}

/// A walker over the workspace that skips what git ignores and `.git` itself (in any case), but
/// shows dot-files such as `.github/` that matter to a repository. It walks by name and never
/// follows a symlink; whatever it finds is opened again through `confined`.
pub fn walker(start: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(start);
    builder
        .hidden(false)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| !is_dot_git(entry.file_name()));
    builder
}

#[async_trait]
impl Tool for ListFilesTool {
    rooted_by_workspace_field!();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".into(),
            description: format!(
                "List the files of the repository or of one folder (recursively), skipping what \
                 .gitignore excludes. At most {} paths are shown.",
                self.max_results
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Folder relative to the repository root (default: the root)"}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("list_files", &arguments)?;
        let path = args.opt_string("path")?.unwrap_or(".");
        let target = self.workspace.file_path(path)?;
        let workspace = self.workspace.clone();
        let max = self.max_results;
        run_blocking("list_files", self.timeout, move || {
            match workspace.files()?.kind(&target)? {
                Kind::Dir => {}
                Kind::Missing => return Err(missing(&target.relative)),
                Kind::File | Kind::Other => {
                    return Err(invalid(format!(
                        "`{}` is a file, not a folder; use read_file to read it",
                        target.relative
                    )));
                }
            }
            let mut files = Vec::new();
            for entry in walker(&target.under(workspace.root())).build() {
                let entry = entry.map_err(|e| {
                    ToolError::new(super::ToolErrorKind::Failed, format!("list_files: {e}"))
                })?;
                if entry.file_type().is_some_and(|t| !t.is_dir()) {
                    files.push(workspace.relative_of(entry.path()));
                }
            }
            files.sort();
            let total = files.len();
            let mut content = files
                .iter()
                .take(max)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("\n");
            if total > max {
                content.push_str(&format!(
                    "\n[… {} more files not shown; list a sub-folder]",
                    total - max
                ));
            }
            if total == 0 {
                content = format!("(no files in `{}`)", target.relative);
            }
            Ok(ToolOutput { content })
        })
        .await
    }
}

pub fn missing(shown: &str) -> ToolError {
    ToolError::new(
        super::ToolErrorKind::NotFound,
        format!("`{shown}` does not exist in the workspace"),
    )
}
