//! Issue 7's end-to-end lines through the built binary in a GitLab CI job: a merge-request
//! pipeline, `/replan` from a Note Hook payload, concurrent history commits, and the job token
//! refused with a clear error.

use std::path::{Path, PathBuf};

use replan::history::jsonl;
use serde_json::{Value, json};

use super::ci_job::{ONE_TASK, job, run, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Awardable, Noteable, access, date};
use crate::support::llm_server::LlmServer;
use crate::support::{ConcurrentChange, FakeGitLab, TestRepo};

const HISTORY: &str = "replan-history";
const CHECKLIST: &str = "<!-- replan:checklist -->";

/// The first planning writes `hello.md`; a revision of the tasks keeps one subtask, so no run
/// needs tools beyond `write_file`.
const ONE_TASK_AND_ITS_REVISION: &str = r#"
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
  - when: { contains: "Perform the planning phase" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Add a hello file", "success_criteria": ["hello.md exists"], "constraints": []},
       "task_decomposition": {"reasoning": "the README moved, so write the file again", "subtasks": [
          {"id": "task_1", "description": "Write hello.md next to the moved README", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]}]},
       "action_plan": {"execution_order": ["task_1"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write hello.md", "expected_outcome": "file written"}]}}
"#;

fn history_types(history: &str) -> Vec<String> {
    jsonl::parse(history)
        .entries
        .iter()
        .map(|e| e.body.type_name().to_owned())
        .collect()
}

fn checklist(fake: &FakeGitLab, noteable: Noteable) -> crate::support::fake_gitlab::Note {
    let notes = fake.notes(noteable);
    let ours: Vec<_> = notes
        .iter()
        .filter(|n| n.body.starts_with(CHECKLIST))
        .cloned()
        .collect();
    assert_eq!(ours.len(), 1, "one checklist note: {notes:#?}");
    ours[0].clone()
}

/// A Note Hook payload in the shape of `tests/fixtures/gitlab-events/note_hook.issue.json`, for
/// note `note_id` by `author` on issue `iid` of the fake's project, written to a file in `dir`.
pub(super) fn note_hook(
    fake: &FakeGitLab,
    dir: &Path,
    iid: u64,
    note_id: u64,
    author: &str,
    body: &str,
) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gitlab-events/note_hook.issue.json");
    let mut hook: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).expect("fixture is JSON");
    hook["user"]["username"] = json!(author);
    hook["project_id"] = json!(fake.project_id());
    hook["project"]["id"] = json!(fake.project_id());
    hook["project"]["path_with_namespace"] = json!(fake.project_path());
    hook["object_attributes"]["id"] = json!(note_id);
    hook["object_attributes"]["note"] = json!(body);
    hook["object_attributes"]["project_id"] = json!(fake.project_id());
    hook["issue"]["iid"] = json!(iid);
    hook["issue"]["state"] = json!("opened");
    // The payload's copy is the note as the fake holds it when the hook fires.
    if let Some(note) = fake.note(note_id) {
        hook["object_attributes"]["created_at"] = json!(date(note.created_at));
        hook["object_attributes"]["updated_at"] = json!(date(note.updated_at));
    }
    let path = dir.join(format!("note_hook-{note_id}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&hook).unwrap()).unwrap();
    path
}

#[test]
fn gitlab_e2e_merge_request_pipeline_plans_on_the_merge_request_and_commits_its_history() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    fake.commit_file("hello", "NOTES.md", "work in progress\n");
    let iid = fake.seed_merge_request("Add a hello file", "hello", "main", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("CI_PIPELINE_SOURCE", "merge_request_event".to_owned()),
            ("CI_MERGE_REQUEST_IID", iid.to_string()),
            ("CI_MERGE_REQUEST_LABELS", "backend,replan".to_owned()),
            ("CI_MERGE_REQUEST_TITLE", "Add a hello file".to_owned()),
            (
                "CI_MERGE_REQUEST_DESCRIPTION",
                "Please add hello.md.".to_owned(),
            ),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let note = checklist(&fake, Noteable::MergeRequest(iid));
    assert!(note.body.contains("Write hello.md"), "{}", note.body);
    assert!(note.body.contains("jobs/99"), "{}", note.body);
    assert!(
        fake.notes(Noteable::MergeRequest(iid))
            .iter()
            .any(|n| n.body.contains("<!-- replan:notice:completion -->")),
        "a completion note on the merge request: {:#?}",
        fake.notes(Noteable::MergeRequest(iid))
    );
    let history = fake
        .file_at_ref(
            HISTORY,
            &format!("planning_history/merge_requests/{iid}.jsonl"),
        )
        .expect("history committed under merge_requests/");
    let types = history_types(&history);
    for wanted in ["run_started", "plan", "run_finished"] {
        assert!(types.iter().any(|t| t == wanted), "{wanted}: {types:?}");
    }
    assert!(
        fake.file_at_ref(HISTORY, &format!("planning_history/issues/{iid}.jsonl"))
            .is_none(),
        "a merge request's history is not filed under issues/"
    );
    assert_eq!(checkout.read("hello.md"), "hello\n");
}

#[test]
fn gitlab_e2e_replan_note_hook_revises_the_checklist_note_in_place_and_awards_the_note() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK_AND_ITS_REVISION));
    let checkout = TestRepo::new();
    let first = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let before = checklist(&fake, Noteable::Issue(iid));
    assert!(!before.body.contains("Revised"), "{}", before.body);

    let note_id = fake.seed_note(
        Noteable::Issue(iid),
        "alice",
        "/replan tasks the README moved",
    );
    let files = tempfile::tempdir().unwrap();
    let payload = note_hook(
        &fake,
        files.path(),
        iid,
        note_id,
        "alice",
        "/replan tasks the README moved",
    );
    fake.clear_requests();
    let second = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("CI_PIPELINE_SOURCE", "trigger".to_owned()),
            ("TRIGGER_PAYLOAD", payload.display().to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    let after = checklist(&fake, Noteable::Issue(iid));
    assert_eq!(after.id, before.id, "the same checklist note");
    assert!(after.body.contains("Revised #1"), "{}", after.body);
    assert!(
        after.body.contains("the README moved"),
        "the reason is shown: {}",
        after.body
    );
    let updates = fake.requests_to(
        "PUT",
        &format!(
            "/api/v4/projects/{}/issues/{iid}/notes/{}",
            fake.project_id(),
            before.id
        ),
    );
    assert!(
        !updates.is_empty(),
        "the checklist note is updated with PUT: {:#?}",
        fake.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
    let awards: Vec<_> = fake
        .award_emoji()
        .into_iter()
        .filter(|a| a.awardable == Awardable::Note(note_id))
        .collect();
    assert!(
        !awards.is_empty(),
        "the /replan note got an award emoji: {:#?}",
        fake.award_emoji()
    );
    let history = fake
        .file_at_ref(HISTORY, &format!("planning_history/issues/{iid}.jsonl"))
        .expect("history");
    let types = history_types(&history);
    assert_eq!(
        types.iter().filter(|t| *t == "revision").count(),
        1,
        "{types:?}"
    );
    assert!(
        llm.requests()
            .iter()
            .any(|r| r.texts().iter().any(|t| t.contains("the README moved"))),
        "the reason reached the model"
    );
}

#[test]
fn gitlab_e2e_a_concurrent_commit_to_the_history_file_loses_no_entry() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();
    let path = format!("planning_history/issues/{iid}.jsonl");
    // Another pipeline on the same issue commits its line just before Replan's first commit.
    let theirs = r#"{"v":1,"seq":1,"ts":"2024-05-01T12:00:00Z","run_id":"other-1","type":"answer","author":"bob","text":"from the other run","assumed":false}"#;
    fake.commit_before_next_commit(
        HISTORY,
        &path,
        ConcurrentChange::Append(format!("{theirs}\n")),
    );

    let output = run(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ],
    );

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let history = fake.file_at_ref(HISTORY, &path).expect("history");
    let parsed = jsonl::parse(&history);
    assert!(parsed.corrupt.is_empty(), "{history}");
    assert!(
        parsed.entries.iter().any(|e| e.run_id == "other-1"),
        "the other writer's line survived: {history}"
    );
    let ours: Vec<_> = parsed
        .entries
        .iter()
        .filter(|e| e.run_id == "gitlab-99")
        .map(|e| e.body.type_name())
        .collect();
    assert_eq!(
        ours.len() + 1,
        parsed.entries.len(),
        "Replan's entries carry the job's run id: {history}"
    );
    for wanted in ["run_started", "plan", "run_finished"] {
        assert!(ours.contains(&wanted), "{wanted}: {ours:?}");
    }
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "sequence numbers are unique and increasing: {seqs:?}"
    );
}

#[test]
fn gitlab_e2e_only_the_job_token_exits_2_asking_for_gitlab_token_with_api_scope() {
    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();
    let job_token = fake.job_token();

    let output = job(
        &fake,
        &llm,
        &checkout,
        &[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
            ("CI_JOB_TOKEN", job_token.clone()),
        ],
    )
    .env_remove("GITLAB_TOKEN")
    .output()
    .unwrap();

    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("GITLAB_TOKEN"), "{stderr}");
    assert!(stderr.contains("`api` scope"), "{stderr}");
    assert!(
        !text(&output).contains(&job_token),
        "the job token never appears: {}",
        text(&output)
    );
    let writes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/notes") || r.path.contains("/repository/commits"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "no note or commit requests: {writes:?}");
    assert!(fake.notes(Noteable::Issue(iid)).is_empty());
    assert!(llm.requests().is_empty(), "no model call either");
}
