//! Split-trust mode in GitLab CI: `replan run --bundle DIR` in the job that holds the LLM key
//! sends GitLab no writing request; `replan publish DIR` in a later job without the key makes
//! the notes, the 👀 award and the history commit.

use replan::history::jsonl;

use super::ci_job::{ONE_TASK, job, job_environment, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, access};
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

const WRITING: [&str; 4] = ["POST", "PATCH", "PUT", "DELETE"];

fn writing_requests(fake: &FakeGitLab) -> Vec<String> {
    fake.requests()
        .into_iter()
        .filter(|r| WRITING.contains(&r.method.as_str()))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn gitlab_split_agent_writes_nothing_and_publish_writes_the_notes_and_history() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();
    let dir = tempfile::TempDir::new().unwrap();
    let vars = [
        ("REPLAN_ISSUE_IID", iid.to_string()),
        ("GITLAB_USER_LOGIN", "alice".to_owned()),
    ];

    let output = job(&fake, &llm, &checkout, &vars)
        .arg("--bundle")
        .arg(dir.path())
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!llm.requests().is_empty(), "the agent ran the cycle");
    assert_eq!(writing_requests(&fake), Vec::<String>::new());
    assert!(fake.notes(Noteable::Issue(iid)).is_empty());
    let history_path = format!("planning_history/issues/{iid}.jsonl");
    assert!(fake.file_at_ref("replan-history", &history_path).is_none());

    let calls = llm.requests().len();
    let output = job_environment(&fake, &llm, &checkout, &vars)
        .env_remove("OPENAI_API_KEY")
        .env_remove("REPLAN_LLM__BASE_URL")
        .arg("publish")
        .arg(dir.path())
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(llm.requests().len(), calls, "publish calls no LLM");
    assert!(!writing_requests(&fake).is_empty());
    let notes = fake.notes(Noteable::Issue(iid));
    let checklists: Vec<_> = notes
        .iter()
        .filter(|n| n.body.starts_with("<!-- replan:checklist -->"))
        .collect();
    assert_eq!(checklists.len(), 1, "{notes:#?}");
    assert!(checklists[0].body.contains("Write hello.md"));
    assert!(fake.award_emoji().iter().any(|a| a.name == "eyes"));
    let history = fake
        .file_at_ref("replan-history", &history_path)
        .expect("history committed by publish");
    let types: Vec<String> = jsonl::parse(&history)
        .entries
        .iter()
        .map(|e| e.body.type_name().to_owned())
        .collect();
    for wanted in ["run_started", "plan", "checklist", "run_finished"] {
        assert!(types.iter().any(|t| t == wanted), "{wanted}: {types:?}");
    }
    assert!(
        history.contains(&format!("\"comment_id\":\"{}\"", checklists[0].id)),
        "{history}"
    );
}
