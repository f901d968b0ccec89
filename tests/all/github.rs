//! The GitHub forge, client and history branch against the fake GitHub API; the end-to-end runs
//! of the built binary are in `github/e2e.rs`.

mod contention_runs;
mod e2e;
mod gate;
mod kill_resume;
pub(crate) mod local_run;
mod prism;
pub(crate) mod review_loop;
mod same_origin;

/// Shared by the runs of the binary (the GitLab runs too).
pub(crate) mod e2e_support {
    pub use super::e2e::ci_round::{FAILURE_LINE, FIXES_THE_FAILURE};
    pub use super::e2e::scenario;
    pub use super::local_run::{checkout, issue_7_run, local_replan};
}

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{TimeZone, Utc};
use replan::forge::github::{
    GitHubClient, GitHubForge, GitHubHistory, GitHubSettings, RetryPolicy,
};
use replan::forge::{
    CommentRef, Forge, ForgeError, Permission, PullRequestRequest, Reaction, ReactionTarget,
};
use replan::history::{Entry, EntryBody, HistoryBackend, HistoryError, jsonl};
use replan::trigger::ThreadRef;

use crate::support::client::install_crypto_provider;
use crate::support::{ConcurrentChange, FakeGitHub, Fault};

const BRANCH: &str = "replan-history";
const ISSUE_FILE: &str = "planning_history/issues/1.jsonl";

pub(crate) fn settings(fake: &FakeGitHub) -> GitHubSettings {
    GitHubSettings {
        api_url: fake.base_url(),
        token: fake.token(),
        repo: fake.repo(),
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(20),
            max_rate_limit_wait: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
        },
        max_body_bytes: replan::http::DEFAULT_MAX_BODY_BYTES,
    }
}

fn client(fake: &FakeGitHub) -> Arc<GitHubClient> {
    install_crypto_provider();
    Arc::new(GitHubClient::new(settings(fake)).expect("client"))
}

fn forge(fake: &FakeGitHub) -> GitHubForge {
    GitHubForge::new(client(fake))
}

fn history(fake: &FakeGitHub) -> GitHubHistory {
    GitHubHistory::new(client(fake), BRANCH, "planning_history")
}

fn answer(run: &str, text: &str) -> Entry {
    Entry {
        v: 1,
        seq: 0,
        ts: Utc.timestamp_opt(1_714_564_800, 0).unwrap(),
        run_id: run.to_owned(),
        body: EntryBody::Answer {
            author: "alice".into(),
            text: text.into(),
            assumed: false,
        },
    }
}

/// Issue 1's history with one line, "base", appended by `run-1`.
async fn with_base_line(backend: &GitHubHistory) -> ThreadRef {
    let thread = ThreadRef::issue(1);
    backend
        .append(&thread, &[answer("run-1", "base")])
        .await
        .unwrap();
    thread
}

/// The next `times` updates of the history ref answer `status` with `message`.
/// An append is one `PUT` of the thread's file through the contents API.
const ISSUE_FILE_PUT: &str = "/repos/octo/widgets/contents/planning_history/issues/1.jsonl";

fn refuse_file_writes(fake: &FakeGitHub, status: u16, message: &str, times: usize) {
    fake.push_fault(
        Fault::new("PUT", ISSUE_FILE_PUT, status)
            .body(serde_json::json!({ "message": message }))
            .times(times),
    );
}

/// GitHub's answer to a write that names another blob than the file's.
const FILE_CHANGED: &str =
    "planning_history/issues/1.jsonl does not match 0123456789abcdef0123456789abcdef01234567";

fn texts(file: &str) -> Vec<(u64, String)> {
    jsonl::parse(file)
        .entries
        .into_iter()
        .map(|e| match e.body {
            EntryBody::Answer { text, .. } => (e.seq, text),
            other => (e.seq, other.type_name().to_owned()),
        })
        .collect()
}

// ----- history branch

#[tokio::test]
async fn github_history_first_append_creates_the_orphan_branch() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = ThreadRef::issue(1);
    assert_eq!(backend.load(&thread).await.unwrap().text, "");

    let outcome = backend
        .append(
            &thread,
            &[answer("run-1", "first"), answer("run-1", "second")],
        )
        .await
        .unwrap();

    let tip = fake.ref_sha(BRANCH).expect("the branch was created");
    assert_eq!(outcome.commit.as_deref(), Some(tip.as_str()));
    assert_eq!(outcome.first_seq, 1);
    assert!(
        fake.commit(&tip).unwrap().parents.is_empty(),
        "the history branch starts as an orphan, sharing nothing with main"
    );
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert_eq!(
        texts(&file),
        vec![(1, "first".to_owned()), (2, "second".to_owned())]
    );
    assert!(fake.file_at_ref(BRANCH, "README.md").is_none());
    let created = fake.requests_to("POST", "/repos/octo/widgets/git/refs");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].json()["ref"], "refs/heads/replan-history");
    // Read back through the backend too.
    assert_eq!(backend.load(&thread).await.unwrap().text, file);
    assert_eq!(backend.threads().await.unwrap(), vec![thread]);
}

#[tokio::test]
async fn github_history_concurrent_writer_loses_no_entry() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = ThreadRef::issue(1);
    backend
        .append(&thread, &[answer("run-1", "ours before")])
        .await
        .unwrap();
    let theirs = jsonl::to_line(&Entry {
        seq: 2,
        ..answer("run-2", "theirs")
    });
    fake.advance_ref_before_next_update(
        BRANCH,
        ISSUE_FILE,
        ConcurrentChange::Append(format!("{theirs}\n")),
    );

    let outcome = backend
        .append(&thread, &[answer("run-1", "ours after")])
        .await
        .unwrap();

    assert_eq!(outcome.conflicts, 1, "the first write met a changed file");
    assert_eq!(
        outcome.first_seq, 3,
        "renumbered after the other run's line"
    );
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert_eq!(
        texts(&file),
        vec![
            (1, "ours before".to_owned()),
            (2, "theirs".to_owned()),
            (3, "ours after".to_owned())
        ]
    );
    // Each write names the blob it read: the one before the other run's line, then the one
    // after it.
    let writes = fake.requests_to("PUT", ISSUE_FILE_PUT);
    assert_eq!(writes.len(), 2);
    assert_eq!(writes[0].status, 409);
    assert_eq!(writes[1].status, 200);
    assert_ne!(writes[0].json()["sha"], writes[1].json()["sha"]);
    assert!(writes.iter().all(|w| w.json()["branch"] == BRANCH));
    assert!(
        fake.requests_to("PATCH", "/repos/octo/widgets/git/refs/heads/replan-history")
            .is_empty(),
        "the contents API moves the branch itself"
    );
}

#[tokio::test]
async fn github_history_append_is_one_request_and_another_threads_write_costs_no_retry() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = with_base_line(&backend).await;
    let other_file = "planning_history/issues/2.jsonl";
    let theirs = jsonl::to_line(&Entry {
        seq: 1,
        ..answer("run-2", "another thread")
    });
    fake.advance_ref_before_next_update(
        BRANCH,
        other_file,
        ConcurrentChange::Write(format!("{theirs}\n")),
    );
    fake.clear_requests();

    let outcome = backend
        .append(&thread, &[answer("run-1", "ours")])
        .await
        .unwrap();

    assert_eq!(outcome.conflicts, 0, "the other run wrote another file");
    let requests: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(requests, vec![format!("PUT {ISSUE_FILE_PUT}")]);
    assert_eq!(
        texts(&fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap()),
        vec![(1, "base".to_owned()), (2, "ours".to_owned())]
    );
    assert_eq!(
        texts(&fake.file_at_ref(BRANCH, other_file).unwrap()),
        vec![(1, "another thread".to_owned())]
    );
    // The commit went on the other run's: nothing of it was lost.
    let head = fake.ref_sha(BRANCH).unwrap();
    assert_eq!(outcome.commit.as_deref(), Some(head.as_str()));
}

#[tokio::test]
async fn github_history_branch_created_by_another_run_meanwhile_is_appended_to() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = ThreadRef::issue(1);
    let theirs = jsonl::to_line(&Entry {
        seq: 1,
        ..answer("run-2", "theirs")
    });
    fake.advance_ref_before_next_update(
        BRANCH,
        ISSUE_FILE,
        ConcurrentChange::Write(format!("{theirs}\n")),
    );

    let outcome = backend
        .append(&thread, &[answer("run-1", "ours")])
        .await
        .unwrap();

    assert_eq!(outcome.conflicts, 1);
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert_eq!(
        texts(&file),
        vec![(1, "theirs".to_owned()), (2, "ours".to_owned())]
    );
}

#[tokio::test]
async fn github_history_keeps_retrying_while_the_branch_moves_and_lands() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = with_base_line(&backend).await;
    // Another writer wins the race ten times in a row: more than any attempt count used to allow.
    refuse_file_writes(&fake, 409, FILE_CHANGED, 10);

    let outcome = backend
        .append(&thread, &[answer("run-1", "late")])
        .await
        .unwrap();

    assert_eq!(outcome.conflicts, 10);
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert_eq!(
        texts(&file),
        vec![(1, "base".to_owned()), (2, "late".to_owned())]
    );
}

#[tokio::test]
async fn github_history_gives_up_only_when_its_time_is_up_and_says_so() {
    let fake = FakeGitHub::start();
    let backend = history(&fake).with_append_timeout(Duration::from_millis(300));
    let thread = with_base_line(&backend).await;
    refuse_file_writes(&fake, 409, FILE_CHANGED, 10_000);
    let started = Instant::now();

    let err = backend
        .append(&thread, &[answer("run-1", "late")])
        .await
        .unwrap_err();

    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        matches!(err, HistoryError::ConflictRetriesExhausted { .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(message.contains(ISSUE_FILE), "{message}");
    assert!(
        message.contains("history.append_timeout_seconds"),
        "{message}"
    );
    // The line that was there is still there; nothing half-written.
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert_eq!(texts(&file), vec![(1, "base".to_owned())]);
}

#[tokio::test]
async fn github_history_stops_at_once_on_a_real_error() {
    let fake = FakeGitHub::start();
    let backend = history(&fake);
    let thread = with_base_line(&backend).await;
    refuse_file_writes(&fake, 403, "Resource not accessible by integration", 10);

    let err = backend
        .append(&thread, &[answer("run-1", "late")])
        .await
        .unwrap_err();

    assert!(matches!(err, HistoryError::Backend(_)), "{err}");
    assert_eq!(
        fake.requests_to("PUT", ISSUE_FILE_PUT).len(),
        1,
        "one refused attempt (the first append created the branch), no retries"
    );
}

#[tokio::test]
async fn github_history_append_keeps_earlier_bytes_that_are_not_utf8() {
    let fake = FakeGitHub::start();
    let good = jsonl::to_line(&Entry {
        seq: 1,
        ..answer("old", "kept")
    });
    let mut old = format!("{good}\n").into_bytes();
    old.extend_from_slice(b"{\"v\":1,\"seq\":2,\"broken\":\"\xff\xfe\"}\n");
    fake.commit_file_bytes(BRANCH, ISSUE_FILE, &old);
    let backend = history(&fake);
    let thread = ThreadRef::issue(1);

    let loaded = backend.load(&thread).await.unwrap();
    let parsed = jsonl::parse(&loaded.text);
    assert_eq!(parsed.corrupt.len(), 1, "{:?}", parsed.corrupt);
    assert_eq!(parsed.corrupt[0].line_no, 2);
    assert!(parsed.corrupt[0].error.contains("UTF-8"));
    backend
        .append(&thread, &[answer("run", "new")])
        .await
        .unwrap();

    let file = fake.file_bytes_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert!(file.starts_with(&old), "earlier lines kept byte for byte");
    let tail = std::str::from_utf8(&file[old.len()..]).unwrap();
    assert_eq!(texts(tail), vec![(3, "new".to_owned())]);
}

#[tokio::test]
async fn github_history_is_read_with_the_ref_the_commit_and_the_file_in_three_requests() {
    let fake = FakeGitHub::start();
    let good = jsonl::to_line(&Entry {
        seq: 1,
        ..answer("old", "kept")
    });
    fake.commit_file(BRANCH, ISSUE_FILE, &format!("{good}\n"));
    let backend = history(&fake);
    fake.clear_requests();

    let loaded = backend.load(&ThreadRef::issue(1)).await.unwrap();

    assert_eq!(texts(&loaded.text), vec![(1, "kept".to_owned())]);
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        sent[0],
        "GET /repos/octo/widgets/git/ref/heads/replan-history"
    );
    let tip = fake.ref_sha(BRANCH).unwrap();
    assert!(
        sent.contains(&format!("GET /repos/octo/widgets/git/commits/{tip}")),
        "{sent:?}"
    );
    // The file at the commit the ref named, not at whatever the branch is by then.
    let contents = fake.requests_to("GET", "/repos/octo/widgets/contents/");
    assert_eq!(contents.len(), 1, "{sent:?}");
    assert_eq!(
        contents[0].path,
        "/repos/octo/widgets/contents/planning_history/issues/1.jsonl"
    );
    assert_eq!(contents[0].query, format!("ref={tip}"));
}

#[tokio::test]
async fn github_history_over_a_megabyte_is_read_from_its_blob_and_appended_to() {
    let fake = FakeGitHub::start();
    let line = jsonl::to_line(&Entry {
        seq: 1,
        ..answer("old", &"x".repeat(1024))
    });
    let old = format!("{line}\n").repeat(1100);
    assert!(old.len() > 1024 * 1024);
    fake.commit_file(BRANCH, ISSUE_FILE, &old);
    let backend = history(&fake);
    let thread = ThreadRef::issue(1);

    let loaded = backend.load(&thread).await.unwrap();
    assert_eq!(loaded.text, old);
    assert_eq!(
        fake.requests_to("GET", "/repos/octo/widgets/git/blobs/")
            .len(),
        1,
        "the contents API refuses the file; its blob is read"
    );
    backend
        .append(&thread, &[answer("run", "new")])
        .await
        .unwrap();
    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert!(file.starts_with(&old));
    assert_eq!(jsonl::parse(&file).entries.len(), 1101);
}

#[tokio::test]
async fn github_history_keeps_corrupt_lines_and_numbers_after_them() {
    let fake = FakeGitHub::start();
    let good = jsonl::to_line(&Entry {
        seq: 4,
        ..answer("old", "kept")
    });
    fake.commit_file(BRANCH, ISSUE_FILE, &format!("{good}\n{{not json\n"));
    let backend = history(&fake);

    backend
        .append(&ThreadRef::issue(1), &[answer("run", "new")])
        .await
        .unwrap();

    let file = fake.file_at_ref(BRANCH, ISSUE_FILE).unwrap();
    assert!(file.contains("{not json\n"), "{file}");
    let parsed = jsonl::parse(&file);
    assert_eq!(parsed.corrupt.len(), 1);
    assert_eq!(
        parsed.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![4, 5]
    );
}

// ----- client: retries and errors

#[tokio::test]
async fn github_server_error_then_success_is_retried() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::server_error("GET", "/repos/octo/widgets/issues/").times(2));

    let thread = forge(&fake)
        .thread(&ThreadRef::issue(number))
        .await
        .unwrap();

    assert_eq!(thread.title, "Title");
    let gets = fake.requests_to("GET", &format!("/repos/octo/widgets/issues/{number}"));
    assert_eq!(
        gets.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![500, 500, 200]
    );
}

#[tokio::test]
async fn github_persistent_server_error_fails_with_the_status_after_bounded_attempts() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::bad_gateway("GET", "/repos/octo/widgets/issues/").times(10));

    let err = forge(&fake)
        .thread(&ThreadRef::issue(number))
        .await
        .unwrap_err();

    assert!(
        matches!(err, ForgeError::Server { status: 502, .. }),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 4, "max_attempts bounds the retries");
}

#[tokio::test]
async fn github_primary_rate_limit_waits_for_the_reset() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    fake.push_fault(Fault::github_rate_limit(
        "POST",
        "/repos/octo/widgets/issues/",
        now + 1,
    ));
    let started = Instant::now();

    forge(&fake)
        .post_comment(&ThreadRef::issue(number), "hello")
        .await
        .unwrap();

    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited for x-ratelimit-reset, not immediately: {:?}",
        started.elapsed()
    );
    assert_eq!(fake.comments(number).len(), 1, "posted exactly once");
}

#[tokio::test]
async fn github_rate_limit_reset_beyond_the_cap_fails_as_rate_limited() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    fake.push_fault(Fault::github_rate_limit(
        "POST",
        "/repos/octo/widgets/issues/",
        now + 3600,
    ));

    let err = forge(&fake)
        .post_comment(&ThreadRef::issue(number), "hello")
        .await
        .unwrap_err();

    match err {
        ForgeError::RateLimited {
            retry_after_secs, ..
        } => assert!(retry_after_secs > 3000),
        other => panic!("expected RateLimited, got {other}"),
    }
    assert!(fake.comments(number).is_empty());
}

#[tokio::test]
async fn github_secondary_rate_limit_and_429_honour_retry_after() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::github_secondary_rate_limit(
        "GET",
        "/repos/octo/widgets/issues/",
        1,
    ));
    fake.push_fault(Fault::too_many_requests(
        "GET",
        "/repos/octo/widgets/issues/",
        1,
    ));
    let started = Instant::now();

    let thread = forge(&fake)
        .thread(&ThreadRef::issue(number))
        .await
        .unwrap();

    assert_eq!(thread.title, "Title");
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "waited Retry-After twice: {:?}",
        started.elapsed()
    );
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![403, 429, 200]);
}

#[tokio::test]
async fn github_bad_token_says_to_check_the_token() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    let mut bad = settings(&fake);
    bad.token = "ghs_WrongToken000000000000000000000".into();
    install_crypto_provider();
    let forge = GitHubForge::new(Arc::new(GitHubClient::new(bad).unwrap()));

    let err = forge
        .post_comment(&ThreadRef::issue(number), "hi")
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("check that the token"), "{message}");
    assert!(!message.contains("WrongToken"), "{message}");
    assert_eq!(fake.requests().len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn github_forbidden_comment_names_the_workflow_permission() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(Fault::new("POST", "/repos/octo/widgets/issues/", 403).body(
        serde_json::json!({
            "message": "Resource not accessible by integration"
        }),
    ));

    let err = forge(&fake)
        .post_comment(&ThreadRef::issue(number), "hi")
        .await
        .unwrap_err();

    let message = err.to_string();
    assert!(message.contains("permissions: issues: write"), "{message}");
    assert!(message.contains("Resource not accessible"), "{message}");
}

#[tokio::test]
async fn github_requests_carry_user_agent_accept_and_api_version() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");

    forge(&fake)
        .thread(&ThreadRef::issue(number))
        .await
        .unwrap();

    let request = &fake.requests()[0];
    assert!(request.header("user-agent").unwrap().starts_with("replan/"));
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.github+json")
    );
    assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(request.header("authorization"), Some("Bearer <redacted>"));
}

// ----- forge

#[tokio::test]
async fn github_comment_update_uses_patch() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    let forge = forge(&fake);
    let thread = ThreadRef::issue(number);

    let posted = forge.post_comment(&thread, "v1").await.unwrap();
    forge
        .update_comment(
            CommentRef {
                thread: &thread,
                id: &posted.id,
            },
            "v2",
        )
        .await
        .unwrap();

    let id: u64 = posted.id.parse().unwrap();
    assert_eq!(fake.comment(id).unwrap().body, "v2");
    assert_eq!(fake.comments(number).len(), 1, "edited in place");
    let edits = fake.requests_to(
        "PATCH",
        &format!("/repos/octo/widgets/issues/comments/{id}"),
    );
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].json()["body"], "v2");
    assert!(
        fake.requests_to("POST", "/repos/octo/widgets/issues/comments/")
            .is_empty(),
        "no POST to the comment URL"
    );
}

#[tokio::test]
async fn github_comments_are_listed_across_pages_with_bots_marked() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    for i in 0..105 {
        fake.seed_comment(number, "alice", &format!("c{i}"));
    }
    fake.seed_comment(number, "dependabot[bot]", "bump");

    let comments = forge(&fake)
        .comments(&ThreadRef::issue(number))
        .await
        .unwrap();

    assert_eq!(comments.len(), 106);
    assert_eq!(comments[104].body, "c104");
    assert!(comments[105].author_is_bot);
    assert!(!comments[0].author_is_bot);
}

#[tokio::test]
async fn github_permission_maps_roles_and_non_collaborators() {
    let fake = FakeGitHub::start();
    fake.add_collaborator("maya", "maintain");
    fake.add_collaborator("rita", "read");
    let forge = forge(&fake);

    assert_eq!(
        forge.permission("maya").await.unwrap(),
        Permission::Maintain
    );
    assert_eq!(forge.permission("rita").await.unwrap(), Permission::Read);
    assert_eq!(
        forge.permission("stranger").await.unwrap(),
        Permission::None
    );
}

#[tokio::test]
async fn github_reactions_go_to_the_issue_or_the_comment() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    let comment = fake.seed_comment(number, "alice", "/replan");
    let forge = forge(&fake);
    let thread = ThreadRef::issue(number);

    forge
        .react(ReactionTarget::on_thread(&thread), Reaction::Eyes)
        .await
        .unwrap();
    forge
        .react(
            ReactionTarget::on_comment(&thread, &comment.to_string()),
            Reaction::Eyes,
        )
        .await
        .unwrap();

    let reactions = fake.reactions();
    assert_eq!(reactions.len(), 2);
    assert!(reactions.iter().all(|r| r.content == "eyes"));
}

#[tokio::test]
async fn github_pull_request_is_opened_once_and_found_again() {
    let fake = FakeGitHub::start();
    let main = fake.ref_sha("main").unwrap();
    fake.set_ref("replan/issue-1", &main);
    fake.append_file("replan/issue-1", "src/lib.rs", "fn x() {}\n");
    let forge = forge(&fake);
    let request = PullRequestRequest {
        head: "replan/issue-1".into(),
        base: "main".into(),
        title: "Fix #1".into(),
        body: "Closes #1".into(),
    };

    let first = forge.open_pull_request(&request).await.unwrap();
    let again = forge.open_pull_request(&request).await.unwrap();

    assert_eq!(first, again);
    assert_eq!(fake.pull_requests().len(), 1);
    let lookups = fake.requests_to("GET", "/repos/octo/widgets/pulls");
    assert_eq!(lookups.len(), 1);
    assert!(
        lookups[0].query.contains("head=octo%3Areplan%2Fissue-1")
            || lookups[0].query.contains("head=octo:replan/issue-1"),
        "{}",
        lookups[0].query
    );
}

#[tokio::test]
async fn github_answer_without_a_field_octocrab_requires_names_the_field_and_is_not_retried() {
    let fake = FakeGitHub::start();
    let number = fake.seed_issue("Title", "Body", "alice");
    fake.push_fault(
        Fault::new("GET", &format!("/repos/octo/widgets/issues/{number}"), 200)
            .body(serde_json::json!({ "number": number, "title": "Title" })),
    );

    let err = forge(&fake)
        .thread(&ThreadRef::issue(number))
        .await
        .unwrap_err()
        .to_string();

    assert!(err.contains(&format!("reading #{number}")), "{err}");
    assert!(
        err.contains("does not have the expected shape") && err.contains("missing field"),
        "{err}"
    );
    let gets = fake.requests_to("GET", &format!("/repos/octo/widgets/issues/{number}"));
    assert_eq!(gets.len(), 1, "a wrong shape is not retried");
}
