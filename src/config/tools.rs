//! `tools` and `mcp_servers` — what the executing agent may call.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Tool names to offer; empty = all built-in tools.
    pub enabled: Vec<String>,
    /// Commands the shell tool may run; empty = auto-detect from the repository (build/test tools).
    pub allowed_commands: Vec<String>,
    pub command_timeout_seconds: u64,
    /// Command output kept for the LLM, in bytes; the rest is cut with a marker.
    pub output_cap_bytes: u64,
    /// Largest file read returned to the LLM, in bytes.
    pub read_cap_bytes: u64,
    pub search_max_results: u32,
    /// Whether commands and MCP servers may open TCP connections (enforced with Landlock).
    pub network: bool,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            enabled: Vec::new(),
            allowed_commands: Vec::new(),
            command_timeout_seconds: 300,
            output_cap_bytes: 65_536,
            read_cap_bytes: 262_144,
            search_max_results: 200,
            network: false,
        }
    }
}

/// One entry of `mcp_servers:` (keyed by server name): a stdio MCP server to start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Tools of this server to offer; empty = all.
    pub allowed_tools: Vec<String>,
    pub startup_timeout_seconds: u64,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            allowed_tools: Vec::new(),
            startup_timeout_seconds: 30,
        }
    }
}
