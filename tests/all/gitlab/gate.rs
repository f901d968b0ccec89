//! Issue 17 on GitLab: the same rules as on GitHub for notes, merge requests and trigger
//! payloads. Each test asserts the exact writing requests the binary sent to the fake GitLab.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::ci_job::{ONE_TASK, run, text};
use super::e2e::note_hook;
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{DEFAULT_ACTOR, Noteable, access, date};
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

const CHECKLIST: &str = "<!-- replan:checklist -->";

/// Every request that writes (POST, PUT, DELETE, PATCH), as `METHOD path`.
fn writes(fake: &FakeGitLab) -> Vec<String> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

struct World {
    fake: FakeGitLab,
    llm: LlmServer,
    checkout: TestRepo,
    files: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let fake = FakeGitLab::start();
        fake.add_member("alice", access::DEVELOPER);
        fake.add_member("rita", access::REPORTER);
        World {
            fake,
            llm: LlmServer::start(scenario(ONE_TASK)),
            checkout: TestRepo::new(),
            files: tempfile::tempdir().unwrap(),
        }
    }

    /// A note by `author` and the Note Hook that reports it, as the pipeline trigger receives it.
    fn note(&self, iid: u64, author: &str, body: &str) -> PathBuf {
        let id = self.fake.seed_note(Noteable::Issue(iid), author, body);
        note_hook(&self.fake, self.files.path(), iid, id, author, body)
    }

    fn hook_run(&self, payload: &Path, author: &str) -> std::process::Output {
        self.fake.clear_requests();
        run(
            &self.fake,
            &self.llm,
            &self.checkout,
            &[
                ("CI_PIPELINE_SOURCE", "trigger".to_owned()),
                ("TRIGGER_PAYLOAD", payload.display().to_string()),
                ("GITLAB_USER_LOGIN", author.to_owned()),
            ],
        )
    }

    /// A pipeline started with `REPLAN_ISSUE_IID` by alice.
    fn variables_run(&self, iid: u64) -> std::process::Output {
        self.fake.clear_requests();
        run(
            &self.fake,
            &self.llm,
            &self.checkout,
            &[
                ("REPLAN_ISSUE_IID", iid.to_string()),
                ("GITLAB_USER_LOGIN", "alice".to_owned()),
            ],
        )
    }

    fn notes_url(&self, iid: u64) -> String {
        format!(
            "POST /api/v4/projects/{}/issues/{iid}/notes",
            self.fake.project_id()
        )
    }
}

/// Runs `payload` and checks that the one write was a note on issue `iid` holding `needle`.
fn one_note(world: &World, iid: u64, payload: &Path, needle: &str) {
    let output = world.hook_run(payload, "alice");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(writes(&world.fake), [world.notes_url(iid)]);
    let reply = world.fake.notes(Noteable::Issue(iid)).pop().unwrap();
    assert_eq!(reply.author, DEFAULT_ACTOR);
    assert!(reply.body.contains(needle), "{}", reply.body);
}

fn patch_payload(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    change(&mut value);
    std::fs::write(path, serde_json::to_string(&value).unwrap()).unwrap();
}

#[test]
fn gitlab_gate_notes_not_addressed_to_replan_write_nothing() {
    let world = World::new();
    let iid = world.fake.seed_issue("Title", "Body", "alice");
    for body in [
        "Looks good to me.",
        "```\n/replan\n```",
        "> quoted\n/replan",
        "<pre>\n/replan\n</pre>",
        "Try `/status` later",
    ] {
        let output = world.hook_run(&world.note(iid, "alice", body), "alice");
        assert_eq!(output.status.code(), Some(0), "{body:?}: {}", text(&output));
        assert!(
            writes(&world.fake).is_empty(),
            "{body:?}: {:?}",
            writes(&world.fake)
        );
    }
    // A plain note on a merge request, too.
    world.fake.commit_file("feature", "NOTES.md", "wip\n");
    let mr = world
        .fake
        .seed_merge_request("Feature", "feature", "main", "alice");
    let id = world
        .fake
        .seed_note(Noteable::MergeRequest(mr), "alice", "nice work");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gitlab-events/note_hook.merge_request.json");
    let payload = world.files.path().join("mr-note.json");
    std::fs::copy(fixture, &payload).unwrap();
    let note = world.fake.note(id).unwrap();
    patch_payload(&payload, |v| {
        v["user"]["username"] = json!("alice");
        v["project"]["id"] = json!(world.fake.project_id());
        v["project"]["path_with_namespace"] = json!(world.fake.project_path());
        v["object_attributes"]["id"] = json!(id);
        v["object_attributes"]["note"] = json!("nice work");
        v["object_attributes"]["updated_at"] = json!(date(note.updated_at));
        v["merge_request"]["iid"] = json!(mr);
    });
    let output = world.hook_run(&payload, "alice");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(writes(&world.fake).is_empty(), "{:?}", writes(&world.fake));
    assert!(world.llm.requests().is_empty());
}

#[test]
fn gitlab_gate_a_reporter_s_command_is_refused_without_any_write() {
    let world = World::new();
    let iid = world.fake.seed_issue("Title", "Body", "alice");
    for body in ["/replan now", "@replan please plan this"] {
        let output = world.hook_run(&world.note(iid, "rita", body), "rita");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert!(writes(&world.fake).is_empty(), "{:?}", writes(&world.fake));
    }
    assert!(world.llm.requests().is_empty());
}

#[test]
fn gitlab_gate_commands_on_a_closed_issue_get_one_closed_note() {
    let world = World::new();
    let iid = world.fake.seed_issue("Title", "Body", "alice");
    world
        .fake
        .with_issue(iid, |issue| issue.state = "closed".into());
    for command in ["/replan", "/resume"] {
        let payload = world.note(iid, "alice", command);
        patch_payload(&payload, |v| v["issue"]["state"] = json!("closed"));
        one_note(&world, iid, &payload, "closed");
    }
    // Pipeline variables do not say: the state is read from GitLab.
    world.fake.clear_requests();
    let output = world.variables_run(iid);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(writes(&world.fake).is_empty(), "{:?}", writes(&world.fake));
    assert!(world.llm.requests().is_empty());
}

#[test]
fn gitlab_gate_commands_without_a_plan_get_one_note_and_change_nothing() {
    let world = World::new();
    let iid = world.fake.seed_issue("Title", "Body", "alice");
    for command in ["/status", "/approve", "/stop"] {
        let payload = world.note(iid, "alice", command);
        one_note(&world, iid, &payload, "no plan yet for this thread");
    }
    assert!(world.fake.branch_sha("replan-history").is_none());
}

#[test]
fn gitlab_gate_an_edited_note_is_not_acted_on() {
    let world = World::new();
    let iid = world.fake.seed_issue("Title", "Body", "alice");
    let id = world
        .fake
        .seed_note(Noteable::Issue(iid), "alice", "/status");
    let payload = note_hook(&world.fake, world.files.path(), iid, id, "alice", "/status");
    world.fake.edit_note(id, "/replan goal something else");

    let output = world.hook_run(&payload, "alice");

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(writes(&world.fake).is_empty(), "{:?}", writes(&world.fake));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("edited"),
        "{}",
        text(&output)
    );
}

#[test]
fn gitlab_gate_only_the_token_user_s_marked_note_is_the_checklist() {
    let world = World::new();
    let iid = world
        .fake
        .seed_issue("Add a hello file", "Please add hello.md.", "alice");
    let bait_body = format!("{CHECKLIST}\nI am the checklist now");
    let bait = world
        .fake
        .seed_note(Noteable::Issue(iid), "rita", &bait_body);
    let ours_before = world.fake.seed_note(
        Noteable::Issue(iid),
        DEFAULT_ACTOR,
        &format!("{CHECKLIST}\nold"),
    );

    let output = world.variables_run(iid);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let project = world.fake.project_id();
    assert!(
        world
            .fake
            .requests_to(
                "PUT",
                &format!("/api/v4/projects/{project}/issues/{iid}/notes/{bait}")
            )
            .is_empty(),
        "{:?}",
        writes(&world.fake)
    );
    assert_eq!(world.fake.note(bait).unwrap().body, bait_body);
    let own_user = world.fake.requests_to("GET", "/api/v4/user");
    assert_eq!(
        own_user.iter().filter(|r| r.path == "/api/v4/user").count(),
        1,
        "the token's user, asked once"
    );
    let checklists: Vec<_> = world
        .fake
        .notes(Noteable::Issue(iid))
        .into_iter()
        .filter(|n| n.author == DEFAULT_ACTOR && n.body.starts_with(CHECKLIST))
        .collect();
    assert_eq!(checklists.len(), 1, "{checklists:#?}");
    assert_eq!(checklists[0].id, ours_before, "our old checklist, edited");
    assert!(checklists[0].body.contains("Write hello.md"));
}
