//! Which lines of a comment are prose a person wrote to us, as rendered Markdown shows them.
//!
//! Commands and mentions count only in prose: text inside code (fenced, indented, inline,
//! `<code>`/`<pre>`), block quotes (lazy continuation lines included), HTML blocks and comments,
//! and struck-out text is somebody else's words (or hidden), so it must never steer Replan.
//! A CommonMark parser decides, so the result matches what a reader sees on the forge.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// One rendered line. `masked` has the same byte length as `raw`, with inline code blanked out,
/// so offsets found in `masked` can slice `raw` (a command's reason keeps its inline code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProseLine {
    pub raw: String,
    pub masked: String,
    /// Whether the line is a line of a plain paragraph, where a `/command` may start it; lines of
    /// list items, headings and tables only mention (a list of commands documents them).
    pub may_command: bool,
}

/// The prose lines of `body`, in order.
pub(crate) fn prose_lines(body: &str) -> Vec<ProseLine> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut scan = Scan::default();
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        scan.event(event, &body[range]);
    }
    scan.end_line();
    scan.lines
}

#[derive(Default)]
struct Scan {
    lines: Vec<ProseLine>,
    raw: String,
    masked: String,
    /// Inside a block quote, code block, HTML block, footnote or struck-out text.
    hidden: u32,
    /// Inside inline `<code>`, `<pre>`, `<kbd>` or `<samp>` HTML.
    html_code: u32,
    /// Inside a list item, heading or table.
    not_paragraph: u32,
}

impl Scan {
    fn event(&mut self, event: Event<'_>, source: &str) {
        match event {
            Event::Start(tag) => {
                if hides(&tag) {
                    self.end_line();
                    self.hidden += 1;
                } else if matches!(
                    tag,
                    Tag::Item | Tag::Heading { .. } | Tag::Table(_) | Tag::DefinitionList
                ) {
                    self.end_line();
                    self.not_paragraph += 1;
                }
            }
            Event::End(end) => {
                if ends_hidden(end) {
                    self.hidden = self.hidden.saturating_sub(1);
                } else if matches!(
                    end,
                    TagEnd::Item | TagEnd::Heading(_) | TagEnd::Table | TagEnd::DefinitionList
                ) {
                    self.end_line();
                    self.not_paragraph = self.not_paragraph.saturating_sub(1);
                } else if matches!(
                    end,
                    TagEnd::Paragraph | TagEnd::TableCell | TagEnd::TableRow | TagEnd::TableHead
                ) {
                    self.end_line();
                }
            }
            Event::Text(text) if self.visible() => {
                self.raw.push_str(&text);
                self.masked.push_str(&text);
            }
            Event::Code(_) if self.visible() => {
                self.raw.push_str(source);
                self.masked.push_str(&" ".repeat(source.len()));
            }
            Event::InlineHtml(html) => self.inline_html(&html),
            Event::SoftBreak | Event::HardBreak => self.end_line(),
            _ => {}
        }
    }

    fn visible(&self) -> bool {
        self.hidden == 0 && self.html_code == 0
    }

    fn inline_html(&mut self, html: &str) {
        let lower = html.trim().to_ascii_lowercase();
        let names = ["code", "pre", "kbd", "samp", "tt"];
        let is_tag = |rest: &str| {
            names.iter().any(|name| {
                rest.strip_prefix(name)
                    .is_some_and(|after| after.starts_with(['>', ' ', '\t', '\n', '/']))
            })
        };
        if let Some(rest) = lower.strip_prefix("</") {
            if is_tag(rest) {
                self.html_code = self.html_code.saturating_sub(1);
            }
        } else if let Some(rest) = lower.strip_prefix('<')
            && is_tag(rest)
            && !lower.ends_with("/>")
        {
            self.html_code += 1;
        }
    }

    fn end_line(&mut self) {
        if self.hidden == 0 && !self.raw.trim().is_empty() {
            self.lines.push(ProseLine {
                raw: std::mem::take(&mut self.raw),
                masked: std::mem::take(&mut self.masked),
                may_command: self.not_paragraph == 0,
            });
        }
        self.raw.clear();
        self.masked.clear();
    }
}

fn hides(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::BlockQuote(_)
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::Strikethrough
            | Tag::MetadataBlock(_)
    )
}

fn ends_hidden(end: TagEnd) -> bool {
    matches!(
        end,
        TagEnd::BlockQuote(_)
            | TagEnd::CodeBlock
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::Strikethrough
            | TagEnd::MetadataBlock(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_lines(body: &str) -> Vec<String> {
        prose_lines(body).into_iter().map(|l| l.raw).collect()
    }

    #[test]
    fn fenced_blocks_with_info_strings_and_tildes_are_skipped() {
        let body = "a\n\n```rust\n/approve\n```\nb\n\n~~~~ text\n/stop\n~~~\n/still code\n~~~~\nc";
        assert_eq!(raw_lines(body), ["a", "b", "c"]);
    }

    #[test]
    fn a_shorter_fence_does_not_close_a_longer_one() {
        assert_eq!(raw_lines("````\n```\n/approve\n````\nx"), ["x"]);
    }

    #[test]
    fn unterminated_fence_runs_to_the_end() {
        assert!(raw_lines("```\n/approve\n\n/stop").is_empty());
    }

    #[test]
    fn fence_inside_a_list_item_is_code() {
        assert_eq!(raw_lines("- ```\n  /approve\n  ```\n\nafter"), ["after"]);
    }

    #[test]
    fn quotes_lazy_continuations_indented_code_and_html_are_skipped() {
        let body = "> /approve\n/lazy continuation\n\n    /stop\n\n\t/status\n\n<!--\n/resume\n-->\n\nok <!-- hidden --> visible\n\n<pre>\n/approve\n</pre>\n\n<div>\n/stop\n</div>";
        assert_eq!(raw_lines(body), ["ok  visible"]);
    }

    #[test]
    fn inline_code_and_code_tags_are_masked_without_moving_offsets() {
        let lines = prose_lines("say `/approve ü` now <code>/stop</code> <kbd>@replan</kbd>");
        let line = &lines[0];
        assert_eq!(line.masked.len(), line.raw.len());
        assert!(line.raw.contains("`/approve ü`"), "{line:?}");
        assert!(!line.masked.contains("/approve"), "{line:?}");
        assert!(
            !line.raw.contains("/stop") && !line.raw.contains("@replan"),
            "{line:?}"
        );
    }

    #[test]
    fn list_items_and_headings_are_prose_but_not_command_lines() {
        let lines = prose_lines("# /approve\n\n- /stop\n- @replan\n\n/status");
        let flags: Vec<_> = lines
            .iter()
            .map(|l| (l.raw.as_str(), l.may_command))
            .collect();
        assert_eq!(
            flags,
            [
                ("/approve", false),
                ("/stop", false),
                ("@replan", false),
                ("/status", true)
            ]
        );
    }

    #[test]
    fn carriage_returns_end_lines() {
        assert_eq!(raw_lines("a\r\nb\rc\n"), ["a", "b", "c"]);
    }
}
