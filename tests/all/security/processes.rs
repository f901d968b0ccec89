//! No process outlives its command (issue 35, points 3 and 6): whatever a command or an MCP
//! server starts — in the background, after `setsid`, through a double fork, after trying to
//! kill what watches it — is dead when `run_command` returns, when the server is stopped and
//! when it is dropped. Each payload appends to a marker file in the workspace in a loop whose
//! argv carries a unique token, so a survivor shows both as a growing marker and in `/proc`.

use super::{allowing, call, tools_for};
use replan::sandbox::landlock::kernel_abi;
use replan::tools::ToolErrorKind;
use replan::tools::registry_builder::{ToolContext, build_registry};
use replan::tools::workspace::Workspace;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A payload loop: a unique marker file and the shell text of the loop that grows it.
struct Payload {
    token: String,
    marker: PathBuf,
}

impl Payload {
    fn new(workspace: &Path) -> Payload {
        let token = format!("replan-escape-{}", fastrand::u64(..));
        let marker = workspace.join(format!("marker-{token}"));
        Payload { token, marker }
    }

    /// `sh -c '<loop>'`, quoted for use inside a double-quoted shell word.
    fn loop_command(&self) -> String {
        format!(
            "sh -c 'while :; do echo x >> {}; sleep 0.05; done'",
            self.marker.display()
        )
    }

    /// Shell text that waits until the loop has written at least once, so the escape is under
    /// way before the command ends.
    fn wait_until_running(&self) -> String {
        format!(
            "while [ ! -s {} ]; do sleep 0.01; done",
            self.marker.display()
        )
    }

    fn size(&self) -> u64 {
        std::fs::metadata(&self.marker)
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Processes whose command line names the marker.
    fn survivors(&self) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(&self.token) {
                found.push(format!("{name}: {cmdline}"));
            }
        }
        found
    }

    /// The marker grew once, then stops growing, and no process of the payload is left.
    fn assert_dead(&self, said: &str) {
        assert!(
            self.size() > 0,
            "the payload never ran, so the test proves nothing: {said}"
        );
        let first = self.size();
        std::thread::sleep(Duration::from_millis(400));
        let second = self.size();
        let survivors = self.survivors();
        assert!(
            first == second && survivors.is_empty(),
            "a process outlived its command: the marker grew from {first} to {second} bytes \
             after the command returned; still running: {survivors:?}; the command said: {said}"
        );
    }

    /// Waits up to `limit` for every process of the payload to be gone.
    fn wait_gone(&self, limit: Duration) {
        let started = Instant::now();
        while !self.survivors().is_empty() && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Payload {
    /// A payload that escaped must not run on after the test (it would on the base commit).
    fn drop(&mut self) {
        for line in self.survivors() {
            if let Some(pid) = line.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
                // SAFETY: kill(2) takes plain integers.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

async fn run_shell(
    dir: &Path,
    script: &str,
    timeout: Option<u64>,
) -> (String, Option<ToolErrorKind>) {
    let tools = tools_for(dir, allowing(&["sh -c *"]), |_| {}).await;
    let mut args = json!({"argv": ["sh", "-c", script]});
    if let Some(seconds) = timeout {
        args["timeout_seconds"] = json!(seconds);
    }
    match call(&tools, "run_command", args).await {
        Ok(text) => (text, None),
        Err(error) => (error.message, Some(error.kind)),
    }
}

#[tokio::test]
async fn a_setsid_background_loop_dies_with_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    let script = format!(
        "setsid {} > /dev/null 2>&1 & {}; echo started",
        payload.loop_command(),
        payload.wait_until_running()
    );
    let (said, failed) = run_shell(dir.path(), &script, None).await;
    assert_eq!(failed, None, "{said}");
    payload.assert_dead(&said);
}

#[tokio::test]
async fn a_double_forked_loop_dies_with_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    // The subshell exits at once: the loop is orphaned and re-parented away from the command.
    let script = format!(
        "( {} > /dev/null 2>&1 & ); {}; echo started",
        payload.loop_command(),
        payload.wait_until_running()
    );
    let (said, failed) = run_shell(dir.path(), &script, None).await;
    assert_eq!(failed, None, "{said}");
    payload.assert_dead(&said);
}

#[tokio::test]
async fn a_setsid_double_forked_loop_dies_with_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    // `setsid -f` forks again: a new session, a new process group and no living parent.
    let script = format!(
        "( setsid -f {} > /dev/null 2>&1 < /dev/null & ); {}; echo started",
        payload.loop_command(),
        payload.wait_until_running()
    );
    let (said, failed) = run_shell(dir.path(), &script, None).await;
    assert_eq!(failed, None, "{said}");
    payload.assert_dead(&said);
}

#[tokio::test]
async fn a_command_that_times_out_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    let script = format!(
        "setsid {} > /dev/null 2>&1 & {}; sleep 30",
        payload.loop_command(),
        payload.wait_until_running()
    );
    let started = Instant::now();
    let (said, failed) = run_shell(dir.path(), &script, Some(1)).await;
    assert_eq!(failed, Some(ToolErrorKind::Timeout), "{said}");
    assert!(started.elapsed() < Duration::from_secs(20), "{said}");
    payload.assert_dead(&said);
}

#[tokio::test]
async fn a_command_cannot_kill_its_reaper_to_leave_a_loop_behind() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    let script = format!(
        "kill -9 $PPID; echo kill said $?; {} > /dev/null 2>&1 & {}; echo started",
        payload.loop_command(),
        payload.wait_until_running()
    );
    let (said, _) = run_shell(dir.path(), &script, None).await;
    if kernel_abi() >= 6 {
        // Landlock's signal scope: the command cannot signal anything outside its own domain.
        assert!(said.contains("kill said 1"), "{said}");
    }
    payload.assert_dead(&said);
}

#[tokio::test]
async fn the_command_sees_no_environment_in_its_parent() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "skipped the_command_sees_no_environment_in_its_parent: only root can read the \
             environment of a non-dumpable process, and root is who this guards against"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parent_file = dir.path().join("parent.txt");
    let script = format!(
        "echo $PPID > {}.tmp; mv {0}.tmp {0}; sleep 2",
        parent_file.display()
    );
    let workspace = dir.path().to_path_buf();
    let running = tokio::spawn(async move { run_shell(&workspace, &script, None).await });
    let started = Instant::now();
    while !parent_file.exists() && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let parent = std::fs::read_to_string(&parent_file).unwrap();
    // What a root process outside the sandbox reads (inside it, Landlock denies the read).
    let environ = std::fs::read(format!("/proc/{}/environ", parent.trim())).unwrap();
    let (said, failed) = running.await.unwrap();
    assert_eq!(failed, None, "{said}");
    let shown = String::from_utf8_lossy(&environ).replace('\0', " ");
    assert!(
        environ.iter().all(|b| *b == 0),
        "the environment of the command's parent (pid {}) is readable: {shown}",
        parent.trim()
    );
}

/// An MCP server (the fixture, copied into the workspace so the sandbox lets it run) started by
/// a shell that first leaves a `setsid` loop behind.
fn escaping_server(dir: &Path, payload: &Payload) -> replan::config::McpServerConfig {
    let fixture = dir.join("mcp-fixture");
    std::fs::copy(crate::tools::fixture_server(), &fixture).unwrap();
    replan::config::McpServerConfig {
        command: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            format!(
                "setsid {} > /dev/null 2>&1 < /dev/null & {}; exec {}",
                payload.loop_command(),
                payload.wait_until_running(),
                fixture.display()
            ),
        ],
        ..replan::config::McpServerConfig::default()
    }
}

async fn started_server(
    dir: &Path,
    payload: &Payload,
) -> replan::tools::registry_builder::BuiltTools {
    let mut context = ToolContext::new(Workspace::new(dir).unwrap(), allowing(&[]));
    context.mcp_servers = [("fx".to_owned(), escaping_server(dir, payload))].into();
    let built = build_registry(context).await;
    let said = call(&built.registry, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(said.unwrap(), "hi", "{:?}", built.availability.unavailable);
    built
}

#[tokio::test]
async fn an_mcp_servers_background_loop_dies_when_it_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    let built = started_server(dir.path(), &payload).await;
    built.mcp.shutdown().await;
    payload.assert_dead("(stopped MCP server)");
}

#[tokio::test]
async fn an_mcp_servers_background_loop_dies_when_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let payload = Payload::new(dir.path());
    let built = started_server(dir.path(), &payload).await;
    drop(built);
    // Dropping cannot wait; the server's reaper kills the tree on its own, promptly.
    payload.wait_gone(Duration::from_secs(5));
    payload.assert_dead("(dropped MCP server)");
}
