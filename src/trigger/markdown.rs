//! Line-level Markdown helpers for sanitising untrusted text (fences and line ends). Which text
//! of a comment is prose a person wrote to us is decided by a CommonMark parser in
//! [`super::prose`].

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carriage_returns_end_lines() {
        assert_eq!(split_lines("a\r\nb\rc\n"), ["a", "b", "c"]);
    }

    #[test]
    fn fences_open_and_close() {
        assert_eq!(opening_fence("- ```rust"), Some(('`', 3)));
        assert_eq!(opening_fence("~~~~"), Some(('~', 4)));
        assert_eq!(opening_fence("``x``"), None);
        assert!(is_closing_fence("````  ", '`', 3));
        assert!(!is_closing_fence("```", '`', 4));
    }
}
