//! `edit_file`: replace one exact, unique piece of text in a file.

use super::args::{Args, invalid};
use super::blocking::run_blocking;
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
pub struct EditFileTool {
    pub workspace: Workspace,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for EditFileTool {
    rooted_by_workspace_field!();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace `old_text` with `new_text` in a file. `old_text` must occur \
                          exactly once, byte for byte (whitespace included); add surrounding \
                          lines to make it unique."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repository root"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"}
                },
                "required": ["path", "old_text", "new_text"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("edit_file", &arguments)?;
        let path = args.string("path")?;
        let old_text = args.string("old_text")?.to_owned();
        let new_text = crate::outbound::redact_known(args.string("new_text")?);
        if old_text.is_empty() {
            return Err(invalid(
                "edit_file: `old_text` is empty; use write_file to create a file",
            ));
        }
        if old_text == new_text {
            return Err(invalid(
                "edit_file: `old_text` and `new_text` are the same; nothing would change",
            ));
        }
        let target = self.workspace.writable_file_path("edit_file", path)?;
        let workspace = self.workspace.clone();
        run_blocking("edit_file", self.timeout, move || {
            let files = workspace.files()?;
            let text = files.read_text(&target)?;
            let edited = replace_unique(&text, &old_text, &new_text, &target.relative)?;
            files.write(&target, edited.as_bytes())?;
            let line = line_of(&text, text.find(&old_text).unwrap_or(0));
            Ok(ToolOutput {
                content: format!("edited `{}` at line {line}", target.relative),
            })
        })
        .await
    }
}

/// The text with `old` replaced by `new`, or an error saying why `old` does not pick one place.
pub fn replace_unique(text: &str, old: &str, new: &str, shown: &str) -> Result<String, ToolError> {
    let positions: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    match positions.as_slice() {
        [only] => {
            let mut edited = String::with_capacity(text.len() + new.len());
            edited.push_str(&text[..*only]);
            edited.push_str(new);
            edited.push_str(&text[only + old.len()..]);
            Ok(edited)
        }
        [] => Err(invalid(not_found_message(text, old, shown))),
        many => {
            let lines: Vec<String> = many.iter().map(|p| line_of(text, *p).to_string()).collect();
            Err(invalid(format!(
                "edit_file: `old_text` occurs {} times in `{shown}` (at lines {}); include more \
                 surrounding lines so that it matches exactly one place",
                many.len(),
                lines.join(", ")
            )))
        }
    }
}

fn not_found_message(text: &str, old: &str, shown: &str) -> String {
    let mut message = format!("edit_file: `old_text` was not found in `{shown}`");
    let first = old.lines().find(|l| !l.trim().is_empty()).unwrap_or(old);
    let exact: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == first)
        .map(|(i, _)| (i + 1).to_string())
        .take(5)
        .collect();
    let loose: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == first.trim())
        .map(|(i, _)| (i + 1).to_string())
        .take(5)
        .collect();
    if !exact.is_empty() {
        message.push_str(&format!(
            "; its first line appears at line {} but the lines after it differ — read the file \
             again and copy the text exactly",
            exact.join(", ")
        ));
    } else if !loose.is_empty() {
        message.push_str(&format!(
            "; its first line appears at line {} with different indentation or trailing spaces",
            loose.join(", ")
        ));
    } else {
        message.push_str("; read the file again and copy the text to replace exactly");
    }
    message
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_occurrence_is_replaced() {
        let edited = replace_unique("a\nb\nc\n", "b\n", "B\n", "f").unwrap();
        assert_eq!(edited, "a\nB\nc\n");
    }

    #[test]
    fn indentation_mismatch_is_explained() {
        let error =
            replace_unique("fn x() {\n    y();\n}\n", "\ty();\n}", "z();", "f.rs").unwrap_err();
        assert!(
            error.message.contains("different indentation"),
            "{}",
            error.message
        );
        assert!(error.message.contains("line 2"), "{}", error.message);
    }
}
