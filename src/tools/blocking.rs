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

/// Open a file for reading, refusing at once anything but a regular file: opening a FIFO would
/// wait for a writer (and keep the process alive after the cycle), a device may never end.
pub fn open_regular(absolute: &std::path::Path, shown: &str) -> Result<std::fs::File, ToolError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Checked again on the open file: a FIFO swapped in after a metadata check must not block.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let not_regular = || {
        ToolError::new(
            ToolErrorKind::Denied,
            format!(
                "`{shown}` is not a regular file (a FIFO, socket or device); only regular files can be read"
            ),
        )
    };
    if !std::fs::metadata(absolute)
        .map_err(|e| io_error(shown, "read", &e))?
        .is_file()
    {
        return Err(not_regular());
    }
    let file = options
        .open(absolute)
        .map_err(|e| io_error(shown, "read", &e))?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        Ok(_) => Err(not_regular()),
        Err(e) => Err(io_error(shown, "read", &e)),
    }
}

/// Read a file as UTF-8 text, refusing binary content and anything but a regular file.
pub fn read_text(absolute: &std::path::Path, shown: &str) -> Result<String, ToolError> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_regular(absolute, shown)?, &mut bytes)
        .map_err(|e| io_error(shown, "read", &e))?;
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
