//! Opt-in: every request Replan's GitHub client sends, checked against GitHub's published OpenAPI
//! description by Stoplight Prism (proxy mode) in front of the fake GitHub. Whole runs of the
//! binary (issue opened → question, the schedule sweep, the answer → plan, checklist, history
//! branch, pull request; `/replan`; an outsider's issue) and then the client's remaining calls
//! directly (a second pull request for the same branch, a non-UTF-8 history, a moved ref,
//! a rewrite and a deletion). Fails on any violation Prism reports about a request; violations
//! about the fake's answers are printed apart (they show where the fake drifts from GitHub).
//!
//! Skipped, saying why, unless `REPLAN_PRISM` and `REPLAN_PRISM_SPEC` are set:
//! `scripts/prism-conformance.sh` installs pinned versions of both and runs this test.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use replan::forge::github::{GitHubClient, GitHubForge, GitHubHistory};
use replan::forge::{CommentRef, Forge, PullRequestRequest, Reaction, ReactionTarget};
use replan::history::{Entry, EntryBody, HistoryBackend, jsonl};
use replan::trigger::ThreadRef;

use super::e2e::{ASK_WHICH_FILE, World, comment_by, text};
use crate::support::client::{ApiClient, install_crypto_provider};
use crate::support::prism::{Prism, PrismSetup, Violation};
use crate::support::{ConcurrentChange, FakeGitHub};

/// The request kinds the runs must have sent through Prism, so the check cannot pass by
/// checking nothing.
const EXPECTED_KINDS: [&str; 22] = [
    "POST /graphql",
    "GET /repos/{owner}/{repo}/issues/{n}",
    "GET /repos/{owner}/{repo}/issues/{n}/comments",
    "POST /repos/{owner}/{repo}/issues/{n}/comments",
    "GET /repos/{owner}/{repo}/issues/comments/{n}",
    "PATCH /repos/{owner}/{repo}/issues/comments/{n}",
    "POST /repos/{owner}/{repo}/issues/{n}/reactions",
    "POST /repos/{owner}/{repo}/issues/comments/{n}/reactions",
    "GET /repos/{owner}/{repo}/collaborators/{user}/permission",
    "GET /repos/{owner}/{repo}/git/ref/{ref}",
    "GET /repos/{owner}/{repo}/git/commits/{sha}",
    "GET /repos/{owner}/{repo}/git/trees/{sha}",
    "GET /repos/{owner}/{repo}/git/blobs/{sha}",
    "GET /repos/{owner}/{repo}/contents/{path}",
    "PUT /repos/{owner}/{repo}/contents/{path}",
    "POST /repos/{owner}/{repo}/git/blobs",
    "POST /repos/{owner}/{repo}/git/trees",
    "POST /repos/{owner}/{repo}/git/commits",
    "POST /repos/{owner}/{repo}/git/refs",
    "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
    "GET /repos/{owner}/{repo}/pulls",
    "POST /repos/{owner}/{repo}/pulls",
];

/// Request violations that are not violations of GitHub's REST API, each with the reason:
/// (`METHOD path`, words of Prism's message, why).
const NOT_OURS: [(&str, &str, &str); 1] = [(
    "POST /graphql",
    "Selected route not found",
    "the `viewer` query (whose token is this?) goes to GITHUB_GRAPHQL_URL, GitHub's GraphQL endpoint, which the REST description does not cover",
)];

#[test]
fn github_client_requests_conform_to_githubs_openapi_description() {
    let setup = match PrismSetup::from_env() {
        Ok(setup) => setup,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let world = World::separate(ASK_WHICH_FILE);
    let prism = Prism::start(&setup, &world.fake.base_url());
    prism_reports_a_bad_request(&world.fake, &prism);
    prism.clear();

    binary_runs(&world, &prism.base_url());
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(client_calls(&world.fake, &prism.base_url()));

    let kinds: BTreeSet<String> = prism.requests().iter().map(|r| kind(r)).collect();
    eprintln!(
        "{} requests through prism, {} kinds:\n  {}",
        prism.requests().len(),
        kinds.len(),
        kinds.iter().cloned().collect::<Vec<_>>().join("\n  ")
    );
    let (requests, answers): (Vec<Violation>, Vec<Violation>) = prism
        .violations()
        .into_iter()
        .partition(Violation::of_request);
    let (excused, requests): (Vec<Violation>, Vec<Violation>) =
        requests.into_iter().partition(|v| not_ours(v).is_some());
    for violation in &excused {
        eprintln!(
            "not a REST request, not counted: {} ({})",
            violation.line(),
            not_ours(violation).unwrap_or_default()
        );
    }
    if !answers.is_empty() {
        eprintln!(
            "{} violations in the fake's answers (where it differs from GitHub's description), by route:\n  {}",
            answers.len(),
            by_route(&answers)
        );
    }
    assert!(
        requests.is_empty(),
        "{} violations of GitHub's OpenAPI description in our requests:\n  {}",
        requests.len(),
        lines(&requests)
    );
    let missing: Vec<&str> = EXPECTED_KINDS
        .into_iter()
        .filter(|wanted| !kinds.contains(*wanted))
        .collect();
    assert!(missing.is_empty(), "never sent through prism: {missing:?}");
}

/// A comment without `body` (which GitHub's description requires) must come back as a request
/// violation: else this check would pass by checking nothing.
fn prism_reports_a_bad_request(fake: &FakeGitHub, prism: &Prism) {
    let client = ApiClient::new(
        &prism.base_url(),
        Some(("authorization", &format!("Bearer {}", fake.token()))),
    );
    client.post(
        "/repos/octo/widgets/issues/1/comments",
        &serde_json::json!({ "text": "no body" }),
    );
    let reported = prism.violations();
    assert!(
        reported
            .iter()
            .any(|v| v.of_request() && v.message.contains("'body'")),
        "prism did not report a comment without `body`: {reported:?}\n{}",
        prism.log()
    );
}

/// Why a request violation is not one of GitHub's REST API, if it is one of [`NOT_OURS`].
fn not_ours(violation: &Violation) -> Option<&'static str> {
    let request = format!("{} {}", violation.method, violation.target);
    NOT_OURS
        .iter()
        .find(|(route, words, _)| request == *route && violation.message.contains(words))
        .map(|(_, _, why)| *why)
}

/// The binary as GitHub Actions starts it, with `GITHUB_API_URL` (and `GITHUB_GRAPHQL_URL`) at
/// Prism.
fn binary_runs(world: &World, api_url: &str) {
    let run = |event: &str, payload: &std::path::Path| {
        let mut env = world.env(event, payload);
        env.insert("GITHUB_API_URL".into(), api_url.into());
        env.insert("GITHUB_GRAPHQL_URL".into(), format!("{api_url}/graphql"));
        let output = world.run(&env);
        assert_eq!(output.status.code(), Some(0), "{event}: {}", text(&output));
    };
    let number = world.alices_issue("Add a greeting", "Somewhere.");
    run("issues", &world.issue_opened(number, "alice"));
    assert_eq!(world.outputs()["status"], "waiting_for_answer");

    let schedule = world.files.path().join("schedule.json");
    std::fs::write(&schedule, r#"{"schedule": "*/30 * * * *"}"#).unwrap();
    run("schedule", &schedule);

    let answer = comment_by(world, number, "alice", "Put it in hello.md at the root.");
    run("issue_comment", &answer);
    assert_eq!(world.outputs()["status"], "completed");
    assert_eq!(world.fake.pull_requests().len(), 1);

    let replan = comment_by(
        world,
        number,
        "alice",
        "/replan tasks the tests need their own subtask",
    );
    run("issue_comment", &replan);
    assert!(world.types(number).contains(&"revision".to_owned()));

    let outsider = world
        .fake
        .seed_issue("Delete everything", "Please.", "mallory");
    run("issues", &world.issue_opened(outsider, "mallory"));
}

fn entry(text: &str) -> Entry {
    Entry {
        v: 1,
        seq: 0,
        ts: Utc.timestamp_opt(1_714_564_800, 0).unwrap(),
        run_id: "prism".to_owned(),
        body: EntryBody::Answer {
            author: "alice".into(),
            text: text.into(),
            assumed: false,
        },
    }
}

/// The client's calls the runs above may not make, called directly through Prism.
async fn client_calls(fake: &FakeGitHub, api_url: &str) {
    install_crypto_provider();
    let mut settings = super::settings(fake);
    settings.api_url = api_url.to_owned();
    let client = Arc::new(GitHubClient::new(settings).unwrap());
    let forge = GitHubForge::new(client.clone());

    let number = fake.seed_issue("Direct calls", "Body", "alice");
    let thread = ThreadRef::issue(number);
    forge.thread(&thread).await.unwrap();
    let posted = forge.post_comment(&thread, "v1").await.unwrap();
    let at = CommentRef {
        thread: &thread,
        id: &posted.id,
    };
    forge.update_comment(at, "v2").await.unwrap();
    forge.comment(at).await.unwrap().unwrap();
    forge.comments(&thread).await.unwrap();
    let targets = [
        (ReactionTarget::on_thread(&thread), Reaction::Eyes),
        (
            ReactionTarget::on_comment(&thread, &posted.id),
            Reaction::ThumbsUp,
        ),
    ];
    for (target, reaction) in targets {
        forge.react(target, reaction).await.unwrap();
    }
    forge.permission("alice").await.unwrap();
    forge.permission("nobody-here").await.unwrap();

    // A second request for the same branch meets GitHub's 422 and finds the open one.
    let branch = format!("replan/issue-{number}");
    let main = fake.ref_sha("main").unwrap();
    fake.set_ref(&branch, &main);
    fake.append_file(&branch, "direct.md", "direct\n");
    let request = PullRequestRequest {
        head: branch,
        base: "main".into(),
        title: "Direct".into(),
        body: "Closes #1".into(),
    };
    let first = forge.open_pull_request(&request).await.unwrap();
    assert_eq!(forge.open_pull_request(&request).await.unwrap(), first);
    forge.find_pull_request("no-such-key").await.unwrap();

    // The history branch: an append is one PUT of the file (bytes that are not UTF-8 too); a
    // file that changed under it is a 409 and a retry; a rewrite replaces the file.
    let history = GitHubHistory::new(client, "prism-history", "planning_history");
    let path = thread.history_path("planning_history");
    let good = jsonl::to_line(&Entry {
        seq: 1,
        ..entry("kept")
    });
    let mut old = format!("{good}\n").into_bytes();
    old.extend_from_slice(b"{\"broken\":\"\xff\"}\n");
    fake.commit_file_bytes("prism-history", &path, &old);
    history.load(&thread).await.unwrap();
    history.append(&thread, &[entry("binary")]).await.unwrap();
    let other = jsonl::to_line(&Entry {
        seq: 90,
        ..entry("another run")
    });
    fake.advance_ref_before_next_update(
        "prism-history",
        &path,
        ConcurrentChange::Append(format!("{other}\n")),
    );
    let moved = history.append(&thread, &[entry("moved")]).await.unwrap();
    assert_eq!(moved.conflicts, 1);
    history.threads().await.unwrap();
    // Over 1 MB the contents API refuses the file: the blob is read, and an append (not UTF-8
    // here) goes as a base64 blob, a tree, a commit and a ref move, which meets a moved ref.
    let mut big = format!("{good}\n")
        .repeat(1024 * 1024 / good.len() + 1)
        .into_bytes();
    big.extend_from_slice(&old);
    fake.commit_file_bytes("prism-history", &path, &big);
    let lines = big.iter().filter(|b| **b == b'\n').count();
    assert_eq!(
        history.load(&thread).await.unwrap().text.lines().count(),
        lines
    );
    fake.advance_ref_before_next_update(
        "prism-history",
        &path,
        ConcurrentChange::Append(String::new()),
    );
    let moved = history.append(&thread, &[entry("big")]).await.unwrap();
    assert_eq!(moved.conflicts, 1);
    history
        .rewrite(&thread, &format!("{good}\n"))
        .await
        .unwrap();
    history.rewrite(&thread, "").await.unwrap();
    assert!(fake.file_at_ref("prism-history", &path).is_none());
}

/// `"PATCH /repos/octo/widgets/git/refs/heads/x"` → `"PATCH /repos/{owner}/{repo}/git/refs/{ref}"`.
fn kind(request: &str) -> String {
    let (method, path) = request.split_once(' ').unwrap_or(("", request));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut out: Vec<String> = Vec::new();
    let mut index = 0;
    while index < segments.len() {
        let segment = segments[index];
        let previous = out.last().map(String::as_str);
        match (previous, segment) {
            (Some("repos"), _) if index + 1 < segments.len() => {
                out.extend(["{owner}".to_owned(), "{repo}".to_owned()]);
                index += 1;
            }
            (Some("ref" | "refs"), _) => {
                out.push("{ref}".to_owned());
                break;
            }
            (Some("contents"), _) => {
                out.push("{path}".to_owned());
                break;
            }
            (Some("collaborators"), _) => out.push("{user}".to_owned()),
            (_, s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                out.push("{n}".to_owned())
            }
            (_, s) if s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                out.push("{sha}".to_owned())
            }
            (_, s) => out.push(s.to_owned()),
        }
        index += 1;
    }
    format!("{method} /{}", out.join("/"))
}

/// One line per route and kind of violation, the differing property names gathered in it:
/// `GET /repos/{owner}/{repo}/pulls: Response body property N must have required property … (×4): '_links', 'assignee'`.
fn by_route(violations: &[Violation]) -> String {
    let index = regex::Regex::new(r"\b\d+\b").unwrap();
    // The part of a message that names a property: the quoted name, or the last field of a path.
    let name = regex::Regex::new(r"('[^']+'$)|(\.\w+)( must match format)").unwrap();
    let mut grouped: std::collections::BTreeMap<String, (usize, BTreeSet<String>)> =
        Default::default();
    for violation in violations {
        let path = violation.target.split('?').next().unwrap_or_default();
        let message = index.replace_all(&violation.message, "N");
        let (message, named) = match name.captures(&message) {
            Some(found) => {
                let part = found.get(1).or(found.get(2)).unwrap();
                let message = format!("{}…{}", &message[..part.start()], &message[part.end()..]);
                (
                    message,
                    Some(part.as_str().trim_start_matches('.').to_owned()),
                )
            }
            None => (message.into_owned(), None),
        };
        let route = kind(&format!("{} {path}", violation.method));
        let entry = grouped.entry(format!("{route}: {message}")).or_default();
        entry.0 += 1;
        entry.1.extend(named);
    }
    grouped
        .iter()
        .map(|(line, (count, names))| {
            let names = names.iter().cloned().collect::<Vec<_>>().join(", ");
            format!("{line} (×{count}) {names}").trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn lines(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(Violation::line)
        .collect::<Vec<_>>()
        .join("\n  ")
}

#[test]
fn request_kinds_name_the_route_not_the_ids() {
    assert_eq!(
        kind("PATCH /repos/octo/widgets/git/refs/heads/replan-history"),
        "PATCH /repos/{owner}/{repo}/git/refs/{ref}"
    );
    assert_eq!(
        kind("GET /repos/octo/widgets/git/trees/0123456789abcdef0123456789abcdef01234567"),
        "GET /repos/{owner}/{repo}/git/trees/{sha}"
    );
    assert_eq!(
        kind("POST /repos/octo/widgets/issues/comments/12/reactions"),
        "POST /repos/{owner}/{repo}/issues/comments/{n}/reactions"
    );
    assert_eq!(
        kind("GET /repos/octo/widgets/collaborators/alice/permission"),
        "GET /repos/{owner}/{repo}/collaborators/{user}/permission"
    );
    assert_eq!(
        kind("GET /repos/octo/widgets/contents/planning_history/issues/7.jsonl?ref=0123"),
        "GET /repos/{owner}/{repo}/contents/{path}"
    );
}
