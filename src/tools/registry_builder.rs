//! Building the run's tool registry from the configuration, the workspace and the forge, and
//! telling the planner which tools it may plan with (and why the others are missing).

use super::apply_patch::ApplyPatchTool;
use super::detect::detect_allowed_commands;
use super::edit_file::EditFileTool;
use super::forge_tools::{OpenPullRequestTool, PostCommentTool, ReadThreadTool};
use super::git::{CommitAuthor, GitPushPublisher, Publisher};
use super::list_files::ListFilesTool;
use super::mcp::{McpServer, McpServers, McpTool, offered_name};
use super::read_file::ReadFileTool;
use super::run_command::RunCommandTool;
use super::search::SearchTool;
use super::workspace::Workspace;
use super::write_file::WriteFileTool;
use super::{Tool, ToolRegistry};
use crate::config::{McpServerConfig, ToolsConfig};
use crate::forge::Forge;
use crate::history::effects::EffectJournal;
use crate::llm::ToolSpec;
use crate::sandbox::SandboxPolicy;
use crate::sandbox::protected::restoring;
use crate::trigger::ThreadRef;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Names of the built-in tools, in the order they are described to the model.
pub const BUILT_IN_TOOLS: &[&str] = &[
    "read_file",
    "list_files",
    "search",
    "write_file",
    "edit_file",
    "apply_patch",
    "run_command",
    "read_thread",
    "post_comment",
    "open_pull_request",
];

/// Which tools the planner may use; the others with the reason they are missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolAvailability {
    pub available: Vec<ToolSpec>,
    /// (tool or `server__*` name, reason)
    pub unavailable: Vec<(String, String)>,
}

impl ToolAvailability {
    pub fn is_available(&self, name: &str) -> bool {
        self.available.iter().any(|spec| spec.name == name)
    }

    /// Why `name` cannot be used: unavailable with a reason, or unknown.
    pub fn reason_unavailable(&self, name: &str) -> Option<String> {
        if self.is_available(name) {
            return None;
        }
        Some(
            self.unavailable
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, reason)| reason.clone())
                .unwrap_or_else(|| "no such tool".to_owned()),
        )
    }
}

/// Everything the tools of a run are built from.
pub struct ToolContext {
    pub workspace: Workspace,
    pub tools: ToolsConfig,
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// The forge and the thread the run works on; without them the forge tools are unavailable.
    pub forge: Option<(Arc<dyn Forge>, ThreadRef)>,
    pub publisher: Arc<dyn Publisher>,
    pub author: CommitAuthor,
    pub base_branch: Option<String>,
    /// Where forge writes record their idempotency keys before they are made.
    pub effects: Option<Arc<dyn EffectJournal>>,
    /// The branch of the pull request Replan opened for the thread, when it did (or the branch a CI round continues).
    pub pull_request_branch: Option<String>,
    /// The `verify` section: `None` runs no checks.
    pub verify: Option<crate::config::VerifyConfig>,
}

impl ToolContext {
    pub fn new(workspace: Workspace, tools: ToolsConfig) -> Self {
        ToolContext {
            workspace,
            tools,
            mcp_servers: BTreeMap::new(),
            forge: None,
            publisher: Arc::new(GitPushPublisher),
            author: CommitAuthor::default(),
            base_branch: None,
            effects: None,
            pull_request_branch: None,
            verify: None,
        }
    }
}

/// The registry of a run, what the planner is told about it, and the MCP servers to stop at the
/// end (`mcp.shutdown().await`).
pub struct BuiltTools {
    pub registry: ToolRegistry,
    pub availability: ToolAvailability,
    pub mcp: McpServers,
}

/// Build the tools of a run. MCP servers are started here to list their tools; one that fails is
/// reported as unavailable, never fatal.
pub async fn build_registry(context: ToolContext) -> BuiltTools {
    let config = &context.tools;
    let timeout = Duration::from_secs(config.command_timeout_seconds.max(1));
    let output_cap = config.output_cap_bytes.max(256) as usize;
    let workspace = context.workspace.clone();
    let sandbox = SandboxPolicy {
        workspace: workspace.root().to_path_buf(),
        network: config.network,
        temp_dir: workspace.temp_dir().map(std::path::Path::to_path_buf),
    };
    crate::sandbox::announce(&sandbox);

    let mut candidates: Vec<(Arc<dyn Tool>, Option<String>)> = vec![
        (
            Arc::new(ReadFileTool {
                workspace: workspace.clone(),
                cap_bytes: config.read_cap_bytes.max(256) as usize,
                timeout,
            }),
            None,
        ),
        (
            Arc::new(ListFilesTool {
                workspace: workspace.clone(),
                max_results: (config.search_max_results as usize).max(1) * 5,
                timeout,
            }),
            None,
        ),
        (
            Arc::new(SearchTool {
                workspace: workspace.clone(),
                max_results: (config.search_max_results as usize).max(1),
                max_file_bytes: config.read_cap_bytes.max(1024 * 1024),
                timeout,
            }),
            None,
        ),
        (
            Arc::new(WriteFileTool {
                workspace: workspace.clone(),
                timeout,
            }),
            None,
        ),
        (
            Arc::new(EditFileTool {
                workspace: workspace.clone(),
                timeout,
            }),
            None,
        ),
        (
            Arc::new(ApplyPatchTool {
                workspace: workspace.clone(),
                timeout,
            }),
            None,
        ),
    ];

    let (allowed, detected) = if config.allowed_commands.is_empty() {
        (detect_allowed_commands(workspace.root()), true)
    } else {
        (config.allowed_commands.clone(), false)
    };
    let run_command_missing = allowed.is_empty().then(|| {
        if detected {
            "no build or test command was detected in the repository; list the commands to allow \
             in `tools.allowed_commands`"
                .to_owned()
        } else {
            "`tools.allowed_commands` is empty".to_owned()
        }
    });
    candidates.push((
        Arc::new(RunCommandTool {
            workspace: workspace.clone(),
            allowed,
            timeout,
            output_cap,
            sandbox: sandbox.clone(),
        }),
        run_command_missing,
    ));

    let mut availability = ToolAvailability::default();
    let mut registry = ToolRegistry::new();
    match &context.forge {
        Some((forge, thread)) => {
            candidates.push((
                Arc::new(ReadThreadTool {
                    forge: forge.clone(),
                    thread: *thread,
                    output_cap,
                }),
                None,
            ));
            candidates.push((
                Arc::new(PostCommentTool {
                    forge: forge.clone(),
                    thread: *thread,
                    effects: context.effects.clone(),
                }),
                None,
            ));
            candidates.push((
                Arc::new(OpenPullRequestTool {
                    forge: forge.clone(),
                    thread: *thread,
                    workspace: workspace.clone(),
                    publisher: context.publisher.clone(),
                    author: context.author.clone(),
                    default_base: context.base_branch.clone(),
                    effects: context.effects.clone(),
                    existing_branch: context.pull_request_branch.clone(),
                }),
                None,
            ));
        }
        None => {
            for name in ["read_thread", "post_comment", "open_pull_request"] {
                availability.unavailable.push((
                    name.to_owned(),
                    "no forge thread in this run (local run without an issue)".to_owned(),
                ));
            }
        }
    }

    for (tool, missing) in candidates {
        let spec = tool.spec();
        let reason = missing.or_else(|| {
            (!config.enabled.is_empty() && !config.enabled.contains(&spec.name))
                .then(|| "not listed in `tools.enabled`".to_owned())
        });
        match reason {
            Some(reason) => availability.unavailable.push((spec.name, reason)),
            None => {
                availability.available.push(spec);
                registry.register(tool);
            }
        }
    }
    for name in &config.enabled {
        if !BUILT_IN_TOOLS.contains(&name.as_str()) {
            availability.unavailable.push((
                name.clone(),
                format!(
                    "`tools.enabled` names `{name}`, which is not a built-in tool (known: {})",
                    BUILT_IN_TOOLS.join(", ")
                ),
            ));
        }
    }

    let mut servers = Vec::new();
    for (name, server_config) in &context.mcp_servers {
        let server = Arc::new(
            McpServer::new(name, server_config.clone(), workspace.root(), timeout)
                .with_network(sandbox.network),
        );
        servers.push(server.clone());
        // Starting the server runs its code in the workspace too.
        let (listed, restored) = restoring(workspace.protected(), server.list_tools()).await;
        if !restored.is_empty() {
            tracing::warn!(
                "MCP server `{name}` changed protected paths at start-up ({}); they were put back",
                restored.join(", ")
            );
        }
        match listed {
            Err(error) => availability
                .unavailable
                .push((format!("{name}__*"), error.message)),
            Ok(tools) => {
                let allowed = &server_config.allowed_tools;
                for remote in tools {
                    let offered = offered_name(name, &remote.name);
                    if !allowed.is_empty() && !allowed.contains(&remote.name) {
                        availability.unavailable.push((
                            offered,
                            format!("not in `mcp_servers.{name}.allowed_tools`"),
                        ));
                        continue;
                    }
                    let tool = Arc::new(McpTool {
                        server: server.clone(),
                        remote,
                        output_cap,
                        protected: workspace.protected().clone(),
                    });
                    availability.available.push(tool.spec());
                    registry.register(tool);
                }
            }
        }
    }

    if let Some(verify) = &context.verify {
        let set = super::checks::CheckSet::resolve(verify, workspace.root());
        tracing::info!("{}", set.describe());
        registry.set_checks(super::checks::CheckRunner {
            workspace: workspace.clone(),
            sandbox: sandbox.clone(),
            output_cap,
            set,
        });
    }

    BuiltTools {
        registry,
        availability,
        mcp: McpServers::new(servers),
    }
}
