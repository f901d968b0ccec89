//! Tests of the test harness itself: the fakes must behave like the real forges where
//! Replan's correctness depends on it (compare-and-swap, auth, PATCH, pagination, faults).

mod gitlab;

use serde_json::{Value, json};

use crate::support::client::{ApiClient, blocking_client, blocking_client_without_user_agent};
use crate::support::fake_github::{DEFAULT_ACTOR, FakeGitHub};
use crate::support::git::git_command;
use crate::support::{ConcurrentChange, Fault, TestRepo};

const HISTORY: &str = "replan-history";
const ISSUE_FILE: &str = "planning_history/issues/1.jsonl";

/// Builds a commit that writes `path` on top of `parent` through the git data API,
/// the way Replan's history store does.
fn commit_on(api: &ApiClient, parent: Option<&str>, path: &str, content: &str) -> String {
    let mut tree_request = json!({
        "tree": [{ "path": path, "mode": "100644", "type": "blob", "content": content }]
    });
    let mut parents = Vec::new();
    if let Some(parent) = parent {
        let commit = api.get(&format!("/repos/octo/widgets/git/commits/{parent}"));
        assert_eq!(commit.status, 200, "{}", commit.text);
        tree_request["base_tree"] = commit.json["tree"]["sha"].clone();
        parents.push(parent.to_string());
    }
    let tree = api.post("/repos/octo/widgets/git/trees", &tree_request);
    assert_eq!(tree.status, 201, "{}", tree.text);
    let commit = api.post(
        "/repos/octo/widgets/git/commits",
        &json!({ "message": format!("Write {path}"), "tree": tree.json["sha"], "parents": parents }),
    );
    assert_eq!(commit.status, 201, "{}", commit.text);
    commit.json["sha"].as_str().unwrap().to_string()
}

fn main_sha(fake: &FakeGitHub) -> String {
    fake.ref_sha("main").expect("main exists")
}

// ----- compare-and-swap on refs

#[test]
fn github_fast_forward_ref_update_is_accepted() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let before = main_sha(&fake);
    let next = commit_on(&api, Some(&before), "notes.txt", "hello\n");

    let response = api.patch(
        "/repos/octo/widgets/git/refs/heads/main",
        &json!({ "sha": next, "force": false }),
    );

    assert_eq!(response.status, 200, "{}", response.text);
    assert_eq!(response.json["object"]["sha"], json!(next));
    assert_eq!(response.json["ref"], "refs/heads/main");
    assert_eq!(fake.ref_sha("main"), Some(next));
    assert_eq!(
        fake.file_at_ref("main", "notes.txt").as_deref(),
        Some("hello\n")
    );
    assert!(
        fake.file_at_ref("main", "README.md").is_some(),
        "base_tree kept README"
    );
}

#[test]
fn github_non_fast_forward_ref_update_is_refused_with_422() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let before = main_sha(&fake);
    let unrelated = commit_on(&api, None, "other.txt", "unrelated\n");

    let response = api.patch(
        "/repos/octo/widgets/git/refs/heads/main",
        &json!({ "sha": unrelated, "force": false }),
    );

    assert_eq!(response.status, 422);
    assert_eq!(response.json["message"], "Update is not a fast forward");
    assert_eq!(fake.ref_sha("main"), Some(before), "the ref did not move");
}

#[test]
fn github_forced_ref_update_is_accepted() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let unrelated = commit_on(&api, None, "other.txt", "unrelated\n");

    let response = api.patch(
        "/repos/octo/widgets/git/refs/heads/main",
        &json!({ "sha": unrelated, "force": true }),
    );

    assert_eq!(response.status, 200, "{}", response.text);
    assert_eq!(fake.ref_sha("main"), Some(unrelated));
}

#[test]
fn github_second_writer_fails_when_another_run_moved_the_ref_first() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    fake.commit_file(HISTORY, ISSUE_FILE, "{\"seq\":1}\n");
    fake.advance_ref_before_next_update(
        HISTORY,
        ISSUE_FILE,
        ConcurrentChange::Append("{\"seq\":2,\"run\":\"other\"}\n".into()),
    );

    // Our run read the ref, then built its commit on what it read.
    let read = api.get("/repos/octo/widgets/git/ref/heads/replan-history");
    assert_eq!(read.status, 200, "{}", read.text);
    let parent = read.json["object"]["sha"].as_str().unwrap().to_string();
    let ours = commit_on(
        &api,
        Some(&parent),
        ISSUE_FILE,
        "{\"seq\":1}\n{\"seq\":2,\"run\":\"ours\"}\n",
    );
    let first_try = api.patch(
        "/repos/octo/widgets/git/refs/heads/replan-history",
        &json!({ "sha": ours, "force": false }),
    );

    assert_eq!(first_try.status, 422);
    assert_eq!(first_try.json["message"], "Update is not a fast forward");
    assert_eq!(
        fake.file_at_ref(HISTORY, ISSUE_FILE).as_deref(),
        Some("{\"seq\":1}\n{\"seq\":2,\"run\":\"other\"}\n"),
        "the other run's entry is what is committed"
    );

    // Re-read, re-append, and the swap succeeds; the hook fired only once.
    let moved = api
        .get("/repos/octo/widgets/git/ref/heads/replan-history")
        .json["object"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(moved, parent);
    let retry = commit_on(
        &api,
        Some(&moved),
        ISSUE_FILE,
        "{\"seq\":1}\n{\"seq\":2,\"run\":\"other\"}\n{\"seq\":3,\"run\":\"ours\"}\n",
    );
    let second_try = api.patch(
        "/repos/octo/widgets/git/refs/heads/replan-history",
        &json!({ "sha": retry, "force": false }),
    );
    assert_eq!(second_try.status, 200, "{}", second_try.text);
    assert_eq!(fake.log(HISTORY).len(), 3);
}

#[test]
fn github_creating_an_existing_ref_is_refused_and_missing_refs_are_404() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let sha = main_sha(&fake);

    let missing = api.get("/repos/octo/widgets/git/ref/heads/replan-history");
    assert_eq!(missing.status, 404);

    let created = api.post(
        "/repos/octo/widgets/git/refs",
        &json!({ "ref": "refs/heads/replan-history", "sha": sha }),
    );
    assert_eq!(created.status, 201, "{}", created.text);
    let again = api.post(
        "/repos/octo/widgets/git/refs",
        &json!({ "ref": "refs/heads/replan-history", "sha": sha }),
    );
    assert_eq!(again.status, 422);
    assert_eq!(again.json["message"], "Reference already exists");

    let bad_name = api.post(
        "/repos/octo/widgets/git/refs",
        &json!({ "ref": "heads/x", "sha": sha }),
    );
    assert_eq!(bad_name.status, 422);
    let patch_missing = api.patch(
        "/repos/octo/widgets/git/refs/heads/nope",
        &json!({ "sha": sha }),
    );
    assert_eq!(patch_missing.status, 422);
    assert_eq!(patch_missing.json["message"], "Reference does not exist");
}

#[test]
fn github_concurrent_branch_creation_makes_the_second_create_fail() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    fake.advance_ref_before_next_update(
        HISTORY,
        ISSUE_FILE,
        ConcurrentChange::Write("{\"run\":\"other\"}\n".into()),
    );
    let ours = commit_on(&api, None, ISSUE_FILE, "{\"run\":\"ours\"}\n");

    let created = api.post(
        "/repos/octo/widgets/git/refs",
        &json!({ "ref": "refs/heads/replan-history", "sha": ours }),
    );

    assert_eq!(created.status, 422);
    assert_eq!(
        fake.file_at_ref(HISTORY, ISSUE_FILE).as_deref(),
        Some("{\"run\":\"other\"}\n")
    );
}

// ----- auth

#[test]
fn github_rejects_missing_and_wrong_tokens_with_401() {
    let fake = FakeGitHub::start();
    fake.seed_issue("Title", "Body", "alice");
    let anonymous = ApiClient::new(&fake.base_url(), None);
    let wrong = ApiClient::new(&fake.base_url(), Some(("authorization", "Bearer nope")));
    let legacy_scheme = ApiClient::new(
        &fake.base_url(),
        Some(("authorization", &format!("token {}", fake.token()))),
    );

    for client in [&anonymous, &wrong] {
        let response = client.get("/repos/octo/widgets/issues/1");
        assert_eq!(response.status, 401);
        assert_eq!(response.json["message"], "Bad credentials");
    }
    assert_eq!(
        legacy_scheme.get("/repos/octo/widgets/issues/1").status,
        200
    );
    assert_eq!(
        ApiClient::github(&fake)
            .get("/repos/octo/widgets/issues/1")
            .status,
        200
    );
}

#[test]
fn github_requires_a_user_agent() {
    let fake = FakeGitHub::start();
    fake.seed_issue("Title", "Body", "alice");

    let response = blocking_client_without_user_agent()
        .get(format!("{}/repos/octo/widgets/issues/1", fake.base_url()))
        .bearer_auth(fake.token())
        .send()
        .unwrap();

    assert_eq!(response.status().as_u16(), 403);
    assert!(response.text().unwrap().contains("User-Agent"));
}

#[test]
fn github_request_log_redacts_the_token() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    ApiClient::github(&fake).post(
        &format!("/repos/octo/widgets/issues/{number}/comments"),
        &json!({ "body": "hi" }),
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].line(),
        "POST /repos/octo/widgets/issues/1/comments"
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer <redacted>")
    );
    assert_eq!(requests[0].json()["body"], "hi");
    assert_eq!(requests[0].status, 201);
    assert!(!format!("{requests:?}").contains(&fake.token()));
}

// ----- issues and comments

#[test]
fn github_comment_updates_need_patch_and_post_is_404() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Plan this", "Please", "alice");
    let created = api.post(
        &format!("/repos/octo/widgets/issues/{number}/comments"),
        &json!({ "body": "checklist v1" }),
    );
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["user"]["login"], DEFAULT_ACTOR);
    assert_eq!(created.json["user"]["type"], "Bot");
    let id = created.json["id"].as_u64().unwrap();
    let url = format!("/repos/octo/widgets/issues/comments/{id}");

    let posted = api.post(&url, &json!({ "body": "checklist v2" }));
    assert_eq!(posted.status, 404, "POST to a comment URL is not an update");
    assert_eq!(fake.comment(id).unwrap().body, "checklist v1");

    let patched = api.patch(&url, &json!({ "body": "checklist v2" }));
    assert_eq!(patched.status, 200, "{}", patched.text);
    let comment = fake.comment(id).unwrap();
    assert_eq!(comment.body, "checklist v2");
    assert!(comment.updated_at > comment.created_at);
    assert_ne!(patched.json["updated_at"], patched.json["created_at"]);
    assert_eq!(fake.comments(number).len(), 1, "updated in place");

    assert_eq!(api.delete(&url).status, 204);
    assert!(fake.comments(number).is_empty());
    assert_eq!(api.get(&url).status, 404);
}

#[test]
fn github_comments_are_paginated_with_link_headers() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Title", "Body", "alice");
    for index in 1..=5 {
        fake.seed_comment(number, "bob", &format!("comment {index}"));
    }

    let first = api.get(&format!(
        "/repos/octo/widgets/issues/{number}/comments?per_page=2"
    ));
    assert_eq!(first.status, 200);
    assert_eq!(first.json.as_array().unwrap().len(), 2);
    assert!(first.link("last").unwrap().contains("page=3"));
    assert!(first.link("prev").is_none());

    let mut bodies = Vec::new();
    let mut page = Some(first);
    while let Some(response) = page {
        for comment in response.json.as_array().unwrap() {
            bodies.push(comment["body"].as_str().unwrap().to_string());
        }
        page = response.link("next").map(|next| api.get(&next));
    }
    assert_eq!(
        bodies,
        (1..=5)
            .map(|index| format!("comment {index}"))
            .collect::<Vec<_>>()
    );

    let unpaged = api.get(&format!("/repos/octo/widgets/issues/{number}/comments"));
    assert_eq!(unpaged.json.as_array().unwrap().len(), 5);
    assert!(unpaged.header("link").is_none());
}

#[test]
fn github_issue_shows_labels_author_and_pull_request_marker() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Add a widget", "Details", "alice");
    fake.with_issue(number, |issue| issue.labels.push("replan".into()));
    fake.add_collaborator("alice", "write");

    let issue = api.get(&format!("/repos/octo/widgets/issues/{number}"));

    assert_eq!(issue.status, 200);
    assert_eq!(issue.json["title"], "Add a widget");
    assert_eq!(issue.json["user"]["login"], "alice");
    assert_eq!(issue.json["user"]["type"], "User");
    assert_eq!(issue.json["labels"][0]["name"], "replan");
    assert_eq!(issue.json["author_association"], "COLLABORATOR");
    assert!(issue.json.get("pull_request").is_none());
    assert_eq!(api.get("/repos/octo/widgets/issues/99").status, 404);
    assert_eq!(api.get("/repos/someone/else/issues/1").status, 404);
}

#[test]
fn github_reactions_are_created_once_per_user_and_content() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Title", "Body", "alice");
    let comment = fake.seed_comment(number, "alice", "/replan");
    let url = format!("/repos/octo/widgets/issues/comments/{comment}/reactions");

    assert_eq!(api.post(&url, &json!({ "content": "eyes" })).status, 201);
    assert_eq!(api.post(&url, &json!({ "content": "eyes" })).status, 200);
    assert_eq!(
        api.post(&url, &json!({ "content": "thumbsup" })).status,
        422
    );
    assert_eq!(
        api.post(
            &format!("/repos/octo/widgets/issues/{number}/reactions"),
            &json!({ "content": "rocket" })
        )
        .status,
        201
    );

    let reactions = fake.reactions();
    assert_eq!(reactions.len(), 2);
    assert_eq!(reactions[0].content, "eyes");
    assert_eq!(reactions[0].user, DEFAULT_ACTOR);
}

#[test]
fn github_permission_reports_legacy_permission_and_role_name() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    fake.add_collaborator("maya", "maintain");
    fake.add_collaborator("tom", "triage");
    fake.add_collaborator("Ada", "admin");

    let maya = api.get("/repos/octo/widgets/collaborators/maya/permission");
    assert_eq!(maya.status, 200);
    assert_eq!(maya.json["permission"], "write");
    assert_eq!(maya.json["role_name"], "maintain");
    assert_eq!(maya.json["user"]["permissions"]["push"], true);

    let tom = api.get("/repos/octo/widgets/collaborators/tom/permission");
    assert_eq!(tom.json["permission"], "read");
    assert_eq!(tom.json["role_name"], "triage");
    assert_eq!(tom.json["user"]["permissions"]["push"], false);

    let ada = api.get("/repos/octo/widgets/collaborators/ada/permission");
    assert_eq!(
        ada.json["permission"], "admin",
        "logins are case-insensitive"
    );

    assert_eq!(
        api.get("/repos/octo/widgets/collaborators/ghost/permission")
            .status,
        404
    );
}

// ----- faults

#[test]
fn github_fault_answers_500_then_the_fake_recovers() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::server_error("GET", "/repos/octo/widgets/issues/").times(2));

    let path = format!("/repos/octo/widgets/issues/{number}");
    assert_eq!(api.get(&path).status, 500);
    assert_eq!(api.get(&path).status, 500);
    assert_eq!(api.get(&path).status, 200);
    assert_eq!(fake.pending_faults(), 0);
    let statuses: Vec<u16> = fake
        .requests()
        .iter()
        .map(|request| request.status)
        .collect();
    assert_eq!(statuses, vec![500, 500, 200]);
}

#[test]
fn github_faults_match_method_and_path_prefix_only() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::bad_gateway("POST", "/repos/octo/widgets/issues/"));

    assert_eq!(
        api.get(&format!("/repos/octo/widgets/issues/{number}"))
            .status,
        200
    );
    assert_eq!(
        api.get("/repos/octo/widgets/git/ref/heads/main").status,
        200
    );
    let posted = api.post(
        &format!("/repos/octo/widgets/issues/{number}/comments"),
        &json!({ "body": "x" }),
    );
    assert_eq!(posted.status, 502);
    assert!(
        fake.comments(number).is_empty(),
        "a faulted request changes nothing"
    );
}

#[test]
fn github_rate_limit_faults_carry_their_headers() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    fake.push_fault(Fault::github_rate_limit("*", "/repos/", 1_714_568_400));
    fake.push_fault(Fault::github_secondary_rate_limit("*", "/repos/", 7));
    fake.push_fault(Fault::too_many_requests("*", "/repos/", 3));

    let primary = api.get("/repos/octo/widgets");
    assert_eq!(primary.status, 403);
    assert_eq!(primary.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(primary.header("x-ratelimit-reset"), Some("1714568400"));
    assert!(
        primary.json["message"]
            .as_str()
            .unwrap()
            .contains("rate limit")
    );

    let secondary = api.get("/repos/octo/widgets");
    assert_eq!(secondary.status, 403);
    assert_eq!(secondary.header("retry-after"), Some("7"));
    assert!(
        secondary.json["message"]
            .as_str()
            .unwrap()
            .contains("secondary rate limit")
    );

    let too_many = api.get("/repos/octo/widgets");
    assert_eq!(too_many.status, 429);
    assert_eq!(too_many.header("retry-after"), Some("3"));

    let normal = api.get("/repos/octo/widgets");
    assert_eq!(normal.status, 200);
    assert_eq!(normal.json["default_branch"], "main");
    assert_eq!(normal.header("x-ratelimit-remaining"), Some("4999"));
}

#[test]
fn github_slow_fault_delays_the_answer_past_a_client_timeout() {
    let fake = FakeGitHub::start();
    fake.push_fault(Fault::slow(
        "GET",
        "/repos/octo/widgets",
        std::time::Duration::from_millis(400),
    ));
    crate::support::client::install_crypto_provider();
    let impatient = reqwest::blocking::Client::builder()
        .user_agent("replan-tests")
        .timeout(std::time::Duration::from_millis(100))
        .build()
        .unwrap();
    let url = format!("{}/repos/octo/widgets", fake.base_url());

    let timed_out = impatient.get(&url).bearer_auth(fake.token()).send();
    let answered = impatient.get(&url).bearer_auth(fake.token()).send();

    assert!(timed_out.unwrap_err().is_timeout());
    assert_eq!(
        answered.unwrap().status().as_u16(),
        200,
        "the delay was used up"
    );
}

// ----- git objects against real git

#[test]
fn github_blob_ids_equal_git_hash_object() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let repo = TestRepo::new();
    let binary: Vec<u8> = (0u8..=255).collect();

    for (content, request) in [
        (
            b"hello\n".to_vec(),
            json!({ "content": "hello\n", "encoding": "utf-8" }),
        ),
        (Vec::new(), json!({ "content": "" })),
        (
            binary.clone(),
            json!({
                "content": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &binary),
                "encoding": "base64"
            }),
        ),
    ] {
        let created = api.post("/repos/octo/widgets/git/blobs", &request);
        assert_eq!(created.status, 201, "{}", created.text);
        assert_eq!(created.json["sha"], json!(repo.hash_object(&content)));
        let read = api.get(&format!(
            "/repos/octo/widgets/git/blobs/{}",
            created.json["sha"].as_str().unwrap()
        ));
        let encoded: String = read.json["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .collect();
        let decoded =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded).unwrap();
        assert_eq!(decoded, content);
    }
}

#[test]
fn github_tree_and_commit_ids_equal_what_git_computes() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let repo = TestRepo::empty();
    // Names chosen to exercise git's ordering of trees ("a/" sorts after "a-b", before "a0").
    let files = [
        ("a-b", "dash\n"),
        ("a/b.txt", "nested\n"),
        ("a/c/d.jsonl", "{}\n"),
        ("a0", "zero\n"),
        ("README.md", "# readme\n"),
    ];
    for (path, content) in files {
        repo.write(path, content);
    }
    repo.run_git(&["add", "-A"]);
    let git_tree = repo.run_git(&["write-tree"]);

    let entries: Vec<Value> = files
        .iter()
        .map(|(path, content)| json!({ "path": path, "mode": "100644", "type": "blob", "content": content }))
        .collect();
    let tree = api.post("/repos/octo/widgets/git/trees", &json!({ "tree": entries }));
    assert_eq!(tree.status, 201, "{}", tree.text);
    assert_eq!(tree.json["sha"], json!(git_tree));

    let commit = api.post(
        "/repos/octo/widgets/git/commits",
        &json!({
            "message": "Record history\n",
            "tree": git_tree,
            "parents": [],
            "author": { "name": "Replan", "email": "replan@example.com", "date": "2024-05-01T12:00:00Z" },
        }),
    );
    assert_eq!(commit.status, 201, "{}", commit.text);
    let output = git_command(repo.path())
        .args(["commit-tree", &git_tree, "-m", "Record history"])
        .env("GIT_AUTHOR_NAME", "Replan")
        .env("GIT_AUTHOR_EMAIL", "replan@example.com")
        .env("GIT_AUTHOR_DATE", "1714564800 +0000")
        .env("GIT_COMMITTER_NAME", "Replan")
        .env("GIT_COMMITTER_EMAIL", "replan@example.com")
        .env("GIT_COMMITTER_DATE", "1714564800 +0000")
        .output()
        .unwrap();
    let git_commit = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert_eq!(commit.json["sha"], json!(git_commit));
}

#[test]
fn github_trees_edit_a_base_tree_and_read_back_recursively() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    fake.commit_file(HISTORY, "planning_history/issues/1.jsonl", "one\n");
    fake.commit_file(HISTORY, "planning_history/issues/2.jsonl", "two\n");
    let head = fake.ref_sha(HISTORY).unwrap();
    let base_tree = fake.commit(&head).unwrap().tree;

    let edited = api.post(
        "/repos/octo/widgets/git/trees",
        &json!({ "base_tree": base_tree, "tree": [
            { "path": "planning_history/issues/2.jsonl", "mode": "100644", "type": "blob", "sha": null },
            { "path": "planning_history/pulls/3.jsonl", "mode": "100644", "type": "blob", "content": "three\n" },
        ]}),
    );
    assert_eq!(edited.status, 201, "{}", edited.text);

    let listing = api.get(&format!(
        "/repos/octo/widgets/git/trees/{}?recursive=1",
        edited.json["sha"].as_str().unwrap()
    ));
    let paths: Vec<&str> = listing.json["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec![
            "planning_history",
            "planning_history/issues",
            "planning_history/issues/1.jsonl",
            "planning_history/pulls",
            "planning_history/pulls/3.jsonl",
        ]
    );
    let top = api.get(&format!(
        "/repos/octo/widgets/git/trees/{}",
        edited.json["sha"].as_str().unwrap()
    ));
    assert_eq!(top.json["tree"].as_array().unwrap().len(), 1);
}

#[test]
fn github_contents_api_reads_a_file_at_a_ref() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let long_line = "x".repeat(100);
    fake.commit_file(HISTORY, ISSUE_FILE, &format!("{long_line}\n"));

    let file = api.get(&format!(
        "/repos/octo/widgets/contents/{ISSUE_FILE}?ref={HISTORY}"
    ));
    assert_eq!(file.status, 200, "{}", file.text);
    assert_eq!(file.json["encoding"], "base64");
    let content = file.json["content"].as_str().unwrap();
    assert!(content.contains('\n'), "GitHub wraps base64 content");
    let compact: String = content.split_whitespace().collect();
    let decoded =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, compact).unwrap();
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        format!("{long_line}\n")
    );
    let blob_sha = file.json["sha"].as_str().unwrap();
    assert_eq!(
        blob_sha,
        TestRepo::empty().hash_object(format!("{long_line}\n").as_bytes())
    );

    assert_eq!(
        api.get(&format!("/repos/octo/widgets/contents/{ISSUE_FILE}"))
            .status,
        404,
        "not on main"
    );
    assert_eq!(
        api.get("/repos/octo/widgets/contents/README.md").status,
        200
    );
    assert_eq!(
        api.get("/repos/octo/widgets/contents/README.md?ref=nope")
            .status,
        404
    );
    let dir = api.get(&format!(
        "/repos/octo/widgets/contents/planning_history/issues?ref={HISTORY}"
    ));
    assert_eq!(dir.json[0]["name"], "1.jsonl");
}

// ----- pull requests

#[test]
fn github_pull_requests_need_a_head_branch_with_commits_and_are_unique() {
    let fake = FakeGitHub::start();
    let api = ApiClient::github(&fake);
    let request = json!({ "title": "Replan: add widget", "head": "replan/issue-1", "base": "main", "body": "Closes #1" });

    let missing_head = api.post("/repos/octo/widgets/pulls", &request);
    assert_eq!(missing_head.status, 422);
    assert_eq!(missing_head.json["errors"][0]["field"], "head");

    fake.set_ref("replan/issue-1", &main_sha(&fake));
    let no_commits = api.post("/repos/octo/widgets/pulls", &request);
    assert_eq!(no_commits.status, 422);

    let main = main_sha(&fake);
    let change = commit_on(&api, Some(&main), "widget.rs", "fn widget() {}\n");
    fake.set_ref("replan/issue-1", &change);
    let created = api.post("/repos/octo/widgets/pulls", &request);
    assert_eq!(created.status, 201, "{}", created.text);
    let number = created.json["number"].as_u64().unwrap();
    assert_eq!(
        created.json["html_url"],
        format!("https://github.com/octo/widgets/pull/{number}")
    );
    assert_eq!(created.json["head"]["sha"], json!(change));
    assert!(fake.issue(number).unwrap().pull_request);

    let duplicate = api.post("/repos/octo/widgets/pulls", &request);
    assert_eq!(duplicate.status, 422);
    assert!(
        duplicate.json["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );

    let by_head = api.get("/repos/octo/widgets/pulls?head=octo:replan/issue-1");
    assert_eq!(by_head.json.as_array().unwrap().len(), 1);
    let other_head = api.get("/repos/octo/widgets/pulls?head=octo:other");
    assert_eq!(other_head.json.as_array().unwrap().len(), 0);
    let without_owner = api.get("/repos/octo/widgets/pulls?head=other");
    assert_eq!(
        without_owner.json.as_array().unwrap().len(),
        1,
        "GitHub ignores head= without owner:"
    );
    assert_eq!(fake.pull_requests().len(), 1);
}

// ----- servers in async tests

#[tokio::test]
async fn fake_github_serves_async_clients_inside_tokio_tests() {
    crate::support::client::install_crypto_provider();
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Async", "Body", "alice");
    let client = reqwest::Client::builder()
        .user_agent("replan-tests")
        .build()
        .unwrap();

    let response = client
        .get(format!(
            "{}/repos/octo/widgets/issues/{number}",
            fake.base_url()
        ))
        .bearer_auth(fake.token())
        .send()
        .await
        .unwrap();

    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["title"], "Async");
}

#[test]
fn dropping_a_fake_stops_its_server() {
    let fake = FakeGitHub::start();
    let url = format!("{}/repos/octo/widgets", fake.base_url());
    drop(fake);

    let result = blocking_client().get(url).send();

    assert!(result.is_err(), "the port no longer answers");
}

// ----- real git repositories

#[test]
fn test_repo_clones_pushes_and_inspects_branches() {
    let remote = TestRepo::bare();
    let seed = TestRepo::new();
    seed.run_git(&["remote", "add", "origin", &remote.url()]);
    seed.run_git(&["push", "-q", "origin", "main"]);

    let clone = TestRepo::clone_from(&remote);
    clone.run_git(&["switch", "-q", "-c", "feature"]);
    clone.write("src/lib.rs", "pub fn f() {}\n");
    let head = clone.commit_all("Add f");

    assert_eq!(clone.head(), head);
    assert_eq!(
        clone.branches(),
        vec!["feature".to_string(), "main".to_string()]
    );
    assert_eq!(clone.show("feature:src/lib.rs"), "pub fn f() {}\n");
    assert_eq!(clone.try_show("main:src/lib.rs"), None);
    assert_eq!(
        clone.log("feature"),
        vec!["Add f".to_string(), "Initial commit".to_string()]
    );
    assert!(remote.is_bare());
    assert_eq!(remote.rev_parse("main"), seed.rev_parse("main"));
    assert!(clone.try_git(&["rev-parse", "--verify", "nope"]).is_err());
}
