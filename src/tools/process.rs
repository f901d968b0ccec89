//! Running a program (an argv, no shell) in the sandbox with a time limit, a capped output and
//! a scrubbed environment; everything it started is gone when it returns. `run_command` and the
//! checks Replan runs itself (`tools::checks`) both run their commands here.

use super::env::scrubbed_process_env;
use super::error::{ToolError, ToolErrorKind};
use super::output::CappedBuffer;
use crate::sandbox::SandboxPolicy;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How a command run by [`run_argv`] ended.
pub struct Finished {
    /// `None`: it did not finish within the limit and was killed.
    pub status: Option<std::process::ExitStatus>,
    /// Standard output and error together, capped (head and tail kept).
    pub output: String,
}

/// Run `argv` (no shell) in `cwd` inside the sandbox, with a scrubbed environment, a time limit
/// and a capped output; everything it started is gone when this returns. Shared by
/// `run_command` and the checks Replan runs itself (`tools::checks`).
pub async fn run_argv(
    argv: &[String],
    cwd: &std::path::Path,
    limit: Duration,
    cap: usize,
    sandbox: &SandboxPolicy,
) -> Result<Finished, ToolError> {
    let shown = argv.join(" ");
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(scrubbed_process_env())
        .env("TMPDIR", sandbox.temp_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = crate::sandbox::spawn(&mut command, sandbox).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ToolErrorKind::NotFound
        } else {
            ToolErrorKind::Failed
        };
        ToolError::new(kind, format!("could not start `{shown}`: {e}"))
    })?;
    let output = Arc::new(Mutex::new(CappedBuffer::new(cap)));
    let readers = [
        child.stdout().map(|s| collect(s, output.clone())),
        child.stderr().map(|s| collect(s, output.clone())),
    ];
    // Both waits return only once every process the command started is gone.
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Some(status.map_err(|e| {
            ToolError::new(ToolErrorKind::Failed, format!("waiting for `{shown}`: {e}"))
        })?),
        Err(_) => {
            let _ = child.stop_and_wait().await;
            None
        }
    };
    for reader in readers.into_iter().flatten() {
        let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    }
    let output = output.lock().expect("output lock").render();
    Ok(Finished { status, output })
}

pub fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "unknown status".to_owned(),
    }
}

fn collect(
    mut stream: impl AsyncRead + Unpin + Send + 'static,
    output: Arc<Mutex<CappedBuffer>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => output.lock().expect("output lock").push(&chunk[..n]),
            }
        }
    })
}
