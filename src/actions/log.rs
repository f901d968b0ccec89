//! Workflow commands on stdout: `::group::`, `::error::`, `::warning::`, `::add-mask::`.
//! Outside Actions they are plain text a person can still read.

use crate::outbound::Redactor;

/// The escaping the runner undoes in a command's message.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The escaping of a property value (`title=...`): also `:` and `,`.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

pub fn group_start(title: &str) -> String {
    format!("::group::{}", escape_data(title))
}

pub fn group_end() -> &'static str {
    "::endgroup::"
}

pub fn error(title: Option<&str>, message: &str) -> String {
    annotation("error", title, message)
}

pub fn warning(title: Option<&str>, message: &str) -> String {
    annotation("warning", title, message)
}

fn annotation(level: &str, title: Option<&str>, message: &str) -> String {
    match title {
        Some(title) => format!(
            "::{level} title={}::{}",
            escape_property(title),
            escape_data(message)
        ),
        None => format!("::{level}::{}", escape_data(message)),
    }
}

/// Writes workflow commands to stdout when running in Actions; elsewhere groups are dropped
/// and annotations become plain lines on stderr.
#[derive(Debug, Clone, Copy)]
pub struct Workflow {
    pub enabled: bool,
}

impl Workflow {
    pub fn detect(env: &std::collections::BTreeMap<String, String>) -> Self {
        Workflow {
            enabled: env.get("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
        }
    }

    /// `::add-mask::` for every known secret, so the runner masks them in all later output.
    pub fn mask(&self, redactor: &Redactor) {
        if self.enabled {
            for line in redactor.mask_commands() {
                crate::outbound::stdio::write_unredacted_stdout_line(&line);
            }
        }
    }

    pub fn group(&self, title: &str) {
        if self.enabled {
            println!("{}", group_start(title));
        }
    }

    pub fn end_group(&self) {
        if self.enabled {
            println!("{}", group_end());
        }
    }

    pub fn error(&self, message: &str) {
        if self.enabled {
            println!("{}", error(Some("Replan"), message));
        } else {
            eprintln!("error: {message}");
        }
    }

    /// An error annotation in Actions only; for errors that are also returned to `main`, which
    /// prints them, so a terminal shows each error once.
    pub fn annotate_error(&self, message: &str) {
        if self.enabled {
            println!("{}", error(Some("Replan"), message));
        }
    }

    pub fn warning(&self, message: &str) {
        if self.enabled {
            println!("{}", warning(Some("Replan"), message));
        } else {
            eprintln!("warning: {message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_escaped_so_one_annotation_stays_one_line() {
        assert_eq!(
            error(Some("Replan: run"), "50% done\r\nnext"),
            "::error title=Replan%3A run::50%25 done%0D%0Anext"
        );
        assert_eq!(group_start("Plan\nv2"), "::group::Plan%0Av2");
        assert_eq!(warning(None, "x"), "::warning::x");
    }
}
