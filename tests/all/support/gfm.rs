//! Rendered comments read as GitHub renders them: GitHub-flavoured Markdown (CommonMark with
//! tables, task lists and strikethrough) parsed by pulldown-cmark, and the HTML it lets through
//! read as a browser would, so a test asserts the structure a reader sees.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What a reader sees, structurally.
#[derive(Debug, Default)]
pub struct Rendered {
    /// Task list items: (checked, the item's text as displayed).
    pub tasks: Vec<(bool, String)>,
    /// Every HTML tag (block or inline) the renderer passes through, in order: `<details>`,
    /// `</details>`, `<summary>`, ...
    pub html_tags: Vec<String>,
    /// Each table as rows of cell texts, the header first.
    pub tables: Vec<Vec<Vec<String>>>,
    /// Fenced code blocks: (info string, content).
    pub code_blocks: Vec<(String, String)>,
    pub headings: Vec<String>,
    /// List items that are not task items: their text as displayed (nested items' text too).
    pub items: Vec<String>,
    /// Every link's destination, in order.
    pub links: Vec<String>,
}

pub fn render(markdown: &str) -> Rendered {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES;
    let mut out = Rendered::default();
    // Text is collected into the innermost open container that wants it.
    let mut task: Option<(bool, String)> = None;
    let mut item_depth = 0usize;
    let mut task_depth = 0usize;
    let mut heading: Option<String> = None;
    let mut code: Option<(String, String)> = None;
    let mut cell: Option<String> = None;
    let mut row: Vec<String> = Vec::new();
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    for event in Parser::new_ext(markdown, options) {
        let text = match &event {
            Event::Text(t) | Event::Code(t) => Some(t.to_string()),
            Event::SoftBreak | Event::HardBreak => Some(" ".to_owned()),
            _ => None,
        };
        if let Some(text) = &text {
            if let Some(code) = &mut code {
                code.1.push_str(text);
                continue;
            }
            for sink in [
                task.as_mut().map(|t| &mut t.1),
                heading.as_mut(),
                cell.as_mut(),
                items.last_mut(),
            ]
            .into_iter()
            .flatten()
            {
                sink.push_str(text);
            }
        }
        match event {
            Event::Start(Tag::Item) => {
                item_depth += 1;
                items.push(String::new());
            }
            Event::Start(Tag::Link { dest_url, .. }) => out.links.push(dest_url.to_string()),
            Event::TaskListMarker(checked) => {
                task = Some((checked, String::new()));
                task_depth = item_depth;
            }
            Event::End(TagEnd::Item) => {
                let text = items.pop().unwrap_or_default();
                if item_depth == task_depth
                    && let Some(done) = task.take()
                {
                    out.tasks.push((done.0, done.1.trim().to_owned()));
                } else {
                    out.items.push(text.trim().to_owned());
                }
                item_depth -= 1;
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => out.headings.extend(heading.take()),
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(info) => info.to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                code = Some((info, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => out.code_blocks.extend(code.take()),
            Event::Html(html) | Event::InlineHtml(html) => {
                out.html_tags.extend(tags(&html));
            }
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => row.extend(cell.take().map(|c| c.trim().to_owned())),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                table.push(std::mem::take(&mut row))
            }
            Event::End(TagEnd::Table) => out.tables.push(std::mem::take(&mut table)),
            _ => {}
        }
    }
    out
}

/// The tags in a run of HTML, lower-cased, without attributes: `<details>`, `</summary>`.
fn tags(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let closing = rest.starts_with('/');
        let name: String = rest
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !name.is_empty() {
            found.push(format!("<{}{name}>", if closing { "/" } else { "" }));
        }
    }
    found
}

impl Rendered {
    /// `<details>` blocks open and close in pairs, never nested across each other.
    pub fn assert_details_balanced(&self, markdown: &str) {
        let mut open = 0i32;
        for tag in &self.html_tags {
            match tag.as_str() {
                "<details>" => open += 1,
                "</details>" => open -= 1,
                _ => {}
            }
            assert!(open >= 0, "a `</details>` closes nothing:\n{markdown}");
        }
        assert_eq!(open, 0, "a `<details>` is left open:\n{markdown}");
    }

    /// Only the tags Replan writes itself: text from elsewhere adds none.
    pub fn assert_only_tags(&self, allowed: &[&str], markdown: &str) {
        for tag in &self.html_tags {
            let name = tag.trim_start_matches("</").trim_start_matches('<');
            let name = name.trim_end_matches('>');
            assert!(
                allowed.contains(&name),
                "`{tag}` reaches the reader as HTML:\n{markdown}"
            );
        }
    }
}
