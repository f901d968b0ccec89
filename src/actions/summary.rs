//! The job summary: markdown appended to the file `$GITHUB_STEP_SUMMARY` names.

use std::io::Write;
use std::path::Path;

pub fn append(path: &Path, markdown: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut text = crate::outbound::redact(markdown);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    file.write_all(text.as_bytes())
}
