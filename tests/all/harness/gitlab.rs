//! The fake GitLab must refuse what GitLab refuses: stale `last_commit_id`s, job tokens
//! on notes, commits and merge requests, unencoded paths.

use serde_json::json;

use crate::support::client::ApiClient;
use crate::support::fake_gitlab::{DEFAULT_ACTOR, FakeGitLab, Noteable, access};
use crate::support::{ConcurrentChange, Fault, TestRepo};

const HISTORY: &str = "replan-history";
const ISSUE_FILE: &str = "planning_history/issues/1.jsonl";
const ISSUE_FILE_ENCODED: &str = "planning_history%2Fissues%2F1.jsonl";

/// What a history writer reads before it appends: content and the file's last commit.
fn read_history(api: &ApiClient) -> (String, String) {
    let file = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE_ENCODED}?ref={HISTORY}"
    ));
    assert_eq!(file.status, 200, "{}", file.text);
    let bytes = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        file.json["content"].as_str().unwrap(),
    )
    .unwrap();
    (
        String::from_utf8(bytes).unwrap(),
        file.json["last_commit_id"].as_str().unwrap().to_string(),
    )
}

fn update_history(
    api: &ApiClient,
    content: &str,
    last_commit_id: &str,
) -> crate::support::client::ApiResponse {
    api.post(
        "/projects/101/repository/commits",
        &json!({
            "branch": HISTORY,
            "commit_message": "Replan history: issue 1",
            "actions": [{
                "action": "update",
                "file_path": ISSUE_FILE,
                "content": content,
                "last_commit_id": last_commit_id,
            }],
        }),
    )
}

#[test]
fn gitlab_stale_last_commit_id_is_refused_with_gitlabs_conflict_message() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    fake.commit_file(HISTORY, ISSUE_FILE, "{\"seq\":1}\n");
    let (content, last_commit_id) = read_history(&api);
    fake.append_file(HISTORY, ISSUE_FILE, "{\"seq\":2,\"run\":\"other\"}\n");

    let stale = update_history(
        &api,
        &format!("{content}{{\"seq\":2,\"run\":\"ours\"}}\n"),
        &last_commit_id,
    );

    assert_eq!(stale.status, 400);
    assert_eq!(
        stale.json["message"],
        format!("The file has changed since you started editing it: {ISSUE_FILE}")
    );
    assert_eq!(
        fake.file_at_ref(HISTORY, ISSUE_FILE).as_deref(),
        Some("{\"seq\":1}\n{\"seq\":2,\"run\":\"other\"}\n")
    );

    let (content, last_commit_id) = read_history(&api);
    let retry = update_history(
        &api,
        &format!("{content}{{\"seq\":3,\"run\":\"ours\"}}\n"),
        &last_commit_id,
    );
    assert_eq!(retry.status, 201, "{}", retry.text);
    assert_eq!(
        fake.branch_sha(HISTORY).as_deref(),
        retry.json["id"].as_str()
    );
    assert!(
        fake.file_at_ref(HISTORY, ISSUE_FILE)
            .unwrap()
            .ends_with("{\"seq\":3,\"run\":\"ours\"}\n")
    );
}

#[test]
fn gitlab_commit_hook_moves_the_branch_just_before_our_commit() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    fake.commit_file(HISTORY, ISSUE_FILE, "{\"seq\":1}\n");
    let (content, last_commit_id) = read_history(&api);
    fake.commit_before_next_commit(
        HISTORY,
        ISSUE_FILE,
        ConcurrentChange::Append("{\"seq\":2,\"run\":\"other\"}\n".into()),
    );

    let response = update_history(&api, &format!("{content}{{\"seq\":2}}\n"), &last_commit_id);

    assert_eq!(response.status, 400);
    assert_eq!(
        fake.log(HISTORY).len(),
        2,
        "only the other run's commit landed"
    );
}

#[test]
fn gitlab_last_commit_id_guards_only_its_own_file_and_keeps_other_changes() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    fake.commit_file(HISTORY, ISSUE_FILE, "one\n");
    let head_we_read = fake.branch_sha(HISTORY).unwrap();
    fake.commit_file(
        HISTORY,
        "planning_history/issues/2.jsonl",
        "another thread\n",
    );

    let response = update_history(&api, "one\ntwo\n", &head_we_read);

    assert_eq!(response.status, 201, "{}", response.text);
    assert_eq!(
        fake.file_at_ref(HISTORY, ISSUE_FILE).as_deref(),
        Some("one\ntwo\n")
    );
    assert_eq!(
        fake.file_at_ref(HISTORY, "planning_history/issues/2.jsonl")
            .as_deref(),
        Some("another thread\n"),
        "the commit applies on top of the branch, not of the commit we read"
    );
}

#[test]
fn gitlab_commit_actions_refuse_creating_existing_and_updating_missing_files() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let commit = |branch: &str, action: &str, start_branch: Option<&str>| {
        let mut body = json!({
            "branch": branch,
            "commit_message": "history",
            "actions": [{ "action": action, "file_path": ISSUE_FILE, "content": "x\n" }],
        });
        if let Some(start) = start_branch {
            body["start_branch"] = json!(start);
        }
        api.post("/projects/101/repository/commits", &body)
    };

    let no_branch = commit(HISTORY, "create", None);
    assert_eq!(no_branch.status, 400);
    assert_eq!(
        no_branch.json["message"],
        "You can only create or edit files when you are on a branch"
    );

    let created = commit(HISTORY, "create", Some("main"));
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        created.json["parent_ids"],
        json!([fake.branch_sha("main").unwrap()])
    );

    let again = commit(HISTORY, "create", None);
    assert_eq!(again.status, 400);
    assert_eq!(
        again.json["message"],
        "A file with this name already exists"
    );

    let missing = api.post(
        "/projects/101/repository/commits",
        &json!({ "branch": HISTORY, "commit_message": "m",
                 "actions": [{ "action": "update", "file_path": "nope.jsonl", "content": "x" }] }),
    );
    assert_eq!(missing.status, 400);
    assert_eq!(
        missing.json["message"],
        "A file with this name doesn't exist"
    );
}

#[test]
fn gitlab_job_token_is_refused_on_notes_commits_members_and_merge_requests() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    let job = ApiClient::gitlab_job(&fake);

    assert_eq!(job.get("/projects/101").status, 200);
    assert_eq!(
        job.get("/projects/101/repository/files/README.md?ref=main")
            .status,
        200
    );
    assert_eq!(
        job.get("/projects/101/repository/branches/main").status,
        200
    );
    for response in [
        job.post(
            &format!("/projects/101/issues/{iid}/notes"),
            &json!({ "body": "hi" }),
        ),
        job.get(&format!("/projects/101/issues/{iid}/notes")),
        job.post(
            "/projects/101/repository/commits",
            &json!({ "branch": "main", "commit_message": "m", "actions": [] }),
        ),
        job.get("/projects/101/members/all/1"),
        job.post(
            "/projects/101/merge_requests",
            &json!({ "source_branch": "x", "target_branch": "main", "title": "t" }),
        ),
    ] {
        assert_eq!(response.status, 403, "{}", response.text);
        assert_eq!(response.json["error"], "insufficient_scope");
    }
    assert!(fake.notes(Noteable::Issue(iid)).is_empty());
}

#[test]
fn gitlab_auth_accepts_private_token_and_bearer_and_rejects_the_rest() {
    let fake = FakeGitLab::start();
    let bearer = ApiClient::new(
        &fake.api_url(),
        Some(("authorization", &format!("Bearer {}", fake.token()))),
    );
    let wrong = ApiClient::new(&fake.api_url(), Some(("private-token", "nope")));
    let anonymous = ApiClient::new(&fake.api_url(), None);

    assert_eq!(ApiClient::gitlab(&fake).get("/projects/101").status, 200);
    assert_eq!(bearer.get("/projects/octo%2Fwidgets").json["id"], 101);
    for client in [&wrong, &anonymous] {
        let response = client.get("/projects/101");
        assert_eq!(response.status, 401);
        assert_eq!(response.json["message"], "401 Unauthorized");
    }
    assert_eq!(
        ApiClient::gitlab(&fake)
            .get("/projects/octo/widgets")
            .status,
        404,
        "paths must be encoded"
    );
    let logged = fake.requests();
    assert_eq!(logged[0].header("private-token"), Some("<redacted>"));
    assert_eq!(logged[1].header("authorization"), Some("Bearer <redacted>"));
}

#[test]
fn gitlab_notes_list_newest_first_by_default_and_update_with_put() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let iid = fake.seed_issue("Plan", "Please", "alice");
    for index in 1..=3 {
        fake.seed_note(Noteable::Issue(iid), "alice", &format!("note {index}"));
    }
    let notes_url = format!("/projects/101/issues/{iid}/notes");

    let default_order = api.get(&notes_url);
    assert_eq!(default_order.json[0]["body"], "note 3");
    let ascending = api.get(&format!(
        "{notes_url}?sort=asc&order_by=created_at&per_page=2"
    ));
    assert_eq!(ascending.json[0]["body"], "note 1");
    assert_eq!(ascending.header("x-total"), Some("3"));
    assert_eq!(ascending.header("x-next-page"), Some("2"));
    let second = api.get(&ascending.link("next").unwrap());
    assert_eq!(second.json[0]["body"], "note 3");
    assert_eq!(second.header("x-next-page"), Some(""));

    let created = api.post(&notes_url, &json!({ "body": "checklist v1" }));
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["author"]["username"], DEFAULT_ACTOR);
    assert_eq!(created.json["noteable_type"], "Issue");
    let note_url = format!("{notes_url}/{}", created.json["id"]);
    assert_eq!(api.post(&note_url, &json!({ "body": "v2" })).status, 405);
    assert_eq!(api.patch(&note_url, &json!({ "body": "v2" })).status, 405);
    let updated = api.put(&note_url, &json!({ "body": "checklist v2" }));
    assert_eq!(updated.status, 200, "{}", updated.text);
    let id = created.json["id"].as_u64().unwrap();
    assert_eq!(fake.note(id).unwrap().body, "checklist v2");
    assert_eq!(fake.notes(Noteable::Issue(iid)).len(), 4);
    assert_eq!(api.post(&notes_url, &json!({})).status, 400);
}

#[test]
fn gitlab_award_emoji_on_notes_are_unique_per_user() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let iid = fake.seed_issue("Plan", "Please", "alice");
    let note = fake.seed_note(Noteable::Issue(iid), "alice", "/replan");
    let url = format!("/projects/101/issues/{iid}/notes/{note}/award_emoji");

    let first = api.post(&url, &json!({ "name": "eyes" }));
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.json["awardable_type"], "Note");
    let again = api.post(&url, &json!({ "name": "eyes" }));
    assert_eq!(again.status, 404);
    assert_eq!(fake.award_emoji().len(), 1);
}

#[test]
fn gitlab_members_and_users_report_access_levels() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let dev = fake.add_member("devon", access::DEVELOPER);
    let outsider = fake.add_user("olga");

    let users = api.get("/users?username=devon");
    assert_eq!(users.json[0]["id"], dev);
    assert_eq!(api.get("/users?username=ghost").json, json!([]));
    let member = api.get(&format!("/projects/101/members/all/{dev}"));
    assert_eq!(member.status, 200);
    assert_eq!(member.json["access_level"], 30);
    assert_eq!(member.json["username"], "devon");
    let not_member = api.get(&format!("/projects/101/members/all/{outsider}"));
    assert_eq!(not_member.status, 404);
    assert_eq!(not_member.json["message"], "404 Member Not Found");
}

#[test]
fn gitlab_files_need_encoded_paths_and_a_ref() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let commit = fake.commit_file(HISTORY, ISSUE_FILE, "line\n");

    let file = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE_ENCODED}?ref={HISTORY}"
    ));
    assert_eq!(file.status, 200, "{}", file.text);
    assert_eq!(
        file.json["blob_id"],
        json!(TestRepo::empty().hash_object(b"line\n"))
    );
    assert_eq!(file.json["last_commit_id"], json!(commit));
    assert_eq!(file.json["commit_id"], json!(commit));

    let unencoded = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE}?ref={HISTORY}"
    ));
    assert_eq!(unencoded.status, 404);
    let no_ref = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE_ENCODED}"
    ));
    assert_eq!(no_ref.status, 400);
    assert_eq!(no_ref.json["error"], "ref is missing");
    let on_main = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE_ENCODED}?ref=main"
    ));
    assert_eq!(on_main.status, 404);
    assert_eq!(on_main.json["message"], "404 File Not Found");

    let raw = api.get(&format!(
        "/projects/101/repository/files/{ISSUE_FILE_ENCODED}/raw?ref={HISTORY}"
    ));
    assert_eq!(raw.text, "line\n");
    let branch = api.get(&format!("/projects/101/repository/branches/{HISTORY}"));
    assert_eq!(branch.json["commit"]["id"], json!(commit));
    assert_eq!(
        api.get("/projects/101/repository/branches/nope").status,
        404
    );
}

#[test]
fn gitlab_merge_requests_need_a_source_branch_and_are_unique() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let request = json!({
        "source_branch": "replan/issue-1", "target_branch": "main",
        "title": "Replan: add widget", "description": "Closes #1",
    });

    assert_eq!(
        api.post("/projects/101/merge_requests", &request).status,
        400
    );
    fake.commit_file("replan/issue-1", "widget.rs", "fn widget() {}\n");
    let created = api.post("/projects/101/merge_requests", &request);
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["iid"], 1);
    assert!(
        created.json["web_url"]
            .as_str()
            .unwrap()
            .ends_with("/octo/widgets/-/merge_requests/1")
    );
    let duplicate = api.post("/projects/101/merge_requests", &request);
    assert_eq!(duplicate.status, 409);
    assert!(
        duplicate.json["message"][0]
            .as_str()
            .unwrap()
            .contains("already exists")
    );

    let listed = api.get("/projects/101/merge_requests?source_branch=replan%2Fissue-1");
    assert_eq!(listed.json.as_array().unwrap().len(), 1);
    let notes = api.post(
        "/projects/101/merge_requests/1/notes",
        &json!({ "body": "done" }),
    );
    assert_eq!(notes.status, 201);
    assert_eq!(fake.notes(Noteable::MergeRequest(1)).len(), 1);
}

#[test]
fn gitlab_too_many_requests_fault_then_success() {
    let fake = FakeGitLab::start();
    let api = ApiClient::gitlab(&fake);
    let iid = fake.seed_issue("Plan", "Please", "alice");
    fake.push_fault(Fault::too_many_requests(
        "GET",
        "/api/v4/projects/101/issues",
        2,
    ));

    let limited = api.get(&format!("/projects/101/issues/{iid}"));
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("2"));
    let ok = api.get(&format!("/projects/101/issues/{iid}"));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json["state"], "opened");
    assert_eq!(ok.json["author"]["username"], "alice");
}
