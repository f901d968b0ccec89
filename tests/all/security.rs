//! The trust boundary between the model and the runner (issue 13): secrets never leave, commands
//! run exactly as allowed and sandboxed, and the configuration, Replan's state and `.git` stay
//! out of the model's reach.

mod canary;
mod commands;
mod file_tools;
pub(crate) mod git_metadata;
mod github_canary;
mod landlock;
mod nondumpable;
mod processes;
mod protected;
mod push_protection;

use replan::config::ToolsConfig;
use replan::tools::registry_builder::{ToolContext, build_registry};
use replan::tools::workspace::Workspace;
use replan::tools::{ToolError, ToolRegistry};
use serde_json::Value;
use std::path::Path;

/// The tools of a workspace at `dir` with `tools` settings and protected extras added by `setup`.
async fn tools_for(
    dir: &Path,
    tools: ToolsConfig,
    setup: impl FnOnce(&mut Workspace),
) -> ToolRegistry {
    let mut workspace = Workspace::new(dir).unwrap();
    setup(&mut workspace);
    build_registry(ToolContext::new(workspace, tools))
        .await
        .registry
}

/// Replan runs as this non-root user when the tests run as root, so that what root would
/// bypass (the non-dumpable process) is what is tested.
const NOBODY: u32 = 65534;
const SETPRIV: &str = "/usr/bin/setpriv";
/// `setpriv` arguments that run the program after them as [`NOBODY`].
const AS_NOBODY: [&str; 6] = [
    "--reuid",
    "65534",
    "--regid",
    "65534",
    "--clear-groups",
    "--",
];

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn allowing(commands: &[&str]) -> ToolsConfig {
    ToolsConfig {
        allowed_commands: commands.iter().map(|c| (*c).to_owned()).collect(),
        ..ToolsConfig::default()
    }
}

async fn call(registry: &ToolRegistry, tool: &str, args: Value) -> Result<String, ToolError> {
    registry.call(tool, args).await.map(|o| o.content)
}

/// A hostile model's local run: `replan run --issue 7 --title "Add hello" --workspace CHECKOUT`
/// with only PATH, isolated git, a HOME and TMPDIR of its own (kept alive by the returned
/// directories) and the scripted model at `llm`; not started yet.
fn hostile_local_run(
    llm: &crate::support::llm_server::LlmServer,
    checkout: &Path,
) -> (assert_cmd::Command, tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::TempDir::new().unwrap();
    let tmp = tempfile::TempDir::new().unwrap();
    let mut command = assert_cmd::Command::cargo_bin("replan").unwrap();
    command.env_clear();
    if let Ok(path) = std::env::var("PATH") {
        command.env("PATH", path);
    }
    command
        .envs(crate::support::git::isolated_git_env())
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        .env("RUST_LOG", "replan=info")
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm.openai_base())
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
        .args([
            "run",
            "--issue",
            "7",
            "--title",
            "Add hello",
            "--body",
            "Add hello.md",
        ])
        .arg("--workspace")
        .arg(checkout)
        .timeout(std::time::Duration::from_secs(120));
    (command, home, tmp)
}
