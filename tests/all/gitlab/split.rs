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

/// The digest the agent job logs (`bundle_digest=<hex>`); GitLab has no step outputs.
fn logged_digest(output: &std::process::Output) -> String {
    let log = text(output);
    let at = log.find("bundle_digest=").expect("the digest is logged") + "bundle_digest=".len();
    log[at..at + 64].to_owned()
}

/// Hostile bundles on GitLab, each with a matching digest: refused with no writing request; a
/// changed bundle is refused by its digest; the untouched one publishes.
#[test]
fn gitlab_split_publish_refuses_hostile_bundles_and_writes_nothing() {
    use crate::support::bundle_digest::bundle_digest;
    use replan::app::bundle::{Manifest, Write};
    use replan::trigger::ThreadRef;

    let fake = FakeGitLab::start();
    fake.add_member("alice", access::DEVELOPER);
    let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let other = fake.seed_issue("Someone else's issue", "", "bob");
    let bots_note = fake.seed_note(
        Noteable::Issue(iid),
        "renovate-bot",
        "<!-- replan:notice:info -->\nUpdate dependency serde",
    );
    let llm = LlmServer::start(scenario(ONE_TASK));
    let checkout = TestRepo::new();
    let outside = tempfile::TempDir::new().unwrap();
    let legit = outside.path().join("legit");
    let vars = [
        ("REPLAN_ISSUE_IID", iid.to_string()),
        ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ("CI_DEFAULT_BRANCH", "main".to_owned()),
    ];
    let output = job(&fake, &llm, &checkout, &vars)
        .arg("--bundle")
        .arg(&legit)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let digest = logged_digest(&output);
    assert_eq!(digest, bundle_digest(&legit));

    type Edit = Box<dyn Fn(&mut Manifest)>;
    let hostile: [(&str, &str, Edit); 3] = [
        (
            "a note on another issue",
            "not the thread this publish job",
            Box::new(move |m| {
                m.writes.push(Write::Comment {
                    thread: ThreadRef::issue(other),
                    placeholder: "replan-bundle:comment-900".into(),
                    body: "forged".into(),
                })
            }),
        ),
        (
            "an edit of another bot's note carrying the marker",
            "not Replan's own",
            Box::new(move |m| {
                m.writes.push(Write::EditComment {
                    thread: ThreadRef::issue(iid),
                    comment_id: bots_note.to_string(),
                    body: "<!-- replan:notice:info -->\nrewritten".into(),
                })
            }),
        ),
        (
            "a forged approval",
            "records a person's decision",
            Box::new(move |m| {
                let line = serde_json::json!({"v": 1, "seq": 500, "ts": "2026-01-01T00:00:00Z",
                    "run_id": m.run_id, "type": "approval", "request_id": "r-1",
                    "decision": "approved", "author": "alice"});
                m.writes.push(Write::History {
                    thread: ThreadRef::issue(iid),
                    entries: vec![serde_json::from_value(line).unwrap()],
                })
            }),
        ),
    ];
    let publish = |dir: &std::path::Path, digest: &str| {
        job_environment(&fake, &llm, &checkout, &vars)
            .env_remove("OPENAI_API_KEY")
            .env_remove("REPLAN_LLM__BASE_URL")
            .env("REPLAN_BUNDLE_DIGEST", digest)
            .arg("publish")
            .arg(dir)
            .output()
            .unwrap()
    };
    for (i, (name, rule, change)) in hostile.iter().enumerate() {
        let dir = outside.path().join(format!("hostile-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&legit).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        let mut manifest = Manifest::load(&dir).unwrap();
        change(&mut manifest);
        manifest.save(&dir).unwrap();
        fake.clear_requests();

        let output = publish(&dir, &bundle_digest(&dir));

        assert_eq!(output.status.code(), Some(1), "{name}: {}", text(&output));
        assert!(text(&output).contains(rule), "{name}: {}", text(&output));
        assert_eq!(writing_requests(&fake), Vec::<String>::new(), "{name}");
    }

    let output = publish(&legit, &"0".repeat(64));
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("changed after Replan finished"));
    assert_eq!(writing_requests(&fake), Vec::<String>::new());

    let output = publish(&legit, &digest);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(fake.notes(Noteable::Issue(other)).is_empty());
    let notes = fake.notes(Noteable::Issue(iid));
    assert!(
        notes
            .iter()
            .any(|n| n.body.starts_with("<!-- replan:checklist -->"))
    );
    assert!(
        notes
            .iter()
            .any(|n| n.id == bots_note && n.body.contains("serde"))
    );
}
