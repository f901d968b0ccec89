//! `search`: a regular expression over the text files of the workspace, honouring .gitignore.

use super::args::{Args, invalid};
use super::blocking::run_blocking;
use super::confined::{FilePath, Kind};
use super::list_files::{missing, walker};
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

/// Longest line shown in a match, so one minified file cannot fill the output.
const MAX_LINE_CHARS: usize = 300;

#[derive(Clone)]
pub struct SearchTool {
    pub workspace: Workspace,
    pub max_results: usize,
    /// Files larger than this are skipped.
    pub max_file_bytes: u64,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for SearchTool {
    rooted_by_workspace_field!();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search".into(),
            description: format!(
                "Search the repository's text files for a regular expression (Rust regex syntax). \
                 Returns `path:line: text` for at most {} matching lines; files ignored by \
                 .gitignore are skipped.",
                self.max_results
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression"},
                    "path": {"type": "string", "description": "Folder or file to search (default: the root)"},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.rs`"},
                    "case_insensitive": {"type": "boolean"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("search", &arguments)?;
        let pattern = args.string("pattern")?;
        let path = args.opt_string("path")?.unwrap_or(".");
        let glob = args.opt_string("glob")?.map(str::to_owned);
        let regex = regex::RegexBuilder::new(pattern)
            .case_insensitive(args.opt_bool("case_insensitive")?.unwrap_or(false))
            .build()
            .map_err(|e| invalid(format!("search: `pattern` is not a valid regex: {e}")))?;
        let target = self.workspace.file_path(path)?;
        let workspace = self.workspace.clone();
        let (max, max_file_bytes) = (self.max_results, self.max_file_bytes);
        run_blocking("search", self.timeout, move || {
            let files = workspace.files()?;
            if files.kind(&target)? == Kind::Missing {
                return Err(missing(&target.relative));
            }
            let start = target.under(workspace.root());
            let mut builder = walker(&start);
            if let Some(glob) = &glob {
                let mut overrides = ignore::overrides::OverrideBuilder::new(&start);
                overrides
                    .add(glob)
                    .map_err(|e| invalid(format!("search: `glob` is not valid: {e}")))?;
                builder.overrides(
                    overrides
                        .build()
                        .map_err(|e| invalid(format!("search: `glob` is not valid: {e}")))?,
                );
            }
            let mut hits = Vec::new();
            let mut total = 0usize;
            for entry in builder.build() {
                let entry = entry
                    .map_err(|e| ToolError::new(ToolErrorKind::Failed, format!("search: {e}")))?;
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                // Opened again beneath the root: a symlink, a hard link or `.git` in any case
                // found by the walk (or swapped in since) is skipped, never read.
                let Some(file) = entry
                    .path()
                    .strip_prefix(workspace.root())
                    .ok()
                    .and_then(|relative| FilePath::new(relative).ok())
                    .and_then(|path| files.open_file(&path).ok())
                else {
                    continue;
                };
                if file
                    .metadata()
                    .map(|m| m.len() > max_file_bytes)
                    .unwrap_or(true)
                {
                    continue;
                }
                // Never more than the cap, even if the file grew since its size was read.
                let mut bytes = Vec::new();
                if std::io::Read::read_to_end(
                    &mut std::io::Read::take(file, max_file_bytes),
                    &mut bytes,
                )
                .is_err()
                {
                    continue;
                }
                if bytes.iter().take(8192).any(|b| *b == 0) {
                    continue;
                }
                let text = String::from_utf8_lossy(&bytes);
                let relative = workspace.relative_of(entry.path());
                for (index, line) in text.lines().enumerate() {
                    if regex.is_match(line) {
                        total += 1;
                        if hits.len() < max {
                            hits.push(format!("{relative}:{}: {}", index + 1, shorten(line)));
                        }
                    }
                }
            }
            let mut content = hits.join("\n");
            if total > max {
                content.push_str(&format!(
                    "\n[… {} more matches not shown; narrow the pattern, path or glob]",
                    total - max
                ));
            }
            if total == 0 {
                content = format!("no matches for `{}`", regex.as_str());
            }
            Ok(ToolOutput { content })
        })
        .await
    }
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept} […]")
}
