//! MCP servers over stdio (`mcp_servers:` in the configuration), started on demand, their tools
//! offered as `<server>__<tool>`, calls forwarded, stopped at the end of the run.
//!
//! Each server runs under a reaper (`sandbox::reaper`) like a command: stopping it (at the end of
//! the run), its death and dropping it kill every process it started too.
//!
//! A server that dies is reported with its name and the tail of its stderr, and stays down for the
//! rest of the run: later calls fail at once instead of hanging on a dead pipe.

use super::env::scrubbed_process_env;
use super::output::{CappedBuffer, cap_text};
use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use crate::config::McpServerConfig;
use crate::llm::ToolSpec;
use crate::sandbox::protected::{ProtectedPaths, restoring};
use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2048;

/// One configured server and its connection, if started.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    workdir: PathBuf,
    call_timeout: Duration,
    /// `tools.network`: the server's sandbox allows TCP.
    network: bool,
    state: tokio::sync::Mutex<State>,
    stderr: Arc<Mutex<CappedBuffer>>,
}

enum State {
    NotStarted,
    Running {
        service: RunningService<RoleClient, ()>,
        /// Boxed: the other states are small.
        process: Box<crate::sandbox::Reaped>,
        tools: Vec<RemoteTool>,
        stderr_reader: Option<tokio::task::JoinHandle<()>>,
    },
    Down(String),
    Stopped,
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl McpServer {
    pub fn new(
        name: &str,
        config: McpServerConfig,
        workdir: impl Into<PathBuf>,
        call_timeout: Duration,
    ) -> Self {
        McpServer {
            name: name.to_owned(),
            config,
            workdir: workdir.into(),
            call_timeout,
            network: false,
            state: tokio::sync::Mutex::new(State::NotStarted),
            stderr: Arc::new(Mutex::new(CappedBuffer::new(STDERR_TAIL_BYTES))),
        }
    }

    /// Lets the server open TCP connections (`tools.network: true`).
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The server's tools, starting it if needed.
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, ToolError> {
        let mut state = self.state.lock().await;
        self.ensure_started(&mut state).await?;
        match &*state {
            State::Running { tools, .. } => Ok(tools.clone()),
            _ => unreachable!("ensure_started leaves the server running or fails"),
        }
    }

    /// Whether the server is up (false before start, after a crash and after stop).
    pub async fn is_running(&self) -> bool {
        matches!(*self.state.lock().await, State::Running { .. })
    }

    /// Call `tool` with `arguments`, within the call time limit.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, ToolError> {
        let peer: Peer<RoleClient> = {
            let mut state = self.state.lock().await;
            self.ensure_started(&mut state).await?;
            match &*state {
                State::Running { service, .. } => service.peer().clone(),
                _ => unreachable!("ensure_started leaves the server running or fails"),
            }
        };
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    format!("arguments of `{tool}` must be a JSON object, got {other}"),
                ));
            }
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let outcome = tokio::time::timeout(self.call_timeout, peer.call_tool_once(params)).await;
        match outcome {
            Err(_) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "MCP server `{}` did not answer the call to `{tool}` within {}s",
                    self.name,
                    self.call_timeout.as_secs()
                ),
            )),
            Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
            Ok(Ok(_)) => Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "MCP server `{}` asked for interactive input or a background task for \
                     `{tool}`, which Replan does not support",
                    self.name
                ),
            )),
            Ok(Err(ServiceError::McpError(error))) => Err(ToolError::new(
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    ToolErrorKind::InvalidArguments
                } else {
                    ToolErrorKind::Failed
                },
                format!(
                    "MCP server `{}` rejected the call to `{tool}`: {}",
                    self.name, error.message
                ),
            )),
            Ok(Err(error)) => Err(self.went_down(tool, &error).await),
        }
    }

    /// Stop the server (closing its stdin, then signalling it); it cannot be used afterwards.
    pub async fn stop(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::Stopped);
        if let State::Running {
            service, process, ..
        } = previous
        {
            let _ = tokio::time::timeout(Duration::from_secs(10), service.cancel()).await;
            end(*process, EXIT_GRACE).await;
        }
    }

    async fn ensure_started(&self, state: &mut State) -> Result<(), ToolError> {
        match state {
            State::Running { .. } => return Ok(()),
            State::Down(reason) => {
                return Err(ToolError::new(
                    ToolErrorKind::Failed,
                    format!("MCP server `{}` is down: {reason}", self.name),
                ));
            }
            State::Stopped => {
                return Err(ToolError::new(
                    ToolErrorKind::Failed,
                    format!(
                        "MCP server `{}` was stopped at the end of the run",
                        self.name
                    ),
                ));
            }
            State::NotStarted => {}
        }
        match self.start().await {
            Ok(running) => {
                *state = running;
                Ok(())
            }
            Err(reason) => {
                *state = State::Down(reason.clone());
                Err(ToolError::new(
                    ToolErrorKind::Failed,
                    format!("MCP server `{}` could not be started: {reason}", self.name),
                ))
            }
        }
    }

    async fn start(&self) -> Result<State, String> {
        if self.config.command.trim().is_empty() {
            return Err(format!(
                "`mcp_servers.{}.command` is empty; set the program to run",
                self.name
            ));
        }
        let mut command = tokio::process::Command::new(&self.config.command);
        command
            .args(&self.config.args)
            .current_dir(&self.workdir)
            .env_clear()
            .envs(scrubbed_process_env())
            .envs(expand_env(&self.config.env)?)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // The same sandbox and reaper as commands, started in the workspace root. rmcp's own
        // child process transport would SIGKILL the server alone; rmcp gets its pipes instead.
        let mut process = crate::sandbox::spawn(
            &mut command,
            &crate::sandbox::SandboxPolicy {
                workspace: self.workdir.clone(),
                network: self.network,
                temp_dir: None,
            },
        )
        .map_err(|e| format!("cannot run `{}`: {e}", self.config.command))?;
        let stderr = process.stderr();
        let (Some(stdout), Some(stdin)) = (process.stdout(), process.stdin()) else {
            end(process, Duration::ZERO).await;
            return Err("its standard input and output could not be connected".to_owned());
        };
        let transport = (stdout, stdin);
        let stderr_reader = stderr.map(|mut stream| {
            let sink = self.stderr.clone();
            tokio::spawn(async move {
                let mut chunk = vec![0u8; 4096];
                while let Ok(n) = stream.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    sink.lock().expect("stderr lock").push(&chunk[..n]);
                }
            })
        });
        let limit = Duration::from_secs(self.config.startup_timeout_seconds.max(1));
        let service = match tokio::time::timeout(limit, ().serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                end(process, Duration::ZERO).await;
                return Err(format!(
                    "the MCP handshake failed: {error}{}",
                    self.stderr_tail(stderr_reader).await
                ));
            }
            Err(_) => {
                end(process, Duration::ZERO).await;
                return Err(format!(
                    "no MCP handshake within {}s (mcp_servers.{}.startup_timeout_seconds){}",
                    limit.as_secs(),
                    self.name,
                    self.stderr_tail(stderr_reader).await
                ));
            }
        };
        let listed = tokio::time::timeout(limit, service.peer().list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => {
                let _ = service.cancel().await;
                end(process, Duration::ZERO).await;
                return Err(format!(
                    "listing its tools failed: {error}{}",
                    self.stderr_tail(stderr_reader).await
                ));
            }
            Err(_) => {
                let _ = service.cancel().await;
                end(process, Duration::ZERO).await;
                return Err(format!(
                    "listing its tools took more than {}s",
                    limit.as_secs()
                ));
            }
        };
        let tools = tools
            .into_iter()
            .filter_map(|tool| {
                let value = serde_json::to_value(&tool).ok()?;
                Some(RemoteTool {
                    name: value.get("name")?.as_str()?.to_owned(),
                    description: value
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    input_schema: value
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                })
            })
            .collect();
        Ok(State::Running {
            service,
            process: Box::new(process),
            tools,
            stderr_reader,
        })
    }

    /// Record that the server died during a call to `tool`, and say so.
    async fn went_down(&self, tool: &str, error: &ServiceError) -> ToolError {
        let mut state = self.state.lock().await;
        let reader = match std::mem::replace(&mut *state, State::NotStarted) {
            State::Running {
                service,
                process,
                stderr_reader,
                ..
            } => {
                let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
                end(*process, EXIT_GRACE).await;
                stderr_reader
            }
            other => {
                *state = other;
                None
            }
        };
        let reason = format!(
            "it stopped during the call to `{tool}` ({error}){}",
            self.stderr_tail(reader).await
        );
        if matches!(*state, State::NotStarted) {
            *state = State::Down(reason.clone());
        }
        ToolError::new(
            ToolErrorKind::Failed,
            format!("MCP server `{}` failed: {reason}", self.name),
        )
    }

    async fn stderr_tail(&self, reader: Option<tokio::task::JoinHandle<()>>) -> String {
        if let Some(reader) = reader {
            // The pipe closes when the process exits; wait briefly for its last words.
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        let tail = self.stderr.lock().expect("stderr lock").render();
        let tail = tail.trim();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        }
    }
}

/// How long a server whose input is closed may take to exit on its own.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Ends a server whose transport is closed: it has `grace` to exit on its own (end of input),
/// then its reaper is told to stop; either way every process it started is gone on return.
async fn end(mut process: crate::sandbox::Reaped, grace: Duration) {
    if tokio::time::timeout(grace, process.wait()).await.is_err() {
        let _ = process.stop_and_wait().await;
    }
}

/// `${NAME}` values are taken from Replan's environment, so secrets need not be in the file.
fn expand_env(
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, String> {
    env.iter()
        .map(|(name, value)| {
            let expanded = match value
                .strip_prefix("${")
                .and_then(|rest| rest.strip_suffix('}'))
            {
                Some(source) => std::env::var(source).map_err(|_| {
                    format!("env `{name}` refers to `${{{source}}}`, which is not set")
                })?,
                None => value.clone(),
            };
            Ok((name.clone(), expanded))
        })
        .collect()
}

/// The name offered to the model: `<server>__<tool>`, limited to what providers accept.
pub fn offered_name(server: &str, tool: &str) -> String {
    let name: String = format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.chars().take(64).collect()
}

/// One tool of one server, as a `Tool` of the registry.
pub struct McpTool {
    pub server: Arc<McpServer>,
    pub remote: RemoteTool,
    pub output_cap: usize,
    /// Put back after each call: the server runs in the workspace like a command.
    pub protected: ProtectedPaths,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: offered_name(self.server.name(), &self.remote.name),
            description: format!(
                "[MCP server `{}`] {}",
                self.server.name(),
                self.remote.description
            ),
            input_schema: self.remote.input_schema.clone(),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let (result, restored) = restoring(
            &self.protected,
            self.server.call(&self.remote.name, arguments),
        )
        .await;
        if !restored.is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::Denied,
                format!(
                    "MCP tool `{}` changed protected paths ({}); Replan put them back",
                    offered_name(self.server.name(), &self.remote.name),
                    restored.join(", ")
                ),
            ));
        }
        let result = result?;
        let text = render_result(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "MCP tool `{}` reported an error: {}",
                    offered_name(self.server.name(), &self.remote.name),
                    cap_text(&text, self.output_cap)
                ),
            ));
        }
        Ok(ToolOutput {
            content: cap_text(&text, self.output_cap),
        })
    }
}

/// Text content as is; other content (images, resources) as a short description.
fn render_result(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        let value = serde_json::to_value(block).unwrap_or(Value::Null);
        match value.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(
                value
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            Some(kind) => parts.push(format!(
                "[{kind} content{}]",
                value
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            )),
            None => parts.push(value.to_string()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// The configured servers of a run; stop them all at the end.
#[derive(Clone, Default)]
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
}

impl McpServers {
    pub fn new(servers: Vec<Arc<McpServer>>) -> Self {
        McpServers { servers }
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.stop().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_names_are_provider_safe() {
        assert_eq!(
            offered_name("git hub", "create.issue"),
            "git_hub__create_issue"
        );
        assert_eq!(offered_name("s", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn env_references_are_expanded_or_named_when_missing() {
        let env = std::collections::BTreeMap::from([(
            "A".to_owned(),
            "${REPLAN_SURELY_UNSET_VARIABLE}".to_owned(),
        )]);
        let error = expand_env(&env).unwrap_err();
        assert!(error.contains("REPLAN_SURELY_UNSET_VARIABLE"), "{error}");
        let plain = std::collections::BTreeMap::from([("B".to_owned(), "1".to_owned())]);
        assert_eq!(expand_env(&plain).unwrap(), vec![("B".into(), "1".into())]);
    }
}
