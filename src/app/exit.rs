//! Exit codes users and CI scripts can rely on.

use std::process::ExitCode;

/// 0: done or waiting for a person; 1: Replan itself failed; 2: usage or configuration error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    Failure,
    Usage,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

/// An error that knows which exit code it deserves. The message names the input and the fix.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Usage,
            message: message.into(),
        }
    }

    pub fn failure(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Failure,
            message: message.into(),
        }
    }

    /// For commands whose engine has not been built yet: say so instead of faking output.
    pub fn not_available(command: &str) -> Self {
        CliError::usage(format!(
            "`replan {command}` is not available yet in this version; see `replan --help` for what is"
        ))
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}
