//! The GitLab forge and history branch against the stateful fake GitLab on 127.0.0.1; the runs
//! of the built binary in a GitLab CI job are in `pipeline.rs` and `e2e.rs`.

pub(crate) mod ci_job;
mod ci_result;
mod ci_round;
mod ci_sweep;
mod e2e;
mod fanout_split;
mod gate;
mod pipeline;
mod review_loop;
mod split;
mod verify;
pub(crate) mod world;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use replan::config::Config;
use replan::forge::gitlab::{
    GitLabClient, GitLabForge, GitLabHistory, RetryPolicy, api_url, connect, resolve_note,
};
use replan::forge::{CommentRef, Forge, ForgeError, PullRequestRequest, Reaction, ReactionTarget};
use replan::history::entry::UsageTotals;
use replan::history::{Entry, EntryBody, HistoryBackend, SCHEMA_VERSION};
use replan::trigger::{
    Actor, Command, ForgeKind, GateDecision, GateInput, GatePolicy, Permission, Request,
    StartRules, ThreadKind, ThreadRef, Trigger, decide,
};

use crate::support::fake_gitlab::{FakeGitLab, Noteable, access};
use crate::support::{ConcurrentChange, Fault};

const HISTORY: &str = "replan-history";

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_rate_limit_wait: Duration::from_secs(2),
        timeout: Duration::from_secs(30),
    }
}

fn client(fake: &FakeGitLab, token: &str) -> GitLabClient {
    GitLabClient::new(&fake.api_url(), &fake.project_id().to_string(), token)
        .unwrap()
        .with_retry(fast_retry())
}

fn forge(fake: &FakeGitLab) -> GitLabForge {
    GitLabForge::new(client(fake, &fake.token()), None)
}

fn history(fake: &FakeGitLab) -> GitLabHistory {
    GitLabHistory::new(client(fake, &fake.token()), HISTORY, "planning_history")
}

fn entry(seq: u64, run: &str) -> Entry {
    Entry {
        v: SCHEMA_VERSION,
        seq,
        ts: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
        run_id: run.into(),
        body: EntryBody::Usage {
            model: None,
            usage: UsageTotals {
                calls: seq,
                ..Default::default()
            },
        },
    }
}

/// `(seq, run_id)` of every line that parses, in file order.
fn seqs(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            (
                v["seq"].as_u64().unwrap(),
                v["run_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn trigger(fake: &FakeGitLab) -> Trigger {
    Trigger {
        forge: ForgeKind::GitLab,
        repo: fake.project_path().into(),
        thread: Some(ThreadRef::issue(1)),
        actor: Actor {
            login: "alice".into(),
            id: None,
            is_bot: false,
        },
        request: Request::Start {
            title: String::new(),
            body: String::new(),
        },
        comment: None,
        event: "pipeline_variables".into(),
        project_id: Some(fake.project_id().to_string()),
        api_url: Some(fake.api_url()),
        closed: None,
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn gitlab_checklist_note_is_created_found_by_marker_and_updated_with_put() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Add caching", "Please plan", "alice");
    fake.seed_note(Noteable::Issue(iid), "alice", "@replan please");
    let connection = connect(
        &trigger(&fake),
        &Config::default(),
        &env(&[
            ("GITLAB_TOKEN", &fake.token()),
            ("CI_JOB_URL", "https://gitlab.example/jobs/7"),
        ]),
    )
    .await
    .unwrap();
    let forge = connection.forge;
    let thread = ThreadRef::issue(iid);
    assert_eq!(
        connection.run_url.as_deref(),
        Some("https://gitlab.example/jobs/7")
    );
    assert_eq!(
        forge.run_url().as_deref(),
        Some("https://gitlab.example/jobs/7")
    );

    let created = forge
        .post_comment(&thread, "<!-- replan:checklist -->\n- [ ] one")
        .await
        .unwrap();
    let found = forge
        .comments(&thread)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .unwrap();
    assert_eq!(found.id, created.id);
    assert!(found.author_is_bot, "the project token's bot user is a bot");
    forge
        .update_comment(
            CommentRef {
                thread: &thread,
                id: &found.id,
            },
            "<!-- replan:checklist -->\n- [x] one",
        )
        .await
        .unwrap();

    let notes = fake.notes(Noteable::Issue(iid));
    assert_eq!(notes.len(), 2, "updated in place, not posted again");
    assert_eq!(notes[1].body, "<!-- replan:checklist -->\n- [x] one");
    let note_path = format!("/api/v4/projects/101/issues/{iid}/notes/{}", created.id);
    let writes: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.path == note_path)
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(writes, ["PUT"]);
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.header("private-token") == Some("<redacted>")),
        "every request carries PRIVATE-TOKEN"
    );
    let thread_info = forge.thread(&thread).await.unwrap();
    assert_eq!(thread_info.title, "Add caching");
    assert_eq!(thread_info.author, "alice");
}

#[tokio::test]
async fn gitlab_notes_are_listed_oldest_first_across_pages() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    for n in 1..=130 {
        fake.seed_note(Noteable::Issue(iid), "alice", &format!("note {n}"));
    }
    let comments = forge(&fake).comments(&ThreadRef::issue(iid)).await.unwrap();
    let bodies: Vec<String> = comments.iter().map(|c| c.body.clone()).collect();
    let expected: Vec<String> = (1..=130).map(|n| format!("note {n}")).collect();
    assert_eq!(bodies, expected);
    let lists = fake.requests_to("GET", &format!("/api/v4/projects/101/issues/{iid}/notes"));
    assert_eq!(lists.len(), 2);
    assert!(
        lists.iter().all(|r| r.query.contains("sort=asc")),
        "{lists:?}"
    );
}

#[tokio::test]
async fn gitlab_notes_on_merge_requests_work_the_same() {
    let fake = FakeGitLab::start();
    fake.commit_file("feature", "src/lib.rs", "fn a() {}\n");
    let mr = fake.seed_merge_request("Add a", "feature", "main", "alice");
    let thread = ThreadRef {
        kind: ThreadKind::MergeRequest,
        number: mr,
    };
    let forge = forge(&fake);
    let note = forge.post_comment(&thread, "checklist").await.unwrap();
    forge
        .update_comment(
            CommentRef {
                thread: &thread,
                id: &note.id,
            },
            "checklist v2",
        )
        .await
        .unwrap();
    assert_eq!(
        fake.notes(Noteable::MergeRequest(mr))[0].body,
        "checklist v2"
    );
    assert_eq!(forge.thread(&thread).await.unwrap().title, "Add a");
}

#[tokio::test]
async fn gitlab_guest_is_refused_by_the_gate_and_a_developer_allowed() {
    let fake = FakeGitLab::start();
    fake.add_member("gwen", access::GUEST);
    fake.add_member("devon", access::DEVELOPER);
    fake.add_user("olga");
    let forge = forge(&fake);
    let policy = GatePolicy::default();
    let check = |login: &str, permission: Permission| {
        let actor = Actor {
            login: login.into(),
            id: None,
            is_bot: false,
        };
        decide(&GateInput {
            actor: &actor,
            permission,
            policy: &policy,
            comment: None,
            run_started_at: Utc::now(),
            scheduled: false,
        })
    };

    let guest = forge.gate_permission("gwen").await;
    assert_eq!(guest, Permission::GitLabAccess(10));
    match check("gwen", guest) {
        GateDecision::Refuse {
            reply: Some(reply), ..
        } => assert!(reply.contains("Developer"), "{reply}"),
        other => panic!("{other:?}"),
    }
    let developer = forge.gate_permission("devon").await;
    assert_eq!(check("devon", developer), GateDecision::Allow);
    assert_eq!(
        forge.gate_permission("olga").await,
        Permission::GitLabAccess(0)
    );
    assert_eq!(
        forge.gate_permission("nobody").await,
        Permission::GitLabAccess(0)
    );
    let member_lookups = fake.requests_to("GET", "/api/v4/projects/101/members/all/");
    assert_eq!(
        member_lookups.len(),
        3,
        "olga is looked up, the unknown user is not"
    );

    fake.push_fault(Fault::server_error("GET", "/api/v4/users").times(10));
    let failed = forge.gate_permission("devon").await;
    assert!(matches!(failed, Permission::Unknown(_)), "{failed:?}");
    assert!(matches!(
        check("devon", failed),
        GateDecision::Refuse { .. }
    ));
}

#[tokio::test]
async fn gitlab_eyes_award_on_the_trigger_note_is_idempotent() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    let note = fake.seed_note(Noteable::Issue(iid), "alice", "/replan");
    let forge = forge(&fake);
    let thread = ThreadRef::issue(iid);
    let id = note.to_string();
    forge
        .react(ReactionTarget::on_comment(&thread, &id), Reaction::Eyes)
        .await
        .unwrap();
    forge
        .react(ReactionTarget::on_comment(&thread, &id), Reaction::Eyes)
        .await
        .unwrap();
    forge
        .react(ReactionTarget::on_thread(&thread), Reaction::Rocket)
        .await
        .unwrap();
    let awards = fake.award_emoji();
    assert_eq!(awards.len(), 2);
    assert_eq!(awards[0].name, "eyes");
    assert_eq!(awards[1].name, "rocket");
}

#[tokio::test]
async fn gitlab_merge_request_closes_the_issue_and_removes_its_branch() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Add caching", "Please", "alice");
    fake.commit_file("replan/issue-1", "cache.rs", "fn cache() {}\n");
    let forge = forge(&fake);
    let request = PullRequestRequest {
        head: "replan/issue-1".into(),
        base: "main".into(),
        title: "Add caching".into(),
        body: format!("Closes #{iid}\n\nPlanned by Replan."),
    };
    let opened = forge.open_pull_request(&request).await.unwrap();
    assert_eq!(opened.number, 1);
    assert!(
        opened.url.ends_with("/octo/widgets/-/merge_requests/1"),
        "{}",
        opened.url
    );
    let sent = fake.requests_to("POST", "/api/v4/projects/101/merge_requests");
    assert_eq!(sent[0].json()["remove_source_branch"], true);
    assert_eq!(
        fake.merge_requests()[0].description,
        format!("Closes #{iid}\n\nPlanned by Replan.")
    );

    let again = forge.open_pull_request(&request).await.unwrap();
    assert_eq!(again, opened, "a rerun finds the open merge request");
    assert_eq!(fake.merge_requests().len(), 1);

    let missing = PullRequestRequest {
        head: "nope".into(),
        ..request
    };
    let err = forge
        .open_pull_request(&missing)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Source branch \"nope\" does not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn gitlab_history_branch_is_created_holding_only_history() {
    let fake = FakeGitLab::start();
    fake.commit_file("main", "src/app.rs", "fn main() {}\n");
    let history = history(&fake);
    let thread = ThreadRef::issue(4);
    assert_eq!(history.load(&thread).await.unwrap().version, None);
    assert!(history.threads().await.unwrap().is_empty());

    let outcome = history
        .append(&thread, &[entry(1, "run-a"), entry(2, "run-a")])
        .await
        .unwrap();

    assert_eq!(outcome.first_seq, 1);
    assert_eq!(outcome.conflicts, 0);
    assert_eq!(fake.branch_sha(HISTORY), outcome.commit);
    let path = "planning_history/issues/4.jsonl";
    let text = fake.file_at_ref(HISTORY, path).unwrap();
    assert_eq!(seqs(&text), [(1, "run-a".into()), (2, "run-a".into())]);
    assert_eq!(fake.file_at_ref(HISTORY, "README.md"), None);
    assert_eq!(fake.file_at_ref(HISTORY, "src/app.rs"), None);
    assert!(
        fake.file_at_ref("main", "README.md").is_some(),
        "main is untouched"
    );
    let loaded = history.load(&thread).await.unwrap();
    assert_eq!(loaded.text, text);
    assert_eq!(loaded.version, outcome.commit);

    let mr = ThreadRef {
        kind: ThreadKind::MergeRequest,
        number: 2,
    };
    let second = history.append(&mr, &[entry(1, "run-b")]).await.unwrap();
    assert_eq!(second.first_seq, 1);
    assert_eq!(history.threads().await.unwrap(), [thread, mr]);
    let next = history.append(&thread, &[entry(1, "run-c")]).await.unwrap();
    assert_eq!(next.first_seq, 3, "numbered after the last line");
    let updates = fake.requests_to("POST", "/api/v4/projects/101/repository/commits");
    let last = updates.last().unwrap().json();
    assert_eq!(last["actions"][0]["action"], "update");
    assert!(last["actions"][0]["last_commit_id"].is_string());
}

#[tokio::test]
async fn gitlab_concurrent_commits_lose_nothing() {
    let fake = FakeGitLab::start();
    let path = "planning_history/issues/1.jsonl";
    let other = |seq: u64| format!("{}\n", serde_json::to_string(&entry(seq, "other")).unwrap());
    fake.commit_file(HISTORY, path, &format!("{}not json, kept\n", other(1)));
    fake.commit_before_next_commit(HISTORY, path, ConcurrentChange::Append(other(2)));
    let history = history(&fake);

    let outcome = history
        .append(&ThreadRef::issue(1), &[entry(2, "ours"), entry(3, "ours")])
        .await
        .unwrap();

    assert_eq!(outcome.conflicts, 1);
    assert_eq!(outcome.first_seq, 3);
    let text = fake.file_at_ref(HISTORY, path).unwrap();
    assert_eq!(
        seqs(&text),
        [
            (1, "other".into()),
            (2, "other".into()),
            (3, "ours".into()),
            (4, "ours".into())
        ]
    );
    assert!(text.contains("not json, kept\n"), "{text}");
    let rejected = fake
        .requests_to("POST", "/api/v4/projects/101/repository/commits")
        .iter()
        .filter(|r| r.status == 400)
        .count();
    assert_eq!(rejected, 1, "the stale last_commit_id was refused once");
}

#[tokio::test]
async fn gitlab_history_gives_up_only_when_its_time_is_up() {
    let fake = FakeGitLab::start();
    let path = "planning_history/issues/1.jsonl";
    fake.commit_file(HISTORY, path, "{}\n");
    fake.push_fault(
        Fault::new("POST", "/api/v4/projects/101/repository/commits", 400)
            .body(serde_json::json!({
                "message": format!("The file has changed since you started editing it: {path}")
            }))
            .times(10_000),
    );
    let mut history = history(&fake);
    history.retry = replan::history::cas::Retry::with_timeout(Duration::from_millis(200));
    let err = history
        .append(&ThreadRef::issue(1), &[entry(1, "ours")])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("kept moving"), "{err}");
    assert!(!fake.file_at_ref(HISTORY, path).unwrap().contains("ours"));
}

#[tokio::test]
async fn gitlab_history_commit_that_failed_with_502_is_written_once() {
    let fake = FakeGitLab::start();
    fake.push_fault(Fault::bad_gateway(
        "POST",
        "/api/v4/projects/101/repository/commits",
    ));
    let history = history(&fake);
    let outcome = history
        .append(&ThreadRef::issue(1), &[entry(1, "ours")])
        .await
        .unwrap();
    assert_eq!(outcome.conflicts, 1);
    let text = fake
        .file_at_ref(HISTORY, "planning_history/issues/1.jsonl")
        .unwrap();
    assert_eq!(seqs(&text), [(1, "ours".into())]);
}

#[tokio::test]
async fn gitlab_only_the_job_token_is_a_clear_error() {
    let fake = FakeGitLab::start();
    let err = connect(
        &trigger(&fake),
        &Config::default(),
        &env(&[("CI_JOB_TOKEN", &fake.job_token())]),
    )
    .await
    .err()
    .expect("no connection without GITLAB_TOKEN")
    .to_string();
    for needle in [
        "GITLAB_TOKEN",
        "CI_JOB_TOKEN",
        "`api` scope",
        "masked CI/CD variable",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!err.contains(&fake.job_token()), "{err}");
    assert!(fake.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn gitlab_token_without_api_scope_is_explained() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    fake.push_fault(
        Fault::new("POST", "/api/v4/projects/101/issues", 403).body(serde_json::json!({
            "error": "insufficient_scope",
            "error_description": "The request requires higher privileges than provided by the access token.",
            "scope": "api"
        })),
    );
    let err = forge(&fake)
        .post_comment(&ThreadRef::issue(iid), "hello")
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::Forbidden { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("requires higher privileges"), "{text}");
    assert!(
        text.contains("GITLAB_TOKEN") && text.contains("`api` scope"),
        "{text}"
    );

    let wrong = GitLabForge::new(client(&fake, "glpat-wrong"), None);
    let err = wrong.thread(&ThreadRef::issue(iid)).await.unwrap_err();
    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err:?}");
    assert!(!err.to_string().contains("glpat-wrong"));
}

#[tokio::test]
async fn gitlab_retries_rate_limits_and_server_errors_but_not_a_failed_post() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    fake.push_fault(Fault::too_many_requests(
        "GET",
        "/api/v4/projects/101/issues",
        1,
    ));
    fake.push_fault(Fault::server_error("GET", "/api/v4/projects/101/issues"));
    let forge = forge(&fake);
    let started = std::time::Instant::now();
    let thread = forge.thread(&ThreadRef::issue(iid)).await.unwrap();
    assert_eq!(thread.title, "Plan");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    let statuses: Vec<u16> = fake
        .requests_to("GET", &format!("/api/v4/projects/101/issues/{iid}"))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [429, 500, 200]);

    fake.push_fault(Fault::server_error("POST", "/api/v4/projects/101/issues"));
    let err = forge
        .post_comment(&ThreadRef::issue(iid), "hello")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ForgeError::Uncertain { message, .. } if message.contains("500")),
        "{err:?}"
    );
    assert_eq!(
        fake.requests_to("POST", "/api/v4/projects/101/issues")
            .len(),
        1,
        "a POST that may have landed is not sent twice"
    );

    fake.push_fault(Fault::server_error("GET", "/api/v4/projects/101/issues").times(10));
    let err = forge.thread(&ThreadRef::issue(iid)).await.unwrap_err();
    assert!(matches!(err, ForgeError::Server { .. }), "{err:?}");
}

#[tokio::test]
async fn gitlab_api_url_comes_from_ci_variables_for_self_managed_instances() {
    let fake = FakeGitLab::start();
    let mut t = trigger(&fake);
    t.api_url = None;
    assert_eq!(
        api_url(&t, &env(&[("CI_SERVER_URL", "https://git.example.org/")])),
        "https://git.example.org/api/v4"
    );
    assert_eq!(
        api_url(
            &t,
            &env(&[
                ("CI_API_V4_URL", "https://git.example.org/gitlab/api/v4"),
                ("CI_SERVER_URL", "https://ignored.example")
            ])
        ),
        "https://git.example.org/gitlab/api/v4"
    );
    assert_eq!(api_url(&t, &env(&[])), "https://gitlab.com/api/v4");

    // A project addressed by its path is url-encoded as one segment.
    t.project_id = None;
    let connection = connect(
        &t,
        &Config::default(),
        &env(&[
            ("GITLAB_TOKEN", &fake.token()),
            ("CI_API_V4_URL", &fake.api_url()),
        ]),
    )
    .await
    .unwrap();
    let iid = fake.seed_issue("By path", "", "alice");
    let forge: Arc<dyn Forge> = connection.forge;
    assert_eq!(
        forge.thread(&ThreadRef::issue(iid)).await.unwrap().title,
        "By path"
    );
    assert_eq!(
        fake.requests()[0].path,
        format!("/api/v4/projects/octo%2Fwidgets/issues/{iid}")
    );
}

#[tokio::test]
async fn gitlab_replan_note_id_is_fetched_and_its_author_becomes_the_actor() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    fake.add_member("gwen", access::GUEST);
    let note = fake.seed_note(Noteable::Issue(iid), "gwen", "/replan tasks too coarse");
    let forge = forge(&fake);
    let mut t = trigger(&fake);
    t.thread = Some(ThreadRef::issue(iid));
    t.actor.login = "trigger-token-owner".into();
    t.request = Request::FetchComment {
        id: note.to_string(),
    };

    resolve_note(&forge, &mut t, &StartRules::default())
        .await
        .unwrap();

    assert_eq!(t.actor.login, "gwen");
    assert!(
        matches!(t.request, Request::Command(Command::Replan { .. })),
        "{:?}",
        t.request
    );
    assert_eq!(t.comment.as_ref().unwrap().body, "/replan tasks too coarse");
    let permission = forge.gate_permission(&t.actor.login).await;
    let policy = GatePolicy::default();
    let decision = decide(&GateInput::for_trigger(&t, permission, &policy, Utc::now()));
    assert!(
        matches!(decision, GateDecision::Refuse { reply: Some(_), .. }),
        "{decision:?}"
    );

    t.request = Request::FetchComment {
        id: "999999".into(),
    };
    let err = resolve_note(&forge, &mut t, &StartRules::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("REPLAN_NOTE_ID") && err.contains("999999"),
        "{err}"
    );
}

#[tokio::test]
async fn gitlab_note_and_merge_request_whose_answers_were_lost_happen_once() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    let notes = format!("/api/v4/projects/101/issues/{iid}/notes");
    fake.push_fault(Fault::after_effect("POST", &notes, 502));
    let body = replan::forge::marker::with_marker("Done.", "abc123");
    let forge = forge(&fake);

    forge
        .post_comment(&ThreadRef::issue(iid), &body)
        .await
        .expect("the note is found again after the 502");
    assert_eq!(fake.notes(Noteable::Issue(iid)).len(), 1);
    assert_eq!(fake.requests_to("POST", &notes).len(), 1);

    fake.commit_file("replan/issue-1", "cache.rs", "fn cache() {}\n");
    fake.push_fault(Fault::after_effect(
        "POST",
        "/api/v4/projects/101/merge_requests",
        500,
    ));
    let request = PullRequestRequest {
        head: "replan/issue-1".into(),
        base: "main".into(),
        title: "Add caching".into(),
        body: format!("Closes #{iid}"),
    };
    let opened = forge.open_pull_request(&request).await.unwrap();
    assert_eq!(fake.merge_requests().len(), 1);
    assert_eq!(opened.number, fake.merge_requests()[0].iid);
    assert_eq!(
        fake.requests_to("POST", "/api/v4/projects/101/merge_requests")
            .len(),
        1
    );
}

#[tokio::test]
async fn gitlab_redirect_to_another_origin_keeps_the_private_token_home() {
    let fake = FakeGitLab::start();
    let elsewhere = FakeGitLab::start();
    let iid = fake.seed_issue("Plan", "Please", "alice");
    let path = format!("/api/v4/projects/101/issues/{iid}");
    let target = format!("{}{path}", elsewhere.base_url());
    fake.push_fault(Fault::new("GET", &path, 307).header("location", &target));

    let err = forge(&fake)
        .thread(&ThreadRef::issue(iid))
        .await
        .unwrap_err();

    assert!(err.to_string().contains(&target), "{err}");
    assert!(!err.to_string().contains(&fake.token()), "{err}");
    assert!(
        elsewhere.requests().iter().all(|r| {
            r.header("private-token").is_none() && r.header("authorization").is_none()
        }),
        "no credentials across origins"
    );
    assert!(elsewhere.requests().is_empty());
}

/// Merge request diff discussions as review threads: listed with path and line, answered with a
/// note in the discussion, resolved through the API; a wrong token writes nothing.
#[tokio::test]
async fn gitlab_diff_discussions_are_listed_answered_and_resolved() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_merge_request("Add hello", "main", "main", "replan-bot");
    let first = fake.seed_discussion(iid, "alice", "hello.md", 1, "Lower case, please.");
    let second = fake.seed_discussion(iid, "alice", "hello.md", 2, "Why this file?");
    let forge = forge(&fake);

    let threads = forge.review_threads(iid).await.unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[0].id, first);
    assert_eq!(
        (threads[0].path.as_str(), threads[0].line),
        ("hello.md", Some(1))
    );
    assert_eq!(threads[0].comments[0].author, "alice");
    assert!(!threads[0].resolved);

    fn at(iid: u64, thread: &str) -> replan::forge::ReviewThreadRef<'_> {
        replan::forge::ReviewThreadRef {
            pull_request: iid,
            thread,
            reply_to: "",
        }
    }
    let wrong = GitLabForge::new(client(&fake, "glpat-wrong"), None);
    assert!(wrong.resolve_review_thread(at(iid, &first)).await.is_err());
    assert!(fake.discussions(iid).iter().all(|d| !d.resolved));

    forge
        .reply_to_review_thread(at(iid, &first), "Addressed in abc: lower case now.")
        .await
        .unwrap();
    forge.resolve_review_thread(at(iid, &first)).await.unwrap();
    forge
        .reply_to_review_thread(
            at(iid, &second),
            "Not addressed (a question for you): which file?",
        )
        .await
        .unwrap();

    let discussions = fake.discussions(iid);
    assert!(discussions[0].resolved);
    assert_eq!(
        discussions[0].notes[1].body,
        "Addressed in abc: lower case now."
    );
    assert!(!discussions[1].resolved);
    assert_eq!(discussions[1].notes.len(), 2);
    let err = forge
        .resolve_review_thread(at(iid, "0000"))
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::NotFound { .. }), "{err:?}");
}

/// Issue 37: the merge request's "Verification" section is written with `PUT` into the
/// description the fake stores, below the text that was there, and replaced in place by the next
/// run: never a second section, never the text around it rewritten.
#[tokio::test]
async fn gitlab_the_verification_section_is_spliced_into_the_stored_description_in_place() {
    let fake = FakeGitLab::start();
    let iid = fake.seed_issue("Add caching", "Please", "alice");
    fake.commit_file("replan/issue-1", "cache.rs", "fn cache() {}\n");
    let forge = forge(&fake);
    let above = format!("Adds caching.\n\nCloses #{iid}\n\n<!-- replan:key=0123abcd -->");
    let opened = forge
        .open_pull_request(&PullRequestRequest {
            head: "replan/issue-1".into(),
            base: "main".into(),
            title: "Add caching".into(),
            body: above.clone(),
        })
        .await
        .unwrap();

    forge
        .update_pull_request_section(&opened, "### Verification\n\n- ❌ `cargo test` failed")
        .await
        .unwrap();
    let first = fake.merge_requests()[0].description.clone();
    assert!(first.starts_with(&above), "{first}");
    assert!(first.contains("- ❌ `cargo test` failed"), "{first}");
    let sent = fake.requests_to(
        "PUT",
        &format!("/api/v4/projects/101/merge_requests/{}", opened.number),
    );
    assert_eq!(sent.len(), 1);

    forge
        .update_pull_request_section(&opened, "### Verification\n\n- ✅ `cargo test` passed")
        .await
        .unwrap();
    let second = fake.merge_requests()[0].description.clone();
    assert_eq!(
        second.matches("<!-- replan:verification -->").count(),
        1,
        "{second}"
    );
    assert!(second.starts_with(&above), "{second}");
    assert!(
        !second.contains("failed") && second.contains("✅ `cargo test` passed"),
        "{second}"
    );
    assert_eq!(
        second,
        first.replace("❌ `cargo test` failed", "✅ `cargo test` passed")
    );
}
