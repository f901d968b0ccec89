//! Text from elsewhere (the model's task ids and descriptions, its questions) put into a Markdown
//! comment so that it displays exactly as written, on one line: no emphasis, link, image, code
//! span, HTML, entity, heading or list item of its own, whatever it holds.

/// `text` on one line (whitespace runs, newlines included, as one space) with every character
/// that Markdown or HTML would read escaped. Intraword `_` (`task_1`) needs no escape and
/// keeps the source readable.
pub fn inline(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let text = words.join(" ");
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let escape = match c {
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '!' | '~' | '|' | '#' => true,
            '_' => {
                !(before.is_some_and(char::is_alphanumeric)
                    && after.is_some_and(char::is_alphanumeric))
            }
            // A line start that would open a list item or a setext underline.
            '-' | '+' | '=' => i == 0,
            '.' | ')' => chars[..i].iter().all(char::is_ascii_digit) && i > 0,
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::inline;

    #[test]
    fn markup_is_escaped_and_plain_words_stay_as_they_are() {
        assert_eq!(inline("Write hello.md\nnow"), "Write hello.md now");
        assert_eq!(inline("task_1"), "task_1");
        assert_eq!(inline("_under_ *b*"), "\\_under\\_ \\*b\\*");
        assert_eq!(inline("</details>"), "\\</details\\>");
        assert_eq!(inline("- [x] y"), "\\- \\[x\\] y");
        assert_eq!(inline("1. one"), "1\\. one");
    }
}
