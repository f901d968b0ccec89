//! The canary run as a GitHub Action: the fake GitHub API's state and every request body it
//! received, the history branch, the job summary, the step outputs and the job log.

use super::canary::{CANARY, EXTRA, disguises_masked, forbidden, hostile_steps, planted_checkout};
use crate::github::e2e_support::scenario;
use crate::support::FakeGitHub;
use crate::support::git::isolated_git_env;
use crate::support::llm_server::LlmServer;
use assert_cmd::Command;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::path::Path;
use tempfile::TempDir;

fn issue_opened_payload(fake: &FakeGitHub, number: u64, dir: &Path) -> std::path::PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github-events/issues.opened.15.json");
    let mut value: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let issue = fake.issue(number).unwrap();
    let repo = fake.repo();
    let (owner, name) = repo.split_once('/').unwrap();
    value["repository"]["full_name"] = json!(repo);
    value["repository"]["name"] = json!(name);
    value["repository"]["owner"]["login"] = json!(owner);
    value["issue"]["number"] = json!(number);
    value["issue"]["title"] = json!(issue.title);
    value["issue"]["body"] = json!(issue.body);
    value["issue"]["user"]["login"] = json!("alice");
    value["sender"]["login"] = json!("alice");
    value["sender"]["type"] = json!("User");
    let path = dir.join("event.json");
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

#[test]
fn canary_secrets_reach_no_github_surface() {
    let fake = FakeGitHub::start();
    let (origin, checkout) = planted_checkout();
    let files = TempDir::new().unwrap();
    let outside = files.path().join("never-written");
    let llm = LlmServer::start(scenario(&hostile_steps(&outside)));
    fake.add_collaborator("alice", "write");
    let number = fake.seed_issue(
        &format!("Add hello {CANARY}"),
        &format!("Please. The key is {CANARY} ({}).", STANDARD.encode(CANARY)),
        "alice",
    );
    // The fake accepts a pull request only for a branch it has.
    let main = fake.ref_sha("main").unwrap();
    fake.set_ref(&format!("replan/issue-{number}"), &main);
    fake.append_file(&format!("replan/issue-{number}"), "hello.md", "hello\n");
    let payload = issue_opened_payload(&fake, number, files.path());

    let output = Command::cargo_bin("replan")
        .unwrap()
        .env_clear()
        .envs(
            ["PATH", "HOME", "TMPDIR"]
                .iter()
                .filter_map(|k| Some((*k, std::env::var(k).ok()?))),
        )
        .envs(isolated_git_env())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "issues")
        .env("GITHUB_EVENT_PATH", &payload)
        .env("GITHUB_API_URL", fake.base_url())
        .env("GITHUB_REPOSITORY", fake.repo())
        .env("GITHUB_RUN_ID", "77")
        .env("GITHUB_TOKEN", fake.token())
        .env("GITHUB_WORKSPACE", checkout.path())
        .env("GITHUB_OUTPUT", files.path().join("output.txt"))
        .env("GITHUB_STEP_SUMMARY", files.path().join("summary.md"))
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm.openai_base())
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
        .env("REPLAN_CANARY_TOKEN", CANARY)
        .env("RUST_LOG", "replan=info")
        .arg("run")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");

    // `::add-mask::` lines carry the values to the runner, which swallows them: they are the
    // one thing on stdout that must hold the secret, and never reach the job log.
    let log: String = stdout
        .lines()
        .filter(|line| !line.starts_with("::add-mask::"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        stdout.contains(&format!("::add-mask::{CANARY}")),
        "{stdout}"
    );
    let mut surfaces: Vec<(String, String)> =
        vec![("job log (stdout)".into(), log), ("stderr".into(), stderr)];
    for request in fake.requests() {
        surfaces.push((format!("{} {}", request.method, request.path), request.body));
    }
    for comment in fake.comments(number) {
        surfaces.push((format!("comment {}", comment.id), comment.body));
    }
    for pull in fake.pull_requests() {
        surfaces.push((format!("pull request {}", pull.head), format!("{pull:?}")));
    }
    surfaces.push((
        "history".into(),
        fake.file_at_ref(
            "replan-history",
            &format!("planning_history/issues/{number}.jsonl"),
        )
        .unwrap_or_default(),
    ));
    for name in ["output.txt", "summary.md"] {
        surfaces.push((
            name.into(),
            std::fs::read_to_string(files.path().join(name)).unwrap_or_default(),
        ));
    }
    surfaces.push((
        "git log".into(),
        origin.run_git(&["log", "--all", "--format=%B"]),
    ));
    for request in llm.requests() {
        surfaces.push(("LLM request".into(), request.body.to_string()));
    }
    for (name, text) in &surfaces {
        for form in forbidden() {
            assert!(!text.contains(&form), "`{form}` reached {name}:\n{text}");
        }
    }
    // The hostile writes reached the fake, masked.
    let comments: String = fake.comments(number).into_iter().map(|c| c.body).collect();
    assert!(comments.contains("leaking ***"), "{comments}");
    assert!(
        comments.contains(&format!("disguised {}", disguises_masked())),
        "{comments}"
    );
    let pulls = fake.pull_requests();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert!(format!("{pulls:?}").contains("Add hello ***"), "{pulls:?}");
    assert!(!EXTRA.is_empty());
}
