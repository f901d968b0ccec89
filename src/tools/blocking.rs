//! Filesystem work runs on the blocking pool under a time limit so that a huge tree or a slow
//! disk cannot stall the engine.

use super::{ToolError, ToolErrorKind};
use std::time::Duration;

pub async fn run_blocking<T, F>(tool: &str, limit: Duration, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    let handle = tokio::task::spawn_blocking(work);
    match tokio::time::timeout(limit, handle).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(ToolError::new(
            ToolErrorKind::Failed,
            format!("{tool} stopped unexpectedly: {join}"),
        )),
        Err(_) => Err(ToolError::new(
            ToolErrorKind::Timeout,
            format!("{tool} did not finish within {}s", limit.as_secs()),
        )),
    }
}

/// Read a file as UTF-8 text, refusing binary content.
pub fn read_text(absolute: &std::path::Path, shown: &str) -> Result<String, ToolError> {
    let bytes = std::fs::read(absolute).map_err(|e| io_error(shown, "read", &e))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(ToolError::new(
            ToolErrorKind::Failed,
            format!("`{shown}` is a binary file; only text files can be read or edited"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::new(
            ToolErrorKind::Failed,
            format!("`{shown}` is not valid UTF-8 text"),
        )
    })
}

pub fn io_error(shown: &str, doing: &str, error: &std::io::Error) -> ToolError {
    let kind = match error.kind() {
        std::io::ErrorKind::NotFound => ToolErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => ToolErrorKind::Denied,
        _ => ToolErrorKind::Failed,
    };
    ToolError::new(kind, format!("could not {doing} `{shown}`: {error}"))
}

/// Write through a temporary file and rename, so a reader never sees half a file.
pub fn write_atomically(
    absolute: &std::path::Path,
    shown: &str,
    content: &[u8],
) -> Result<(), ToolError> {
    if let Some(parent) = absolute.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(shown, "create the folder of", &e))?;
    }
    let permissions = std::fs::metadata(absolute).ok().map(|m| m.permissions());
    let file_name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = absolute.with_file_name(format!(".{file_name}.replan-tmp"));
    std::fs::write(&temporary, content).map_err(|e| io_error(shown, "write", &e))?;
    if let Some(permissions) = permissions {
        let _ = std::fs::set_permissions(&temporary, permissions);
    }
    std::fs::rename(&temporary, absolute).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        io_error(shown, "write", &e)
    })
}
