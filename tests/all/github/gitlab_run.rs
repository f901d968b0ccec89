//! The same `replan run` CI path on GitLab: pipeline variables, the fake GitLab API, the
//! scripted LLM server.

use assert_cmd::Command;
use replan::history::jsonl;

use super::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, access};
use crate::support::git::isolated_git_env;
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

const ONE_TASK: &str = r#"
mode: matched
steps:
  - when: { contains: "Produce the planning phases" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Add a hello file", "success_criteria": ["hello.md exists"], "constraints": []},
       "task_decomposition": {"reasoning": "one step", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]}]},
       "action_plan": {"execution_order": ["task_1"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write hello.md", "expected_outcome": "file written"}]}}
"#;

fn run(
    fake: &FakeGitLab,
    llm: &LlmServer,
    checkout: &TestRepo,
    vars: &[(&str, String)],
) -> std::process::Output {
    let mut command = Command::cargo_bin("replan").unwrap();
    command.env_clear();
    for key in ["PATH", "HOME", "TMPDIR"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    command
        .envs(isolated_git_env())
        .env("GITLAB_CI", "true")
        .env("CI_PIPELINE_SOURCE", "api")
        .env("CI_API_V4_URL", fake.api_url())
        .env("CI_PROJECT_ID", fake.project_id().to_string())
        .env("CI_PROJECT_PATH", fake.project_path())
        .env("CI_PROJECT_DIR", checkout.path())
        .env(
            "CI_JOB_URL",
            "https://gitlab.example.com/octo/widgets/-/jobs/99",
        )
        .env("GITLAB_TOKEN", fake.token())
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm.openai_base())
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .arg("run")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn gitlab_pipeline_for_an_issue_plans_executes_and_commits_history() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let notes = fake.notes(Noteable::Issue(iid));
    let checklist = notes
        .iter()
        .find(|n| n.body.starts_with("<!-- replan:checklist -->"))
        .expect("the checklist note");
    assert!(
        checklist.body.contains("Write hello.md"),
        "{}",
        checklist.body
    );
    assert!(checklist.body.contains("jobs/99"), "{}", checklist.body);
    let history = fake
        .file_at_ref(
            "replan-history",
            &format!("planning_history/issues/{iid}.jsonl"),
        )
        .expect("history committed to the branch");
    let types: Vec<String> = jsonl::parse(&history)
        .entries
        .iter()
        .map(|e| e.body.type_name().to_owned())
        .collect();
    assert!(
        types.contains(&"plan".to_owned()) && types.contains(&"run_finished".to_owned()),
        "{types:?}"
    );
    assert_eq!(checkout.read("hello.md"), "hello\n");
}

#[test]
fn gitlab_pipeline_by_a_reporter_is_refused_with_a_reply() {
    let fake = FakeGitLab::start();
    fake.add_member("rita", access::REPORTER);
    let iid = fake.seed_issue("Title", "Body", "rita");
    let llm = LlmServer::start(scenario(""));
    let checkout = TestRepo::new();

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "rita".to_owned()),
        ],
    );

    assert_eq!(output.status.code(), Some(0));
    let notes = fake.notes(Noteable::Issue(iid));
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].body.contains("@rita"), "{}", notes[0].body);
    assert!(llm.requests().is_empty());
}
