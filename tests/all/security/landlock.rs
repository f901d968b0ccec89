//! Landlock around commands: writes only in the workspace and the temp dir, no TCP unless
//! `tools.network: true`. Skipped, with the reason printed, where the kernel has no Landlock.

use super::{allowing, call, tools_for};
use replan::config::ToolsConfig;
use replan::sandbox::landlock::kernel_abi;
use serde_json::json;

/// Whether the kernel offers Landlock ABI `min`; prints why the test is skipped otherwise.
fn landlock_at_least(min: i32, test: &str) -> bool {
    let abi = kernel_abi();
    if abi < min {
        eprintln!(
            "skipped {test}: it needs Landlock ABI {min}, this kernel offers {}",
            if abi == 0 {
                "none".to_owned()
            } else {
                abi.to_string()
            }
        );
        return false;
    }
    true
}

/// A directory outside the workspace and outside the temp dir the sandbox lets commands write
/// to: the cargo target's own temp dir, unless the checkout itself lies in the temp dir (a clone
/// in /tmp), then /var/tmp or the home directory.
fn outside_dir() -> tempfile::TempDir {
    let temp = std::env::temp_dir();
    let temp = temp.canonicalize().unwrap_or(temp);
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some("/var/tmp".into()),
        std::env::var_os("HOME").map(Into::into),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| !dir.starts_with(&temp))
        .find_map(|dir| tempfile::tempdir_in(dir).ok())
        .unwrap_or_else(|| {
            panic!(
                "no writable directory outside the temp dir {} to test the sandbox with: \
                 set TMPDIR to a directory of its own",
                temp.display()
            )
        })
}

#[tokio::test]
async fn a_command_writes_in_the_workspace_and_temp_dir_only() {
    if !landlock_at_least(1, "a_command_writes_in_the_workspace_and_temp_dir_only") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let escaped = outside.path().join("escaped.txt");
    let in_temp = std::env::temp_dir().join(format!("replan-probe-{}", fastrand::u64(..)));
    let tools = tools_for(dir.path(), allowing(&["sh -c *"]), |_| {}).await;
    let script = format!(
        "echo x > {}; echo inside > new-at-root.txt; echo tmp > {}; true",
        escaped.display(),
        in_temp.display()
    );
    let said = call(&tools, "run_command", json!({"argv": ["sh", "-c", script]}))
        .await
        .unwrap();
    assert!(
        !escaped.exists(),
        "a write outside the workspace went through: {said}"
    );
    assert!(said.contains("ermission denied"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new-at-root.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(std::fs::read_to_string(&in_temp).unwrap(), "tmp\n");
    let _ = std::fs::remove_file(&in_temp);
}

fn bash() -> Option<String> {
    ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| (*p).to_owned())
}

async fn connect_from_a_command(network: bool) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let bash = bash().unwrap();
    let tools = tools_for(
        dir.path(),
        ToolsConfig {
            network,
            ..allowing(&[&format!("{bash} -c *")])
        },
        |_| {},
    )
    .await;
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo connected");
    let said = match call(&tools, "run_command", json!({"argv": [bash, "-c", script]})).await {
        Ok(text) => text,
        Err(error) => error.message,
    };
    let accepted = listener.accept().is_ok();
    (said, accepted)
}

#[tokio::test]
async fn a_command_cannot_connect_unless_the_network_is_allowed() {
    if !landlock_at_least(4, "a_command_cannot_connect_unless_the_network_is_allowed") {
        return;
    }
    if bash().is_none() {
        eprintln!(
            "skipped a_command_cannot_connect_unless_the_network_is_allowed: no bash for /dev/tcp"
        );
        return;
    }
    let (said, accepted) = connect_from_a_command(false).await;
    assert!(!accepted && !said.contains("connected\n"), "{said}");
    let (said, accepted) = connect_from_a_command(true).await;
    assert!(
        accepted && said.contains("connected"),
        "with tools.network: true: {said}"
    );
}

#[tokio::test]
async fn an_mcp_server_starts_in_the_workspace_under_the_same_sandbox() {
    if !landlock_at_least(
        1,
        "an_mcp_server_starts_in_the_workspace_under_the_same_sandbox",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let escaped = outside.path().join("escaped.txt");
    // A wrapper that tries to write outside, marks where it started, then serves MCP (from a
    // copy in the workspace: the sandbox lets it execute only from readable places).
    let fixture = dir.path().join("mcp-fixture");
    std::fs::copy(crate::tools::fixture_server(), &fixture).unwrap();
    let server = replan::config::McpServerConfig {
        command: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            format!(
                "echo x > {}; pwd > started-in.txt; exec {}",
                escaped.display(),
                fixture.display()
            ),
        ],
        ..replan::config::McpServerConfig::default()
    };
    let mut context = replan::tools::registry_builder::ToolContext::new(
        replan::tools::workspace::Workspace::new(dir.path()).unwrap(),
        allowing(&[]),
    );
    context.mcp_servers = [("fx".to_owned(), server)].into();
    let built = replan::tools::registry_builder::build_registry(context).await;
    let said = call(&built.registry, "fx__echo", json!({"text": "hi"})).await;
    built.mcp.shutdown().await;
    assert_eq!(said.unwrap(), "hi", "{:?}", built.availability.unavailable);
    assert!(
        !escaped.exists(),
        "the MCP server wrote outside the workspace"
    );
    let started = std::fs::read_to_string(dir.path().join("started-in.txt")).unwrap();
    assert_eq!(
        std::path::Path::new(started.trim()),
        dir.path().canonicalize().unwrap()
    );
}
