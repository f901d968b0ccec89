//! `read_file`: a text file of the workspace, whole or by line range, within a size cap.

use super::args::{Args, invalid};
use super::blocking::{read_text, run_blocking};
use super::workspace::Workspace;
use super::{Tool, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

pub struct ReadFileTool {
    pub workspace: Workspace,
    pub cap_bytes: usize,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file of the repository. Optionally only lines start_line..=end_line \
                 (1-based). Output beyond {} bytes is cut; read large files by range.",
                self.cap_bytes
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repository root"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("read_file", &arguments)?;
        let path = args.string("path")?;
        let start = args.opt_u64("start_line")?;
        let end = args.opt_u64("end_line")?;
        if start == Some(0) || end == Some(0) {
            return Err(invalid("read_file: line numbers start at 1"));
        }
        if let (Some(s), Some(e)) = (start, end)
            && e < s
        {
            return Err(invalid(format!(
                "read_file: end_line {e} is before start_line {s}"
            )));
        }
        let target = self.workspace.resolve_existing(path)?;
        let cap = self.cap_bytes;
        run_blocking("read_file", self.timeout, move || {
            if target.absolute.is_dir() {
                return Err(invalid(format!(
                    "`{}` is a directory; use list_files to see its contents",
                    target.relative
                )));
            }
            let text = read_text(&target.absolute, &target.relative)?;
            let selected = select_lines(&text, start, end, &target.relative)?;
            Ok(ToolOutput {
                content: truncate(&selected, cap, text.len()),
            })
        })
        .await
    }
}

fn select_lines(
    text: &str,
    start: Option<u64>,
    end: Option<u64>,
    shown: &str,
) -> Result<String, super::ToolError> {
    if start.is_none() && end.is_none() {
        return Ok(text.to_owned());
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len() as u64;
    let start = start.unwrap_or(1);
    if start > total {
        return Err(invalid(format!(
            "read_file: start_line {start} is past the end of `{shown}` ({total} lines)"
        )));
    }
    let end = end.unwrap_or(total).min(total);
    Ok(lines[(start - 1) as usize..end as usize].concat())
}

fn truncate(text: &str, cap: usize, file_bytes: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut cut = cap;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let shown_lines = text[..cut].matches('\n').count();
    format!(
        "{}\n[… cut after {cut} of {} bytes (file: {file_bytes} bytes, {shown_lines} whole lines \
         shown); read the rest with start_line/end_line]",
        &text[..cut],
        text.len()
    )
}
