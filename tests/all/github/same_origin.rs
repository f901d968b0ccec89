//! The HTTP layer against the fake GitHub: writes whose answer was lost happen once, the token
//! never leaves the API origin (pagination links, redirects), and huge answers are refused.

use std::sync::Arc;

use replan::forge::github::{GitHubClient, GitHubForge};
use replan::forge::marker::{key_for, with_marker};
use replan::forge::{Forge, ForgeError, PullRequestRequest};
use replan::trigger::ThreadRef;

use super::settings;
use crate::support::client::install_crypto_provider;
use crate::support::{FakeGitHub, Fault};

fn forge_with_cap(fake: &FakeGitHub, max_body_bytes: usize) -> GitHubForge {
    install_crypto_provider();
    let mut settings = settings(fake);
    settings.max_body_bytes = max_body_bytes;
    GitHubForge::new(Arc::new(GitHubClient::new(settings).expect("client")))
}

fn forge(fake: &FakeGitHub) -> GitHubForge {
    forge_with_cap(fake, replan::http::DEFAULT_MAX_BODY_BYTES)
}

#[tokio::test]
async fn github_comment_whose_answer_was_lost_to_a_502_is_posted_once() {
    let fake = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    let comments = format!("/repos/octo/widgets/issues/{issue}/comments");
    fake.push_fault(Fault::after_effect("POST", &comments, 502));
    let body = with_marker("Done: see the branch.", &key_for(&["t", "post_comment"]));

    let posted = forge(&fake)
        .post_comment(&ThreadRef::issue(issue), &body)
        .await
        .expect("the comment is found again after the 502");

    let stored = fake.comments(issue);
    assert_eq!(stored.len(), 1, "one comment despite the 502 after success");
    assert_eq!(posted.id, stored[0].id.to_string());
    assert_eq!(fake.requests_to("POST", &comments).len(), 1);
    assert_eq!(
        fake.requests_to("GET", &comments).len(),
        1,
        "looked up by marker"
    );
}

#[tokio::test]
async fn github_comment_that_did_not_land_is_sent_again_after_the_check() {
    let fake = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    let comments = format!("/repos/octo/widgets/issues/{issue}/comments");
    fake.push_fault(Fault::server_error("POST", &comments));
    let body = with_marker("hello", &key_for(&["t", "again"]));

    forge(&fake)
        .post_comment(&ThreadRef::issue(issue), &body)
        .await
        .unwrap();

    assert_eq!(fake.comments(issue).len(), 1);
    let lines: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.path == comments)
        .map(|r| format!("{} {}", r.method, r.status))
        .collect();
    assert_eq!(lines, ["POST 500", "GET 200", "POST 201"]);
}

#[tokio::test]
async fn github_unmarked_comment_after_a_502_is_not_sent_blindly_again() {
    let fake = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    let comments = format!("/repos/octo/widgets/issues/{issue}/comments");
    fake.push_fault(Fault::after_effect("POST", &comments, 502));

    let err = forge(&fake)
        .post_comment(&ThreadRef::issue(issue), "no marker")
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::Uncertain { .. }), "{err:?}");
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(fake.requests_to("POST", &comments).len(), 1);
    assert_eq!(fake.comments(issue).len(), 1);
}

#[tokio::test]
async fn github_pull_request_whose_answer_was_lost_is_opened_once() {
    let fake = FakeGitHub::start();
    let main = fake.ref_sha("main").unwrap();
    fake.set_ref("replan/issue-1", &main);
    fake.append_file("replan/issue-1", "src/lib.rs", "fn x() {}\n");
    fake.push_fault(Fault::after_effect(
        "POST",
        "/repos/octo/widgets/pulls",
        500,
    ));
    let request = PullRequestRequest {
        head: "replan/issue-1".into(),
        base: "main".into(),
        title: "Fix #1".into(),
        body: "Closes #1".into(),
    };

    let opened = forge(&fake).open_pull_request(&request).await.unwrap();

    let pulls = fake.pull_requests();
    assert_eq!(pulls.len(), 1, "one PR despite the 500 after success");
    assert_eq!(opened.number, pulls[0].number);
    assert_eq!(
        fake.requests_to("POST", "/repos/octo/widgets/pulls").len(),
        1
    );
}

#[tokio::test]
async fn github_next_link_to_another_origin_is_refused_naming_it_without_the_token() {
    let fake = FakeGitHub::start();
    let elsewhere = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    fake.seed_comment(issue, "bob", "first");
    let comments = format!("/repos/octo/widgets/issues/{issue}/comments");
    let foreign = format!("{}{comments}?per_page=100&page=2", elsewhere.base_url());
    fake.push_fault(Fault::extra_header(
        "GET",
        &comments,
        "link",
        &format!("<{foreign}>; rel=\"next\""),
    ));

    let err = forge(&fake)
        .comments(&ThreadRef::issue(issue))
        .await
        .unwrap_err();

    let message = err.to_string();
    assert!(message.contains(&foreign), "names the URL: {message}");
    assert!(message.contains("outside the API origin"), "{message}");
    assert!(!message.contains(&fake.token()), "{message}");
    assert!(
        elsewhere.requests().is_empty(),
        "nothing sent to the other origin"
    );
}

#[tokio::test]
async fn github_redirect_to_another_origin_is_not_followed_with_the_token() {
    let fake = FakeGitHub::start();
    let elsewhere = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    let path = format!("/repos/octo/widgets/issues/{issue}");
    let target = format!("{}{path}", elsewhere.base_url());
    fake.push_fault(Fault::new("GET", &path, 302).header("location", &target));

    let err = forge(&fake)
        .thread(&ThreadRef::issue(issue))
        .await
        .unwrap_err();

    let message = err.to_string();
    assert!(message.contains(&target), "{message}");
    assert!(!message.contains(&fake.token()), "{message}");
    assert!(
        elsewhere
            .requests()
            .iter()
            .all(|r| r.header("authorization").is_none()),
        "no Authorization across origins"
    );
    assert!(elsewhere.requests().is_empty());

    // Within the origin a redirect is followed, credentials and all.
    let moved = format!("{}{path}", fake.base_url());
    fake.push_fault(Fault::new("GET", &path, 301).header("location", &moved));
    let thread = forge(&fake).thread(&ThreadRef::issue(issue)).await.unwrap();
    assert_eq!(thread.title, "Plan");
}

#[tokio::test]
async fn github_answer_over_the_cap_is_refused_as_too_large() {
    let fake = FakeGitHub::start();
    let issue = fake.seed_issue("Plan", "Please", "alice");
    for n in 0..20 {
        fake.seed_comment(issue, "bob", &format!("comment {n}: {}", "x".repeat(200)));
    }

    let err = forge_with_cap(&fake, 4096)
        .comments(&ThreadRef::issue(issue))
        .await
        .unwrap_err();

    let message = err.to_string();
    assert!(message.contains("too large"), "{message}");
    assert!(message.contains("4096"), "{message}");
    assert_eq!(
        forge(&fake)
            .comments(&ThreadRef::issue(issue))
            .await
            .unwrap()
            .len(),
        20,
        "the default cap lets a normal answer through"
    );
}
