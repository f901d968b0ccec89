//! `run_command`: an allowed program with arguments (never a shell string) in the workspace, with
//! a time limit, a capped output and an environment without secrets, inside the sandbox
//! (`crate::sandbox`): `no_new_privs`, Landlock, protected paths restored afterwards.
//!
//! An allowed entry is split on whitespace (no shell quoting) and must equal the whole argv; a
//! trailing ` *` allows any further arguments (`cargo test *`).
//!
//! The command runs under a reaper of its own (`sandbox::reaper`): when it exits or times out,
//! everything it started — in the background, after `setsid`, through a double fork — is killed
//! before `run_command` returns, so the protected-path restore that follows sees the workspace as
//! the command left it, and nothing keeps writing to it afterwards.

use super::args::{Args, failed, invalid};
use super::process::{describe, run_argv};
use super::workspace::Workspace;
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::llm::ToolSpec;
use crate::sandbox::SandboxPolicy;
use crate::sandbox::protected::restoring;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
pub struct RunCommandTool {
    pub workspace: Workspace,
    /// Allowed commands, e.g. `make test` (exactly) or `cargo test *` (with any arguments).
    pub allowed: Vec<String>,
    pub timeout: Duration,
    pub output_cap: usize,
    pub sandbox: SandboxPolicy,
}

/// Whether `argv` is what the allowed `entry` names: the same words, and more only after a
/// trailing `*`.
pub fn entry_allows(entry: &str, argv: &[String]) -> bool {
    let mut words: Vec<&str> = entry.split_whitespace().collect();
    let open = words.last() == Some(&"*");
    if open {
        words.pop();
    }
    let length_ok = if open {
        argv.len() >= words.len()
    } else {
        argv.len() == words.len()
    };
    !words.is_empty() && length_ok && words.iter().zip(argv).all(|(w, a)| w == a)
}

impl RunCommandTool {
    pub fn is_allowed(&self, argv: &[String]) -> bool {
        self.allowed.iter().any(|entry| entry_allows(entry, argv))
    }

    fn allowed_list(&self) -> String {
        if self.allowed.is_empty() {
            "none".to_owned()
        } else {
            self.allowed
                .iter()
                .map(|entry| format!("`{entry}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

#[async_trait]
impl Tool for RunCommandTool {
    fn rooted_at(
        &self,
        workspace: &super::workspace::Workspace,
    ) -> Option<std::sync::Arc<dyn Tool>> {
        let mut tool = self.clone();
        tool.sandbox.workspace = workspace.root().to_path_buf();
        tool.sandbox.temp_dir = workspace.temp_dir().map(std::path::Path::to_path_buf);
        tool.workspace = workspace.clone();
        Some(std::sync::Arc::new(tool))
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_command".into(),
            description: format!(
                "Run a program in the repository (argv list, no shell). Exactly these may run \
                 (the argv must equal an entry word for word; an entry ending in `*` allows any \
                 further arguments): {}. Time limit {}s; output is capped at {} bytes (head and \
                 tail kept). Secrets are not in its environment; it runs sandboxed ({}).",
                self.allowed_list(),
                self.timeout.as_secs(),
                self.output_cap,
                if self.sandbox.network {
                    "network allowed"
                } else {
                    "no network"
                }
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                             "description": "Program and arguments, e.g. [\"cargo\", \"test\", \"--lib\"]"},
                    "cwd": {"type": "string", "description": "Folder relative to the repository root (default: the root)"},
                    "timeout_seconds": {"type": "integer", "minimum": 1,
                                        "description": "Shorter time limit than the configured one"}
                },
                "required": ["argv"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let args = Args::new("run_command", &arguments)?;
        let argv = args.string_list("argv")?;
        if !self.is_allowed(&argv) {
            return Err(ToolError::new(
                ToolErrorKind::Denied,
                format!(
                    "`{}` is not an allowed command; allowed (exact argv, `*` for further \
                     arguments): {}. Add it to `tools.allowed_commands` in the Replan \
                     configuration to allow it",
                    argv.join(" "),
                    self.allowed_list()
                ),
            ));
        }
        let cwd = self
            .workspace
            .resolve_existing(args.opt_string("cwd")?.unwrap_or("."))?;
        if !cwd.absolute.is_dir() {
            return Err(invalid(format!(
                "run_command: `{}` is not a folder",
                cwd.relative
            )));
        }
        let limit = match args.opt_u64("timeout_seconds")? {
            Some(0) => return Err(invalid("run_command: `timeout_seconds` must be at least 1")),
            Some(seconds) => self.timeout.min(Duration::from_secs(seconds)),
            None => self.timeout,
        };
        let (result, restored) = restoring(
            self.workspace.protected(),
            run(&argv, &cwd.absolute, limit, self.output_cap, &self.sandbox),
        )
        .await;
        if restored.is_empty() {
            return result;
        }
        let output = match &result {
            Ok(output) => output.content.clone(),
            Err(error) => error.message.clone(),
        };
        Err(ToolError::new(
            ToolErrorKind::Denied,
            format!(
                "`{}` changed protected paths ({}); Replan put them back. Commands may not \
                 change Replan's configuration, its local state or .git.\n{output}",
                argv.join(" "),
                restored.join(", ")
            ),
        ))
    }
}

async fn run(
    argv: &[String],
    cwd: &std::path::Path,
    limit: Duration,
    cap: usize,
    sandbox: &SandboxPolicy,
) -> ToolResult {
    let shown = argv.join(" ");
    let finished = run_argv(argv, cwd, limit, cap, sandbox).await?;
    let text = finished.output;
    match finished.status {
        None => Err(ToolError::new(
            ToolErrorKind::Timeout,
            format!(
                "`{shown}` did not finish within {}s and was killed with every process it \
                 started; output so far:\n{text}",
                limit.as_secs()
            ),
        )),
        Some(status) if status.success() => Ok(ToolOutput {
            content: format!("`{shown}` exited with status 0\n{text}"),
        }),
        Some(status) => Err(failed(format!(
            "`{shown}` failed ({})\n{text}",
            describe(status)
        ))),
    }
}
