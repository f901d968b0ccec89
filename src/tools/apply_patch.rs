//! `apply_patch`: a unified diff over one or more files of the workspace.
//!
//! Hand-written rather than a crate so that a failure names the hunk, the line and the text that
//! was expected, which is what the model needs to fix its patch. Context must match exactly; a
//! hunk whose line numbers are off is still placed where its context matches uniquely, nearest to
//! the stated line. Nothing is written unless every hunk of every file applies.

use super::args::{Args, invalid};
use super::blocking::run_blocking;
use super::confined::{FilePath, Kind};
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
pub struct ApplyPatchTool {
    pub workspace: Workspace,
    pub timeout: Duration,
}

#[async_trait]
impl Tool for ApplyPatchTool {
    rooted_by_workspace_field!();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch".into(),
            description: "Apply a unified diff (as produced by `git diff` or `diff -u`) to the \
                          repository. Several files per patch; `--- /dev/null` creates a file, \
                          `+++ /dev/null` deletes one. Context lines must match the files exactly."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "patch": {"type": "string", "description": "The unified diff"}
                },
                "required": ["patch"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("apply_patch", &arguments)?;
        let patch = parse_patch(&crate::outbound::redact_known(args.string("patch")?))?;
        let workspace = self.workspace.clone();
        run_blocking("apply_patch", self.timeout, move || {
            apply(&workspace, &patch)
        })
        .await
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FilePatch {
    /// None for `/dev/null` (a new file).
    pub old_path: Option<String>,
    /// None for `/dev/null` (a deleted file).
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hunk {
    pub old_start: usize,
    pub lines: Vec<HunkLine>,
    /// `\ No newline at end of file` after the old / new side's last line.
    pub old_no_newline: bool,
    pub new_no_newline: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

impl Hunk {
    fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Add(t) => Some(t.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

/// Parse a unified diff into file patches.
pub fn parse_patch(text: &str) -> Result<Vec<FilePatch>, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !line.starts_with("--- ") {
            i += 1;
            continue;
        }
        let Some(next) = lines.get(i + 1).filter(|l| l.starts_with("+++ ")) else {
            return Err(invalid(format!(
                "apply_patch: line {}: `---` header is not followed by a `+++` header",
                i + 1
            )));
        };
        let old_path = header_path(&line[4..]);
        let new_path = header_path(&next[4..]);
        if old_path.is_none() && new_path.is_none() {
            return Err(invalid(format!(
                "apply_patch: line {}: both sides are /dev/null",
                i + 1
            )));
        }
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let (hunk, next_index) = parse_hunk(&lines, i, hunks.len() + 1)?;
            hunks.push(hunk);
            i = next_index;
        }
        if hunks.is_empty() {
            return Err(invalid(format!(
                "apply_patch: the patch for `{}` has no hunks (`@@ -l,n +l,n @@` lines)",
                new_path.as_deref().or(old_path.as_deref()).unwrap_or("?")
            )));
        }
        files.push(FilePatch {
            old_path,
            new_path,
            hunks,
        });
    }
    if files.is_empty() {
        return Err(invalid(
            "apply_patch: no file headers found; the patch must be a unified diff with \
             `--- a/path` and `+++ b/path` lines followed by `@@` hunks",
        ));
    }
    Ok(files)
}

fn header_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    if raw == "/dev/null" {
        return None;
    }
    let stripped = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    Some(stripped.to_owned())
}

fn parse_hunk(lines: &[&str], start: usize, number: usize) -> Result<(Hunk, usize), ToolError> {
    let header = lines[start];
    let ranges = regex_hunk_header().captures(header).ok_or_else(|| {
        invalid(format!(
            "apply_patch: hunk {number}: `{header}` is not a hunk header like \
                 `@@ -12,5 +12,6 @@`"
        ))
    })?;
    let number_at = |i: usize, default: usize| {
        ranges
            .get(i)
            .map(|m| m.as_str().parse::<usize>().unwrap_or(default))
            .unwrap_or(default)
    };
    let old_start = number_at(1, 1);
    let old_count = number_at(2, 1);
    let new_count = number_at(4, 1);
    let mut hunk = Hunk {
        old_start,
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
    };
    let (mut old_seen, mut new_seen) = (0, 0);
    let mut i = start + 1;
    while i < lines.len() && (old_seen < old_count || new_seen < new_count) {
        let line = lines[i];
        match line.chars().next() {
            Some(' ') => {
                hunk.lines.push(HunkLine::Context(line[1..].to_owned()));
                old_seen += 1;
                new_seen += 1;
            }
            // An empty line inside a hunk is a context line whose space was trimmed.
            None => {
                hunk.lines.push(HunkLine::Context(String::new()));
                old_seen += 1;
                new_seen += 1;
            }
            Some('-') => {
                hunk.lines.push(HunkLine::Remove(line[1..].to_owned()));
                old_seen += 1;
            }
            Some('+') => {
                hunk.lines.push(HunkLine::Add(line[1..].to_owned()));
                new_seen += 1;
            }
            Some('\\') => mark_no_newline(&mut hunk),
            _ => {
                return Err(invalid(format!(
                    "apply_patch: hunk {number} ({header}) ends early at patch line {}: expected \
                     {old_count} old and {new_count} new lines, got {old_seen} and {new_seen}",
                    i + 1
                )));
            }
        }
        i += 1;
    }
    if old_seen != old_count || new_seen != new_count {
        return Err(invalid(format!(
            "apply_patch: hunk {number} ({header}) has {old_seen} old and {new_seen} new lines, \
             but its header announces {old_count} and {new_count}"
        )));
    }
    if lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        mark_no_newline(&mut hunk);
        i += 1;
    }
    Ok((hunk, i))
}

fn mark_no_newline(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(HunkLine::Add(_)) => hunk.new_no_newline = true,
        Some(HunkLine::Remove(_)) => hunk.old_no_newline = true,
        Some(HunkLine::Context(_)) => {
            hunk.old_no_newline = true;
            hunk.new_no_newline = true;
        }
        None => {}
    }
}

fn regex_hunk_header() -> &'static regex::Regex {
    static HEADER: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    HEADER.get_or_init(|| {
        regex::Regex::new(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@").expect("valid regex")
    })
}

/// A file's lines without terminators, and whether the last one ended with a newline.
#[derive(Debug, Clone, PartialEq)]
struct FileText {
    lines: Vec<String>,
    final_newline: bool,
}

impl FileText {
    fn parse(text: &str) -> Self {
        FileText {
            lines: text.lines().map(str::to_owned).collect(),
            final_newline: text.is_empty() || text.ends_with('\n'),
        }
    }

    fn render(&self) -> String {
        let mut text = self.lines.join("\n");
        if self.final_newline && !self.lines.is_empty() {
            text.push('\n');
        }
        text
    }
}

/// Apply hunks to a file's text; errors name the hunk and the first line that differs.
pub fn apply_hunks(text: &str, hunks: &[Hunk], shown: &str) -> Result<String, ToolError> {
    let mut file = FileText::parse(text);
    // Lines shift as earlier hunks add or remove lines.
    let mut offset: isize = 0;
    let mut floor = 0usize;
    for (index, hunk) in hunks.iter().enumerate() {
        let old = hunk.old_lines();
        let stated = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let wanted = (stated as isize + offset).max(0) as usize;
        let at = locate(&file.lines, &old, wanted, floor)
            .map_err(|found| mismatch(index + 1, shown, wanted, &old, &file.lines, found))?;
        let new: Vec<String> = hunk.new_lines().into_iter().map(str::to_owned).collect();
        let touches_end = at + old.len() == file.lines.len();
        file.lines.splice(at..at + old.len(), new.iter().cloned());
        if touches_end {
            file.final_newline = !hunk.new_no_newline;
        }
        offset += new.len() as isize - old.len() as isize;
        floor = at + new.len();
    }
    Ok(file.render())
}

/// Where `old` matches exactly: the stated position if it matches, else the nearest unique
/// match at or after `floor`. On failure, the position whose first mismatch is shown.
fn locate(lines: &[String], old: &[&str], wanted: usize, floor: usize) -> Result<usize, usize> {
    let matches_at = |at: usize| {
        at + old.len() <= lines.len() && old.iter().zip(&lines[at..]).all(|(a, b)| a == b)
    };
    if matches_at(wanted) && wanted >= floor {
        return Ok(wanted);
    }
    if old.is_empty() {
        return Err(wanted);
    }
    let candidates: Vec<usize> = (floor..=lines.len().saturating_sub(old.len()))
        .filter(|at| matches_at(*at))
        .collect();
    match candidates.as_slice() {
        [] => Err(wanted),
        _ => Ok(*candidates
            .iter()
            .min_by_key(|at| at.abs_diff(wanted))
            .expect("non-empty")),
    }
}

fn mismatch(
    number: usize,
    shown: &str,
    wanted: usize,
    old: &[&str],
    lines: &[String],
    at: usize,
) -> ToolError {
    let at = at.min(lines.len());
    let (offset, expected) = old
        .iter()
        .enumerate()
        .find(|(i, expected)| lines.get(at + i).map(String::as_str) != Some(**expected))
        .map(|(i, e)| (i, *e))
        .unwrap_or((0, old.first().copied().unwrap_or("")));
    let found = lines
        .get(at + offset)
        .map(|l| format!("`{l}`"))
        .unwrap_or_else(|| "the end of the file".to_owned());
    ToolError::new(
        ToolErrorKind::Failed,
        format!(
            "hunk {number} of `{shown}` does not apply at line {}: expected `{expected}` but found \
             {found}, and its context matches nowhere else in the file; read the file and \
             regenerate the patch (nothing was changed)",
            wanted.max(at) + offset + 1
        ),
    )
}

enum Change {
    Write(FilePath, String),
    Delete(FilePath),
}

fn apply(workspace: &Workspace, patch: &[FilePatch]) -> ToolResult {
    let files = workspace.files()?;
    let mut changes = Vec::new();
    let mut summary = Vec::new();
    for file in patch {
        match (&file.old_path, &file.new_path) {
            (None, Some(new)) => {
                let target = workspace.writable_file_path("apply_patch", new)?;
                if files.kind(&target)? != Kind::Missing {
                    return Err(ToolError::new(
                        ToolErrorKind::Failed,
                        format!(
                            "the patch creates `{}` (--- /dev/null) but it already exists; \
                             nothing was changed",
                            target.relative
                        ),
                    ));
                }
                let text = apply_hunks("", &file.hunks, &target.relative)?;
                summary.push(format!("created `{}`", target.relative));
                changes.push(Change::Write(target, text));
            }
            (Some(old), new) => {
                let source = workspace.writable_file_path("apply_patch", old)?;
                let text = files.read_text(&source).map_err(|e| {
                    if e.kind == ToolErrorKind::NotFound {
                        ToolError::new(
                            ToolErrorKind::NotFound,
                            format!("the patch changes `{old}`, which does not exist; nothing was changed"),
                        )
                    } else {
                        e
                    }
                })?;
                let patched = apply_hunks(&text, &file.hunks, &source.relative)?;
                match new {
                    None => {
                        if !patched.is_empty() {
                            return Err(ToolError::new(
                                ToolErrorKind::Failed,
                                format!(
                                    "the patch deletes `{}` but its hunks leave content behind; \
                                     nothing was changed",
                                    source.relative
                                ),
                            ));
                        }
                        summary.push(format!("deleted `{}`", source.relative));
                        changes.push(Change::Delete(source));
                    }
                    Some(new) if new != old => {
                        let target = workspace.writable_file_path("apply_patch", new)?;
                        summary.push(format!(
                            "renamed `{}` to `{}` ({} hunks)",
                            source.relative,
                            target.relative,
                            file.hunks.len()
                        ));
                        changes.push(Change::Write(target, patched));
                        changes.push(Change::Delete(source));
                    }
                    Some(_) => {
                        summary.push(format!(
                            "patched `{}` ({} hunk{})",
                            source.relative,
                            file.hunks.len(),
                            if file.hunks.len() == 1 { "" } else { "s" }
                        ));
                        changes.push(Change::Write(source, patched));
                    }
                }
            }
            (None, None) => unreachable!("rejected while parsing"),
        }
    }
    for change in changes {
        match change {
            Change::Write(target, text) => {
                files.write(&target, text.as_bytes())?;
            }
            Change::Delete(target) => files.remove(&target)?,
        }
    }
    Ok(ToolOutput {
        content: summary.join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_file(patch: &str) -> FilePatch {
        parse_patch(patch).unwrap().remove(0)
    }

    #[test]
    fn hunks_apply_with_shifted_line_numbers() {
        let text = "a\nb\nc\nd\ne\n";
        let patch = one_file("--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n b\n-c\n+C\n d\n");
        assert_eq!(
            apply_hunks(text, &patch.hunks, "f").unwrap(),
            "a\nb\nC\nd\ne\n"
        );
    }

    #[test]
    fn missing_final_newline_is_kept_and_added() {
        let patch = one_file(
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
        );
        assert_eq!(apply_hunks("a\nb", &patch.hunks, "f").unwrap(), "a\nb\n");
    }

    #[test]
    fn a_header_that_miscounts_lines_is_explained() {
        let error = parse_patch("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n").unwrap_err();
        assert!(
            error.message.contains("announces 3 and 3"),
            "{}",
            error.message
        );
    }

    #[test]
    fn text_without_headers_is_rejected() {
        let error = parse_patch("just words").unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
        assert!(error.message.contains("--- a/path"), "{}", error.message);
    }
}
