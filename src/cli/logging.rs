//! Log set-up: `RUST_LOG` wins; otherwise `--verbose` picks the level. Logs go to stderr through a
//! redacting writer, so a secret that slips into a message never reaches the log.

use crate::trigger::redact::{RedactingWriter, Redactor, SharedRedactor};
use std::sync::OnceLock;
use tracing_subscriber::EnvFilter;

static REDACTOR: OnceLock<SharedRedactor> = OnceLock::new();

/// Names of environment variables whose values are secrets by convention.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
    ]
    .iter()
    .any(|marker| upper.contains(marker))
}

/// The process-wide redactor used by logging; later stages add the secrets they learn about.
pub fn redactor() -> &'static SharedRedactor {
    REDACTOR.get_or_init(|| {
        let secrets = std::env::vars()
            .filter(|(name, value)| is_secret_name(name) && !value.is_empty())
            .map(|(_, value)| value);
        SharedRedactor::new(Redactor::new(secrets))
    })
}

pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "replan=info",
        1 => "replan=debug",
        _ => "replan=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactingWriter::new(std::io::stderr, redactor().clone()))
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::is_secret_name;

    #[test]
    fn secret_names_are_recognised() {
        for name in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "INPUT_ANTHROPIC_API_KEY",
            "GITLAB_TOKEN",
            "CI_JOB_TOKEN",
            "db_password",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "GITHUB_WORKSPACE", "RUST_LOG"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
