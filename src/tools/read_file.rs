//! `read_file`: a text file of the workspace, whole or by line range, within a size cap.

use super::args::{Args, invalid};
use super::blocking::{io_error, run_blocking};
use super::confined::Kind;
use super::workspace::Workspace;
use super::{Tool, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
pub struct ReadFileTool {
    pub workspace: Workspace,
    pub cap_bytes: usize,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for ReadFileTool {
    rooted_by_workspace_field!();

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
        let target = self.workspace.file_path(path)?;
        let workspace = self.workspace.clone();
        let cap = self.cap_bytes;
        run_blocking("read_file", self.timeout, move || {
            let files = workspace.files()?;
            if files.kind(&target)? == Kind::Dir {
                return Err(invalid(format!(
                    "`{}` is a directory; use list_files to see its contents",
                    target.relative
                )));
            }
            let file = files.open_file(&target)?;
            Ok(ToolOutput {
                content: read_lines_bounded(file, &target.relative, start, end, cap)?,
            })
        })
        .await
    }
}

/// Lines `start..=end` of the file, read as a stream: memory stays within `cap` whatever the
/// file's size (the rest of the file is only counted, never kept).
fn read_lines_bounded(
    file: std::fs::File,
    shown: &str,
    start: Option<u64>,
    end: Option<u64>,
    cap: usize,
) -> Result<String, super::ToolError> {
    use std::io::BufRead;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let (first, last) = (start.unwrap_or(1), end.unwrap_or(u64::MAX));
    // Keep a few bytes past the cap, so a character cut at the cap can be completed.
    let keep = cap.saturating_add(4);
    let (mut line, mut at_line_start, mut seen) = (1u64, true, 0usize);
    let (mut kept, mut selected) = (Vec::new(), 0u64);
    loop {
        let buf = reader.fill_buf().map_err(|e| io_error(shown, "read", &e))?;
        if buf.is_empty() || line > last {
            break;
        }
        if seen < 8192 && buf.iter().take(8192 - seen).any(|b| *b == 0) {
            return Err(failed(format!(
                "`{shown}` is a binary file; only text files can be read or edited"
            )));
        }
        seen = seen.saturating_add(buf.len());
        let mut rest = buf;
        while !rest.is_empty() && line <= last {
            let (piece, ends_line) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            if line >= first {
                selected = selected.saturating_add(piece.len() as u64);
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&piece[..piece.len().min(room)]);
            }
            at_line_start = ends_line;
            if ends_line {
                line = line.saturating_add(1);
            }
            rest = &rest[piece.len()..];
        }
        let used = buf.len() - rest.len();
        reader.consume(used);
    }
    // `line` counts lines begun; a file that ends in a newline has not begun the next one.
    let total = if at_line_start { line - 1 } else { line };
    if (start.is_some() || end.is_some()) && first > total {
        return Err(invalid(format!(
            "read_file: start_line {first} is past the end of `{shown}` ({total} lines)"
        )));
    }
    let text = utf8_prefix(&kept, shown)?;
    if selected <= cap as u64 {
        return Ok(text.to_owned());
    }
    let mut cut = cap.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let shown_lines = text[..cut].matches('\n').count();
    Ok(format!(
        "{}\n[… cut after {cut} of {selected} bytes (file: {file_bytes} bytes, {shown_lines} whole lines \
         shown); read the rest with start_line/end_line]",
        &text[..cut],
    ))
}

/// The kept bytes as text: a character cut at the end is dropped, anything else invalid refused.
fn utf8_prefix<'a>(bytes: &'a [u8], shown: &str) -> Result<&'a str, super::ToolError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) if e.error_len().is_none() => {
            Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => Err(failed(format!("`{shown}` is not valid UTF-8 text"))),
    }
}

fn failed(message: String) -> super::ToolError {
    super::ToolError::new(super::ToolErrorKind::Failed, message)
}
