//! Log set-up: `RUST_LOG` wins; otherwise `--verbose` picks the level. Logs go to stderr through a
//! redacting writer, so a secret that slips into a message never reaches the log.

use crate::outbound::redactor::RedactingWriter;
use tracing_subscriber::EnvFilter;

pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "replan=info",
        1 => "replan=debug",
        _ => "replan=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let colour = use_colour(
        std::env::var("NO_COLOR").ok().as_deref(),
        std::env::var("CLICOLOR_FORCE").ok().as_deref(),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(RedactingWriter::new(
            std::io::stderr,
            crate::outbound::secrets(),
        ))
        .with_target(false)
        .try_init();
}

/// Colours only on a terminal: a non-empty `NO_COLOR` turns them off, a `CLICOLOR_FORCE` other
/// than `0` turns them on anywhere (<https://no-color.org>, <https://bixense.com/clicolors/>).
pub fn use_colour(no_color: Option<&str>, clicolor_force: Option<&str>, is_terminal: bool) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if clicolor_force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    is_terminal
}

#[cfg(test)]
mod tests {
    use super::use_colour;

    #[test]
    fn colours_follow_the_terminal_no_color_and_clicolor_force() {
        assert!(use_colour(None, None, true));
        assert!(!use_colour(None, None, false));
        assert!(!use_colour(Some("1"), None, true));
        assert!(!use_colour(Some("1"), Some("1"), true));
        assert!(use_colour(Some(""), None, true));
        assert!(use_colour(None, Some("1"), false));
        assert!(!use_colour(None, Some("0"), false));
    }
}
