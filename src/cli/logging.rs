//! Log set-up: `RUST_LOG` wins; otherwise `--verbose` picks the level. Logs go to stderr through a
//! redacting writer, so a secret that slips into a message never reaches the log.

use crate::app::secrets::log_redactor;
use crate::trigger::redact::RedactingWriter;
use tracing_subscriber::EnvFilter;

pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "replan=info",
        1 => "replan=debug",
        _ => "replan=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactingWriter::new(std::io::stderr, log_redactor()))
        .with_target(false)
        .try_init();
}
