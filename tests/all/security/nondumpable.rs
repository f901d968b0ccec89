//! Replan is non-dumpable from start-up: another process of the same (non-root) user, one that
//! no Landlock domain restricts, cannot read its environment from `/proc/<pid>/environ`.

use super::{AS_NOBODY, NOBODY, SETPRIV, is_root};
use crate::support::llm_server::LlmServer;
use replan::llm::scenario::Scenario;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CANARY: &str = "canary-nondumpable-31c9a7";

/// `program` as the unprivileged user when the tests run as root; None when that is impossible.
fn unprivileged(program: &str) -> Option<Command> {
    if !is_root() {
        return Some(Command::new(program));
    }
    if !std::path::Path::new(SETPRIV).exists() {
        return None;
    }
    let mut command = Command::new(SETPRIV);
    command.args(AS_NOBODY).arg(program);
    Some(command)
}

#[test]
fn another_process_of_the_same_user_cannot_read_replans_environment() {
    let replan = assert_cmd::cargo::cargo_bin("replan");
    let Some(mut command) = unprivileged(replan.to_str().unwrap()) else {
        eprintln!(
            "skipped: the tests run as root and there is no setpriv to start Replan as a \
             non-root user (root reads any process's environment, dumpable or not)"
        );
        return;
    };
    // The model never answers, so Replan waits with its environment in memory.
    let llm = LlmServer::start(Scenario::from_yaml("steps:\n  - fault: { kind: hang }\n").unwrap());
    let workspace = tempfile::tempdir().unwrap();
    if is_root() {
        std::os::unix::fs::chown(workspace.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let mut child = command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", workspace.path())
        .env("REPLAN_CANARY_TOKEN", CANARY)
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm.openai_base())
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("REPLAN_LLM__MAX_RETRIES", "0")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
        .args([
            "run",
            "--issue",
            "1",
            "--title",
            "t",
            "--body",
            "b",
            "--workspace",
        ])
        .arg(workspace.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while llm.requests().is_empty() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!llm.requests().is_empty(), "Replan never called the model");

    let environ = format!("/proc/{}/environ", child.id());
    let read = unprivileged("cat").unwrap().arg(&environ).output().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&read.stdout);
    assert!(!text.contains(CANARY), "{environ} was readable: {text}");
    assert!(!read.status.success(), "cat {environ} succeeded");
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("ermission denied"),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
}
