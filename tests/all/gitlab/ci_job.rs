//! The built `replan` binary in a GitLab CI job: the variables GitLab sets, pointed at the fake
//! GitLab API and the scripted LLM server.

use assert_cmd::Command;

use crate::support::git::isolated_git_env;
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

/// One subtask that writes `hello.md`, for the first planning of a thread.
pub const ONE_TASK: &str = r#"
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

/// `replan run` with the variables of a job in project `fake.project_id()`, authenticated with
/// `GITLAB_TOKEN`; `vars` add to or override them.
pub fn job(
    fake: &FakeGitLab,
    llm: &LlmServer,
    checkout: &TestRepo,
    vars: &[(&str, String)],
) -> Command {
    let mut command = job_environment(fake, llm, checkout, vars);
    command.arg("run");
    command
}

/// The binary in a job's environment, with no arguments yet.
pub fn job_environment(
    fake: &FakeGitLab,
    llm: &LlmServer,
    checkout: &TestRepo,
    vars: &[(&str, String)],
) -> Command {
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
        .env("CI_DEFAULT_BRANCH", "main")
        .env(
            "CI_JOB_URL",
            "https://gitlab.example.com/octo/widgets/-/jobs/99",
        )
        .env("CI_JOB_ID", "99")
        .env("GITLAB_TOKEN", fake.token())
        .env("REPLAN_LLM__PROVIDER", "openai")
        .env("REPLAN_LLM__BASE_URL", llm.openai_base())
        .env("REPLAN_LLM__MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .timeout(std::time::Duration::from_secs(120));
    command
}

pub fn run(
    fake: &FakeGitLab,
    llm: &LlmServer,
    checkout: &TestRepo,
    vars: &[(&str, String)],
) -> std::process::Output {
    job(fake, llm, checkout, vars).output().unwrap()
}

/// Both streams, for assertion messages.
pub fn text(output: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
