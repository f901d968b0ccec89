//! Split-trust mode on a local run: `replan run --bundle DIR` writes nothing to the local forge,
//! the history or `origin`; `replan publish DIR` (no LLM) then leaves the same state a normal run
//! leaves. Real git, the local forge, the scripted LLM server.

use std::path::Path;

use assert_cmd::Command;
use replan::app::bundle::{Manifest, Write};
use replan::history::jsonl;
use serde_json::Value;
use tempfile::TempDir;

use crate::github::e2e_support::{checkout, issue_7_run, local_replan, scenario};
use crate::support::TestRepo;
use crate::support::history_shape::history_shape;
use crate::support::llm_server::LlmServer;

const HISTORY: &str = ".replan/planning_history/issues/7.jsonl";
const PULLS: &str = ".replan/pulls.json";
const BRANCH: &str = "replan/issue-7";

fn replan(llm: &LlmServer, cwd: &Path) -> Command {
    let mut command = local_replan(llm);
    command
        .current_dir(cwd)
        .timeout(std::time::Duration::from_secs(120));
    command
}

fn run_issue(llm: &LlmServer, checkout: &TestRepo, bundle: Option<&Path>) -> std::process::Output {
    let mut command = issue_7_run(llm, checkout);
    if let Some(dir) = bundle {
        command.arg("--bundle").arg(dir);
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    output
}

fn text(output: &std::process::Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn pulls(checkout: &TestRepo) -> Value {
    serde_json::from_str(&checkout.read(PULLS)).expect("pulls.json is JSON")
}

#[test]
fn bundle_run_writes_nothing_and_publish_leaves_what_a_normal_run_leaves() {
    // A normal run, for comparison.
    let llm = LlmServer::start(scenario(""));
    let (normal_origin, normal) = checkout();
    run_issue(&llm, &normal, None);

    // The agent phase: the same cycle, into a bundle directory that does not exist yet.
    let llm = LlmServer::start(scenario(""));
    let (origin, split) = checkout();
    let outside = TempDir::new().unwrap();
    let dir = outside.path().join("bundle/out");
    run_issue(&llm, &split, Some(&dir));

    assert!(
        !split.path().join(HISTORY).exists(),
        "no history line is written"
    );
    assert!(!split.path().join(PULLS).exists(), "no pull request");
    assert!(origin.rev_parse(BRANCH).is_none(), "nothing pushed");
    let manifest = Manifest::load(&dir).expect("the manifest");
    let kinds: Vec<&str> = manifest
        .writes
        .iter()
        .map(|w| match w {
            Write::History { .. } => "history",
            Write::Branch { .. } => "branch",
            Write::PullRequest { .. } => "pull_request",
            _ => "other",
        })
        .collect();
    for wanted in ["history", "branch", "pull_request"] {
        assert!(kinds.contains(&wanted), "{wanted} recorded: {kinds:?}");
    }
    let branch_pos = kinds.iter().position(|k| *k == "branch").unwrap();
    let pr_pos = kinds.iter().position(|k| *k == "pull_request").unwrap();
    assert!(branch_pos < pr_pos, "the branch goes out before the PR");

    // Publish: from the workspace, no LLM call.
    let calls = llm.requests().len();
    let output = replan(&llm, split.path())
        .arg("publish")
        .arg(&dir)
        .args(["--issue", "7"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(llm.requests().len(), calls, "publish makes no LLM call");

    // The same history, pull request and pushed branch as the normal run.
    let history = split.read(HISTORY);
    assert_eq!(
        history_shape(&history),
        history_shape(&normal.read(HISTORY))
    );
    let parsed = jsonl::parse(&history);
    assert!(parsed.corrupt.is_empty());
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(
        !history.contains("replan-bundle:"),
        "every placeholder resolved: {history}"
    );
    let pulls = pulls(&split);
    let normal_pulls = self::pulls(&normal);
    assert_eq!(pulls.as_array().unwrap().len(), 1, "{pulls}");
    for field in ["head", "base", "title", "body"] {
        assert_eq!(pulls[0][field], normal_pulls[0][field], "{field}");
    }
    // The local forge's pull request carries the Verification section once, after the run.
    let body = pulls[0]["body"].as_str().unwrap();
    assert_eq!(
        body.matches("<!-- replan:verification -->").count(),
        1,
        "{body}"
    );
    assert!(
        body.contains("**History**: `planning_history/issues/7.jsonl` on branch `replan-history`"),
        "{body}"
    );
    let url = pulls[0]["url"].as_str().unwrap();
    assert!(
        history.contains(&format!("opened pull request #1 ({url})")),
        "the history names the real pull request: {history}"
    );
    assert_eq!(
        origin.rev_parse(&format!("{BRANCH}^{{tree}}")),
        normal_origin.rev_parse(&format!("{BRANCH}^{{tree}}")),
        "the pushed branch holds the same files"
    );
    assert_eq!(split.show(&format!("{BRANCH}:hello.md")), "hello\n");
}

#[test]
fn publish_refuses_a_branch_that_does_not_apply_and_writes_nothing() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, agent) = checkout();
    let outside = TempDir::new().unwrap();
    let dir = outside.path().join("bundle");
    run_issue(&llm, &agent, Some(&dir));
    // Another repository: the bundle's base commit is not there.
    let other = TestRepo::new();
    std::fs::create_dir_all(other.path().join(".replan/threads")).unwrap();
    std::fs::copy(
        agent.path().join(".replan/threads/issues-7.json"),
        other.path().join(".replan/threads/issues-7.json"),
    )
    .unwrap();

    let output = replan(&llm, other.path())
        .arg("publish")
        .arg(&dir)
        .args(["--issue", "7"])
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("does not apply"), "{stderr}");
    assert!(!other.path().join(HISTORY).exists(), "nothing written");
    assert!(!other.path().join(PULLS).exists());
    assert!(other.rev_parse(BRANCH).is_none(), "not even fetched");
}

#[test]
fn publish_without_a_manifest_is_a_usage_error_naming_the_file() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    let empty = TempDir::new().unwrap();

    let output = replan(&llm, checkout.path())
        .arg("publish")
        .arg(empty.path())
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("manifest.json"), "{stderr}");
    assert!(stderr.contains("--bundle"), "{stderr}");
}

#[test]
fn a_bundle_directory_inside_the_checkout_stays_out_of_the_pull_request() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    let dir = checkout.path().join("replan-bundle");

    run_issue(&llm, &checkout, Some(&dir));

    assert!(dir.join("manifest.json").is_file());
    let files = checkout.run_git(&["ls-tree", "-r", "--name-only", BRANCH]);
    assert!(files.lines().any(|f| f == "hello.md"), "{files}");
    assert!(!files.contains("replan-bundle"), "{files}");
}

/// What a user sees of a local publish: the thread's comments and reactions, the history file,
/// the pull requests and the branches on `origin`.
fn forge_state(checkout: &TestRepo, origin: &TestRepo) -> (String, String, String, String) {
    (
        checkout.read(".replan/threads/issues-7.json"),
        checkout.read(HISTORY),
        checkout.read(PULLS),
        origin.run_git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
    )
}

#[test]
fn publishing_the_same_bundle_twice_leaves_what_one_publish_leaves() {
    let llm = LlmServer::start(scenario(""));
    let (origin, split) = checkout();
    let outside = TempDir::new().unwrap();
    let dir = outside.path().join("bundle");
    run_issue(&llm, &split, Some(&dir));
    let publish = || {
        replan(&llm, split.path())
            .arg("publish")
            .arg(&dir)
            .args(["--issue", "7"])
            .output()
            .unwrap()
    };

    let first = publish();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let once = forge_state(&split, &origin);
    // A re-run of the publish job (the same bundle, the same workspace).
    let again = publish();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let twice = forge_state(&split, &origin);

    let lines = |history: &str| history.lines().count();
    assert_eq!(
        lines(&twice.1),
        lines(&once.1),
        "history lines:\n{}",
        twice.1
    );
    assert_eq!(twice.1, once.1, "the history file");
    assert_eq!(twice.0, once.0, "the thread's comments and reactions");
    assert_eq!(twice.2, once.2, "the pull requests");
    assert_eq!(twice.3, once.3, "the branches on origin");
    assert_eq!(pulls(&split).as_array().unwrap().len(), 1);
}
