//! `replan run --issue N` outside CI: the same orchestration over the local forge and history.

use assert_cmd::Command;
use replan::history::jsonl;
use tempfile::TempDir;

use super::e2e_support::scenario;
use crate::support::TestRepo;
use crate::support::git::isolated_git_env;
use crate::support::llm_server::LlmServer;

/// A checkout with an `origin`, ready for a local run that ends in a pull request.
pub fn checkout() -> (TestRepo, TestRepo) {
    let origin = TestRepo::bare();
    let checkout = TestRepo::clone_from(&origin);
    let _ = checkout.try_git(&["checkout", "-q", "-b", "main"]);
    checkout.write("README.md", "# widgets\n");
    checkout.commit_all("init");
    checkout.run_git(&["push", "-q", "origin", "main"]);
    (origin, checkout)
}

/// The binary with a clean environment, isolated git and the scripted model; no arguments yet.
fn base_command(llm_base: &str) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("replan"));
    command.env_clear();
    for key in ["PATH", "HOME", "TMPDIR"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    command
        .envs(isolated_git_env())
        .env("USER", "dev")
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm_base)
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef");
    command
}

/// The binary with a clean environment, isolated git and the scripted model; no arguments yet.
pub fn local_replan(llm: &LlmServer) -> Command {
    Command::from_std(base_command(&llm.openai_base()))
}

/// `replan run --issue 7 --title .. --body .. --workspace CHECKOUT [--local-dir DIR]` as a plain
/// process (the kill test signals it); `local_dir` None uses the default.
pub fn local_command(
    llm: &LlmServer,
    checkout: &TestRepo,
    local_dir: Option<&std::path::Path>,
) -> std::process::Command {
    local_command_at(&llm.openai_base(), checkout, local_dir)
}

/// [`local_command`] against the model at `llm_base` (a server the test runs itself).
pub fn local_command_at(
    llm_base: &str,
    checkout: &TestRepo,
    local_dir: Option<&std::path::Path>,
) -> std::process::Command {
    local_command_on(llm_base, checkout, local_dir, 7)
}

/// [`local_command_at`] on issue `number`.
pub fn local_command_on(
    llm_base: &str,
    checkout: &TestRepo,
    local_dir: Option<&std::path::Path>,
    number: u64,
) -> std::process::Command {
    let mut command = base_command(llm_base);
    command
        .args([
            "run",
            "--issue",
            &number.to_string(),
            "--title",
            "Add a hello file",
            "--body",
            "Please.",
        ])
        .arg("--workspace")
        .arg(checkout.path());
    if let Some(dir) = local_dir {
        command.arg("--local-dir").arg(dir);
    }
    command
}

/// `replan run --issue 7 --title .. --body .. --workspace CHECKOUT`, not started yet.
pub fn issue_7_run(llm: &LlmServer, checkout: &TestRepo) -> Command {
    let mut command = Command::from_std(local_command(llm, checkout, None));
    command.timeout(std::time::Duration::from_secs(120));
    command
}

/// `replan run --issue 7` against the scripted model; `local_dir` None uses the default.
fn run_local(
    llm: &LlmServer,
    checkout: &TestRepo,
    local_dir: Option<&std::path::Path>,
) -> std::process::Output {
    let mut command = issue_7_run(llm, checkout);
    if let Some(dir) = local_dir {
        command.arg("--local-dir").arg(dir);
    }
    let output = command.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn local_run_plans_executes_and_writes_the_history_file() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let output = run_local(&llm, &checkout, Some(state.path()));
    let history =
        std::fs::read_to_string(state.path().join("planning_history/issues/7.jsonl")).unwrap();
    let parsed = jsonl::parse(&history);
    assert!(parsed.corrupt.is_empty());
    assert!(
        parsed
            .entries
            .iter()
            .all(|e| e.run_id.starts_with("local-"))
    );
    let types: Vec<&str> = parsed.entries.iter().map(|e| e.body.type_name()).collect();
    assert!(
        types.contains(&"plan") && types.contains(&"run_finished"),
        "{types:?}"
    );
    assert_eq!(checkout.read("hello.md"), "hello\n");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("::group::"),
        "no workflow commands outside Actions"
    );
    // The checklist is a comment in the local forge too, as on GitHub, and history names it.
    let thread: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(state.path().join("threads/issues-7.json")).unwrap(),
    )
    .unwrap();
    let comments = thread["comments"].as_array().unwrap();
    let checklist = comments
        .iter()
        .find(|c| {
            c["body"]
                .as_str()
                .unwrap_or_default()
                .starts_with("<!-- replan:checklist")
        })
        .unwrap_or_else(|| panic!("no checklist comment in {comments:?}"));
    assert!(types.contains(&"checklist"), "{types:?}");
    assert!(
        parsed.entries.iter().any(|e| matches!(
            &e.body,
            replan::history::EntryBody::Checklist { comment_id } if *comment_id == checklist["id"]
        )),
        "the history records the checklist comment"
    );
}

#[test]
fn local_run_keeps_its_default_state_directory_out_of_the_pull_request() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    run_local(&llm, &checkout, None);
    assert!(
        checkout
            .path()
            .join(".replan/planning_history/issues/7.jsonl")
            .exists()
    );
    let files = checkout.run_git(&["ls-tree", "-r", "--name-only", "replan/issue-7"]);
    assert!(files.lines().any(|f| f == "hello.md"), "{files}");
    assert!(
        !files.contains(".replan"),
        "the local forge and history must not be committed: {files}"
    );
}

#[test]
fn local_run_without_a_thread_or_title_is_a_usage_error() {
    let checkout = TestRepo::new();
    let state = TempDir::new().unwrap();
    let output = Command::cargo_bin("replan")
        .unwrap()
        .env_remove("GITHUB_EVENT_NAME")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITLAB_CI")
        .args(["run", "--issue", "3"])
        .arg("--workspace")
        .arg(checkout.path())
        .arg("--local-dir")
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--title"));
}

/// A run cancelled while it waits for the model (SIGTERM, as a runner cancelling the job sends)
/// commits the entries it holds before it exits: nothing accepted is lost to batching.
#[test]
fn sigterm_flushes_the_history_entries_held_in_memory() {
    use std::net::TcpListener;
    use std::time::{Duration, Instant};
    // A model that accepts the connection and never answers.
    let model = TcpListener::bind("127.0.0.1:0").unwrap();
    model.set_nonblocking(true).unwrap();
    let base = format!("http://{}/v1", model.local_addr().unwrap());
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let mut child = local_command_at(&base, &checkout, Some(state.path()))
        .env("REPLAN_HISTORY__COMMIT_EVERY", "1000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The model is asked only after `run_started` was accepted (and held, not committed).
    let started = Instant::now();
    let _connection = loop {
        match model.accept() {
            Ok((connection, _)) => break connection,
            Err(_) if started.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("replan never asked the model: {e}"),
        }
    };
    let history = state.path().join("planning_history/issues/7.jsonl");
    assert!(!history.exists(), "held in memory before the signal");
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();

    assert_eq!(status.code(), Some(143), "{status:?}");
    let parsed = jsonl::parse(&std::fs::read_to_string(&history).unwrap());
    let types: Vec<&str> = parsed.entries.iter().map(|e| e.body.type_name()).collect();
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
}
