//! The files a stage leaves for later jobs (`--matrix-out`, `--pipeline-out`).

use crate::app::exit::CliError;
use std::path::Path;

/// Writes a file a later job reads, naming the flag that chose its path when it cannot.
pub(super) fn write_file(path: &Path, text: &str, flag: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(path, text).map_err(|e| {
        CliError::failure(format!(
            "{flag} {}: cannot write the file: {e}",
            path.display()
        ))
    })
}
