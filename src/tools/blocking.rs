//! Filesystem work runs on the blocking pool under a time limit so that a huge tree or a slow
//! disk cannot stall the engine.

use super::error::{ToolError, ToolErrorKind};
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

pub fn io_error(shown: &str, doing: &str, error: &std::io::Error) -> ToolError {
    let kind = match error.kind() {
        std::io::ErrorKind::NotFound => ToolErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => ToolErrorKind::Denied,
        _ => ToolErrorKind::Failed,
    };
    ToolError::new(kind, format!("could not {doing} `{shown}`: {error}"))
}
