//! Which lines of a comment are prose a person wrote to us.
//!
//! Commands and mentions count only in prose: text inside fenced or indented code, block quotes
//! and HTML comments is somebody else's words (or hidden), so it must never steer Replan.
//! The scanner is deliberately conservative: when a construct is ambiguous it is treated as code.

/// One prose line. `masked` has the same byte length as `raw`, with inline code spans blanked
/// out, so offsets found in `masked` can slice `raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProseLine {
    pub raw: String,
    pub masked: String,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Prose,
    Fence { marker: char, len: usize },
    HtmlComment,
}

/// Splits `text` into lines on `\n`, `\r\n` and a lone `\r` (all three end a line in CommonMark).
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The prose lines of `body`, in order.
pub(crate) fn prose_lines(body: &str) -> Vec<ProseLine> {
    let mut state = State::Prose;
    let mut out = Vec::new();
    for line in split_lines(body) {
        match state {
            State::Fence { marker, len } => {
                if is_closing_fence(line, marker, len) {
                    state = State::Prose;
                }
            }
            State::HtmlComment => {
                if line.contains("-->") {
                    state = State::Prose;
                }
            }
            State::Prose => {
                if let Some((marker, len)) = opening_fence(line) {
                    state = State::Fence { marker, len };
                    continue;
                }
                if is_indented_code(line) || is_block_quote(line) {
                    continue;
                }
                let (raw, unterminated) = strip_html_comments(line);
                if unterminated {
                    state = State::HtmlComment;
                }
                let masked = mask_inline_code(&raw);
                out.push(ProseLine { raw, masked });
            }
        }
    }
    out
}

/// A fence opener: any indentation (stricter CommonMark would treat 4+ spaces as indented code,
/// but treating more text as code is the safe side), an optional list marker, then 3+ backticks
/// or tildes.
pub(crate) fn opening_fence(line: &str) -> Option<(char, usize)> {
    let content = strip_list_marker(line.trim_start());
    let marker = content.chars().next()?;
    if marker != '`' && marker != '~' {
        return None;
    }
    let len = content.chars().take_while(|&c| c == marker).count();
    (len >= 3).then_some((marker, len))
}

/// A closing fence: same character, at least as long as the opener, nothing but spaces after.
pub(crate) fn is_closing_fence(line: &str, marker: char, len: usize) -> bool {
    let content = line.trim();
    let run = content.chars().take_while(|&c| c == marker).count();
    run >= len && content.chars().skip(run).all(char::is_whitespace)
}

fn strip_list_marker(text: &str) -> &str {
    let after_marker = match text.strip_prefix(['-', '*', '+']) {
        Some(rest) => Some(rest),
        None => {
            let digits = text.chars().take_while(char::is_ascii_digit).count();
            if (1..=9).contains(&digits) {
                text[digits..].strip_prefix(['.', ')'])
            } else {
                None
            }
        }
    };
    match after_marker {
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim_start(),
        _ => text,
    }
}

fn is_indented_code(line: &str) -> bool {
    if line.trim().is_empty() {
        return false;
    }
    let mut width = 0;
    for c in line.chars() {
        match c {
            ' ' => width += 1,
            '\t' => width += 4,
            _ => break,
        }
        if width >= 4 {
            return true;
        }
    }
    false
}

fn is_block_quote(line: &str) -> bool {
    line.trim_start().starts_with('>')
}

/// Removes `<!-- ... -->` spans from one line. Returns whether a comment was left open.
fn strip_html_comments(line: &str) -> (String, bool) {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        // `<!-->` and `<!--->` are complete (empty) comments, so look for the end from `<!`+2.
        match rest[start + 2..].find("-->") {
            Some(end) => rest = &rest[start + 2 + end + 3..],
            None => return (out, true),
        }
    }
    out.push_str(rest);
    (out, false)
}

/// Blanks inline code spans (a run of N backticks up to the next run of exactly N).
/// Unmatched backticks are literal, as in CommonMark. Spans are matched within one line.
pub(crate) fn mask_inline_code(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut masked = line.to_owned().into_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = run_len(bytes, i);
        let mut j = i + open;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let n = run_len(bytes, j);
                if n == open {
                    close = Some(j);
                    break;
                }
                j += n;
            } else {
                j += 1;
            }
        }
        match close {
            Some(c) => {
                // Every byte, including the bytes of multi-byte characters, becomes a space:
                // the result stays valid UTF-8 and keeps its byte offsets.
                masked[i..c + open].fill(b' ');
                i = c + open;
            }
            None => i += open,
        }
    }
    String::from_utf8(masked).expect("only whole code spans are replaced by ASCII spaces")
}

fn run_len(bytes: &[u8], start: usize) -> usize {
    bytes[start..].iter().take_while(|&&b| b == b'`').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_lines(body: &str) -> Vec<String> {
        prose_lines(body).into_iter().map(|l| l.raw).collect()
    }

    #[test]
    fn fenced_blocks_with_info_strings_and_tildes_are_skipped() {
        let body = "a\n```rust\n/approve\n```\nb\n~~~~ text\n/stop\n~~~\n/still code\n~~~~\nc";
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
        assert_eq!(raw_lines("- ```\n  /approve\n  ```\nafter"), ["after"]);
    }

    #[test]
    fn quotes_indented_code_and_html_comments_are_skipped() {
        let body =
            "> /approve\n    /stop\n\t/status\n<!--\n/resume\n-->\nok <!-- hidden --> visible";
        assert_eq!(raw_lines(body), ["", "ok  visible"]);
    }

    #[test]
    fn inline_code_is_masked_without_moving_offsets() {
        let line = "say `/approve ü` now";
        let masked = mask_inline_code(line);
        assert_eq!(masked.len(), line.len());
        assert!(masked.starts_with("say ") && masked.ends_with(" now"));
        assert!(
            masked["say ".len()..masked.len() - " now".len()]
                .bytes()
                .all(|b| b == b' ')
        );
    }

    #[test]
    fn unmatched_backticks_are_literal() {
        assert_eq!(mask_inline_code("a ``b` c"), "a ``b` c");
    }

    #[test]
    fn carriage_returns_end_lines() {
        assert_eq!(split_lines("a\r\nb\rc\n"), ["a", "b", "c"]);
    }
}
