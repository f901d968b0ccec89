//! A push to a repository on this machine: `git receive-pack <path>` spoken to over its stdin
//! and stdout, as `git push` does through a shell, without `git push`, the shell and
//! `git pack-objects` (three processes of the save's path).

use super::pkt_line;
use super::receive_pack::{Advertised, Update, check_report, request};
use std::io::{BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Variables that describe the pushing repository, which `git push` removes before it starts
/// the receiving side (git's `local_repo_env`).
const LOCAL_REPO_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// A `git receive-pack` that has advertised its refs and waits for the push's commands: started
/// before the commit it will take exists, so its start is not on the save's path. Dropped
/// unused, it is told there is nothing to push (a flush) and reaped.
pub struct Receiving {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    advertised: Advertised,
}

/// Start `git receive-pack` for the repository at `path` and read its advertisement (blocking).
pub fn open(path: &Path) -> Result<Receiving, String> {
    let mut command = Command::new("git");
    command
        .arg("receive-pack")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for name in LOCAL_REPO_ENV {
        command.env_remove(name);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start `git receive-pack`: {e}"))?;
    let (input, output) = match (child.stdin.take(), child.stdout.take()) {
        (Some(input), Some(output)) => (input, BufReader::new(output)),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return Err("`git receive-pack` has no pipes".to_owned());
        }
    };
    let mut receiving = Receiving {
        child,
        input: Some(input),
        output,
        advertised: Advertised::default(),
    };
    let lines = pkt_line::read_until_flush(&mut receiving.output)
        .ok_or("`git receive-pack` ended before its advertisement")?;
    receiving.advertised = Advertised::parse(&lines)?;
    Ok(receiving)
}

impl Receiving {
    /// Send `update` and `pack`, and read the report (blocking).
    pub fn push(mut self, update: &Update, pack: &[u8]) -> Result<(), String> {
        let mut input = self.input.take().ok_or("the push was sent already")?;
        let outcome = (|| {
            let sent = request(&self.advertised, update, pack);
            // A flush with no command ends the session when nothing is sent.
            let bytes = sent.as_deref().unwrap_or(pkt_line::FLUSH);
            input
                .write_all(bytes)
                .map_err(|e| format!("`git receive-pack` stopped reading: {e}"))?;
            drop(input);
            sent?;
            let report = pkt_line::read_until_flush(&mut self.output)
                .ok_or("`git receive-pack` ended before its report")?;
            check_report(&report, update.branch)
        })();
        let status = self.child.wait();
        outcome?;
        match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("`git receive-pack` exited with {status}")),
            Err(e) => Err(format!("`git receive-pack` could not be waited for: {e}")),
        }
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        if let Some(mut input) = self.input.take() {
            // Nothing to push: receive-pack ends at once on a flush.
            let _ = input.write_all(pkt_line::FLUSH);
        }
        let _ = self.child.wait();
    }
}
