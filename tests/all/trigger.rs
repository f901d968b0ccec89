//! Real event payloads through the public trigger API, and properties of the parsers.

use proptest::prelude::*;
use replan::outbound::Redactor;
use replan::trigger::github_event::{DISPATCH_ISSUE_INPUTS, load_actions_event};
use replan::trigger::sanitize::is_invisible;
use replan::trigger::{
    Command, EventOutcome, EventSet, ForgeKind, ReplanScope, Request, ReviewEvent, StartRules,
    ThreadKind, ThreadRef, Trigger, TriggerError, from_actions, from_actions_explained,
    from_gitlab, parse_commands, sanitize_untrusted,
};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn fixture_dir(forge: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(forge)
}

fn fixture_names(forge: &str) -> BTreeSet<String> {
    std::fs::read_dir(fixture_dir(forge))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect()
}

/// The Actions event name is the file name up to the first dot.
fn github(name: &str, rules: &StartRules) -> Result<EventOutcome, TriggerError> {
    let event = name.split('.').next().unwrap();
    load_actions_event(event, &fixture_dir("github-events").join(name), rules)
}

fn run(outcome: Result<EventOutcome, TriggerError>) -> Trigger {
    match outcome {
        Ok(EventOutcome::Run(trigger)) => *trigger,
        other => panic!("expected a run, got {other:?}"),
    }
}

fn start(title: &str, body: &str) -> Request {
    Request::Start {
        title: title.into(),
        body: body.into(),
    }
}

const README_ISSUE_BODY: &str = "It looks like you accidently spelled 'commit' with two 't's.";

#[test]
fn every_github_fixture_has_an_expectation() {
    let rules = StartRules::default();
    let mut checked = BTreeSet::new();
    let mut check = |name: &str, f: &dyn Fn(Result<EventOutcome, TriggerError>)| {
        f(github(name, &rules));
        checked.insert(name.to_owned());
    };

    check("issues.opened.15.json", &|o| {
        let t = run(o);
        assert_eq!(t.forge, ForgeKind::GitHub);
        assert_eq!(t.repo, "Codertocat/Hello-World");
        assert_eq!(t.thread, Some(ThreadRef::issue(1)));
        assert_eq!(t.actor.login, "Codertocat");
        assert_eq!(t.actor.id, Some(21031067));
        assert!(!t.actor.is_bot);
        assert_eq!(
            t.request,
            start("Spelling error in the README file", README_ISSUE_BODY)
        );
        assert_eq!(t.event, "issues.opened");
        assert_eq!(t.comment, None);
    });
    check("issues.labeled.9.json", &|o| match o {
        Ok(EventOutcome::Ignored { reason }) => {
            assert_eq!(reason, "label `bug` is not the trigger label `replan`")
        }
        other => panic!("{other:?}"),
    });
    for name in [
        "issue_comment.created.0.json",
        "issue_comment.created.1.json",
    ] {
        check(name, &|o| {
            let t = run(o);
            assert_eq!(t.thread, Some(ThreadRef::issue(1)));
            assert_eq!(t.actor.login, "Codertocat");
            let text = "You are totally right! I'll get this fixed right away.";
            assert_eq!(t.request, Request::Answer { text: text.into() });
            let comment = t.comment.unwrap();
            assert_eq!(comment.id, "492700400");
            assert_eq!(comment.body, text);
            assert_eq!(
                comment.updated_at,
                Some("2019-05-15T15:20:21Z".parse().unwrap())
            );
        });
    }
    check("pull_request_review.submitted.0.json", &|o| {
        let t = run(o);
        assert_eq!(t.actor.login, "Codertocat");
        assert_eq!(
            t.request,
            Request::Review(ReviewEvent {
                pull_request: 2,
                review_id: "237895671".into(),
                head_branch: "changes".into(),
                comment: None,
                threads: vec![],
            })
        );
    });
    check("pull_request_review_comment.created.0.json", &|o| {
        let t = run(o);
        assert_eq!(
            t.thread,
            Some(ThreadRef {
                kind: ThreadKind::PullRequest,
                number: 2
            })
        );
        assert_eq!(t.actor.login, "Codertocat");
        // A review comment names its review, so that on Replan's own pull request it joins the
        // review's one cycle; elsewhere its text reads as a comment's does.
        assert_eq!(
            t.request,
            Request::Review(ReviewEvent {
                pull_request: 2,
                review_id: "237895671".into(),
                head_branch: "changes".into(),
                comment: Some("Maybe you should use more emoji on this line.".into()),
                threads: vec![],
            })
        );
        assert_eq!(t.comment.unwrap().id, "284312630");
    });
    check("pull_request.labeled.0.json", &|o| {
        let t = run(o);
        assert_eq!(t.thread.unwrap().kind, ThreadKind::PullRequest);
        assert_eq!(t.thread.unwrap().number, 2);
        assert_eq!(
            t.request,
            start(
                "Update the README with new information.",
                "This is a pretty simple change that we need to pull into master."
            )
        );
    });
    check("workflow_dispatch.issue.json", &|o| {
        let t = run(o);
        assert_eq!(t.thread, Some(ThreadRef::issue(42)));
        assert_eq!(t.closed, None, "a dispatch does not say; the run asks");
        assert_eq!(t.request, start("", ""));
    });
    check("workflow_dispatch.issue_number.json", &|o| {
        let t = run(o);
        assert_eq!(t.repo, "octo-org/octo-repo");
        assert_eq!(t.thread, Some(ThreadRef::issue(42)));
        assert_eq!(t.actor.login, "octocat");
        assert_eq!(t.request, start("", ""));
    });
    check("workflow_dispatch.event.0.json", &|o| {
        let message = o.unwrap_err().to_string();
        assert!(message.contains("`inputs.issue`"), "{message}");
        assert!(
            message.contains("examples/workflows/replan.yml"),
            "{message}"
        );
        assert!(
            message.contains("workflow_dispatch.event.0.json"),
            "{message}"
        );
    });

    check("workflow_run.completed.0.json", &|o| {
        let t = run(o);
        assert_eq!(t.thread, Some(ThreadRef::issue(1)));
        let Request::CiResult(ci) = t.request else {
            panic!("a CI result, got {:?}", t.request)
        };
        assert_eq!(ci.branch, "replan/issue-1");
        assert_eq!(ci.conclusion, "failure");
        assert_eq!(ci.run_id, Some(30433642));
        assert_eq!(
            ci.workflow_path.as_deref(),
            Some(".github/workflows/ci.yml")
        );
        assert_eq!(
            ci.url.as_deref(),
            Some("https://github.com/Codertocat/Hello-World/actions/runs/30433642")
        );
    });
    check("check_suite.completed.0.json", &|o| {
        let t = run(o);
        assert_eq!(t.thread, Some(ThreadRef::issue(1)));
        let Request::CiResult(ci) = t.request else {
            panic!("a CI result, got {:?}", t.request)
        };
        assert_eq!(ci.check_suite_id, Some(118578147));
        assert_eq!(ci.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
    });
    assert_eq!(
        checked,
        fixture_names("github-events"),
        "fixtures without expectations"
    );
}

/// Every example payload, under every event name Replan listens to, is parsed or refused with
/// an error that names the file: no panic, no silent misreading.
#[test]
fn every_payload_under_every_event_name_parses_or_is_refused_cleanly() {
    let events = [
        "issues",
        "issue_comment",
        "pull_request",
        "pull_request_target",
        "pull_request_review_comment",
        "pull_request_review",
        "workflow_dispatch",
        "schedule",
        "workflow_run",
        "check_suite",
        "push",
    ];
    let rules = [
        StartRules::default(),
        StartRules {
            comments: false,
            issues: EventSet {
                opened: false,
                reopened: false,
                labeled: false,
            },
            ..StartRules::default()
        },
    ];
    for forge in ["github-events", "gitlab-events"] {
        for name in fixture_names(forge) {
            let path = fixture_dir(forge).join(&name);
            for event in events {
                for rules in &rules {
                    if let Err(e) = load_actions_event(event, &path, rules) {
                        let message = e.to_string();
                        assert!(
                            message.contains(&name),
                            "{forge}/{name} as {event}: {message}"
                        );
                    }
                }
            }
            let json = std::fs::read_to_string(&path).unwrap();
            for rules in &rules {
                let mut vars = gitlab_vars(None, true);
                vars.insert("TRIGGER_PAYLOAD".into(), json.clone());
                if let Err(e) = from_gitlab(&vars, rules) {
                    let message = e.to_string();
                    assert!(
                        message.contains("TRIGGER_PAYLOAD"),
                        "{forge}/{name}: {message}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_configured_label_starts_a_cycle_and_the_labeler_is_the_actor() {
    let rules = StartRules {
        label: "BUG".into(),
        ..StartRules::default()
    };
    let t = run(github("issues.labeled.9.json", &rules));
    assert_eq!(t.thread, Some(ThreadRef::issue(1)));
    assert_eq!(t.actor.login, "Codertocat");
    assert_eq!(
        t.request,
        start("Spelling error in the README file", README_ISSUE_BODY)
    );
}

#[test]
fn a_comment_with_a_command_in_a_real_payload() {
    let path = fixture_dir("github-events").join("issue_comment.created.0.json");
    let mut payload: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    payload["comment"]["body"] =
        "> /approve\n\n/replan tasks the tests are flaky\n```\n/stop\n```".into();
    let t = from_actions(
        "issue_comment",
        &payload.to_string(),
        &path,
        &StartRules::default(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        t.request,
        Request::Command(Command::Replan {
            phase: Some(ReplanScope::Tasks),
            reason: Some("the tests are flaky".into())
        })
    );
}

fn fixture_json(forge: &str, name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_dir(forge).join(name)).unwrap()).unwrap()
}

fn github_value(event: &str, payload: &serde_json::Value, rules: &StartRules) -> EventOutcome {
    from_actions_explained(event, &payload.to_string(), Path::new("event.json"), rules).unwrap()
}

fn ignored_because(outcome: EventOutcome, needle: &str) {
    match outcome {
        EventOutcome::Ignored { reason } => assert!(reason.contains(needle), "{reason}"),
        other => panic!("expected {needle:?}, got {other:?}"),
    }
}

#[test]
fn the_shipped_workflow_s_dispatch_input_is_the_one_the_parser_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let yaml = std::fs::read_to_string(root.join("examples/workflows/replan.yml")).unwrap();
    let workflow: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    let inputs = workflow["on"]["workflow_dispatch"]["inputs"]
        .as_object()
        .expect("the example declares workflow_dispatch inputs");
    let name = DISPATCH_ISSUE_INPUTS[0];
    assert!(inputs.contains_key(name), "{inputs:?}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("inputs.{name}")),
        "README documents `{name}`"
    );
    // GitHub sends inputs as strings; `issue_number` stays accepted as an alias.
    for (input, value) in [(name, "7"), ("issue_number", "7"), (name, " #7 ")] {
        let mut payload = fixture_json("github-events", "workflow_dispatch.issue.json");
        payload["inputs"] = serde_json::json!({ input: value });
        match github_value("workflow_dispatch", &payload, &StartRules::default()) {
            EventOutcome::Run(t) => assert_eq!(t.thread, Some(ThreadRef::issue(7))),
            other => panic!("{input}: {other:?}"),
        }
    }
}

#[test]
fn closed_threads_are_not_started_and_comments_on_them_say_closed() {
    let rules = StartRules::default();
    let mut labeled = fixture_json("github-events", "issues.labeled.9.json");
    labeled["label"]["name"] = "replan".into();
    labeled["issue"]["state"] = "closed".into();
    ignored_because(github_value("issues", &labeled, &rules), "closed");
    let mut comment = fixture_json("github-events", "issue_comment.created.0.json");
    comment["comment"]["body"] = "/replan".into();
    comment["issue"]["state"] = "closed".into();
    match github_value("issue_comment", &comment, &rules) {
        EventOutcome::Run(t) => assert_eq!(t.closed, Some(true)),
        other => panic!("{other:?}"),
    }
    let open = run(github("issue_comment.created.0.json", &rules));
    assert_eq!(open.closed, Some(false));
}

#[test]
fn trigger_event_types_follow_the_configuration() {
    let only_labels = StartRules {
        issues: EventSet {
            opened: false,
            reopened: false,
            labeled: true,
        },
        comments: false,
        ..StartRules::default()
    };
    ignored_because(
        github("issues.opened.15.json", &only_labels).unwrap(),
        "`triggers.issues`",
    );
    let mut reopened = fixture_json("github-events", "issues.opened.15.json");
    reopened["action"] = "reopened".into();
    ignored_because(
        github_value("issues", &reopened, &only_labels),
        "`triggers.issues`",
    );
    assert!(matches!(
        github_value("issues", &reopened, &StartRules::default()),
        EventOutcome::Run(_)
    ));
    ignored_because(
        github("issue_comment.created.0.json", &only_labels).unwrap(),
        "`triggers.comments`",
    );
    let mut gitlab_opened = gitlab_vars(None, true);
    let json =
        std::fs::read_to_string(fixture_dir("gitlab-events").join("issue_hook.open.json")).unwrap();
    gitlab_opened.insert("TRIGGER_PAYLOAD".into(), json);
    ignored_because(
        from_gitlab(&gitlab_opened, &only_labels).unwrap(),
        "`triggers.issues`",
    );
}

#[test]
fn invalid_payload_names_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("event.json");
    std::fs::write(
        &path,
        "{\n  \"action\": \"opened\",\n  \"issue\": {\"number\": 1,}\n}",
    )
    .unwrap();
    let err = load_actions_event("issues", &path, &StartRules::default()).unwrap_err();
    match &err {
        TriggerError::InvalidJson { path: p, line, .. } => {
            assert_eq!(p, &path);
            assert_eq!(*line, 3);
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("line 3, column"), "{message}");
}

#[test]
fn valid_json_of_the_wrong_shape_names_the_field_and_the_expected_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("event.json");
    std::fs::write(
        &path,
        r#"{"action": "opened", "issue": {"number": "seven", "title": "t"}}"#,
    )
    .unwrap();
    let err = load_actions_event("issues", &path, &StartRules::default()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, TriggerError::WrongShape { .. }), "{message}");
    assert!(message.contains("`issue.number`"), "{message}");
    assert!(message.contains("expected u64"), "{message}");
    assert!(!message.contains("not valid JSON"), "{message}");
}

#[test]
fn missing_payload_file_names_the_file_and_the_variable() {
    let message = load_actions_event(
        "issues",
        Path::new("/nonexistent/event.json"),
        &StartRules::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("/nonexistent/event.json") && message.contains("GITHUB_EVENT_PATH"),
        "{message}"
    );
}

#[test]
fn unknown_event_is_ignored_with_a_reason() {
    let path = Path::new("event.json");
    let rules = StartRules::default();
    assert_eq!(from_actions("push", "{}", path, &rules).unwrap(), None);
    match from_actions_explained("push", "{}", path, &rules).unwrap() {
        EventOutcome::Ignored { reason } => assert!(reason.contains("`push`"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

fn gitlab_vars(payload: Option<&Path>, with_project_path: bool) -> HashMap<String, String> {
    let mut vars = HashMap::from([
        ("GITLAB_CI".to_owned(), "true".to_owned()),
        (
            "CI_API_V4_URL".to_owned(),
            "https://gitlab.example.com/api/v4".to_owned(),
        ),
        ("CI_PROJECT_ID".to_owned(), "5".to_owned()),
        ("CI_PIPELINE_SOURCE".to_owned(), "trigger".to_owned()),
        (
            "GITLAB_USER_LOGIN".to_owned(),
            "trigger-token-owner".to_owned(),
        ),
    ]);
    if with_project_path {
        vars.insert("CI_PROJECT_PATH".into(), "gitlab-org/gitlab-test".into());
    }
    if let Some(path) = payload {
        vars.insert("TRIGGER_PAYLOAD".into(), path.display().to_string());
    }
    vars
}

fn gitlab(name: &str, with_project_path: bool) -> Trigger {
    let path = fixture_dir("gitlab-events").join(name);
    run(from_gitlab(
        &gitlab_vars(Some(&path), with_project_path),
        &StartRules::default(),
    ))
}

#[test]
fn every_gitlab_fixture_has_an_expectation() {
    let mut checked = BTreeSet::new();

    let t = gitlab("issue_hook.open.json", false);
    assert_eq!(t.forge, ForgeKind::GitLab);
    assert_eq!(
        t.repo, "gitlabhq/gitlab-test",
        "the payload's project path when CI has none"
    );
    assert_eq!(t.thread, Some(ThreadRef::issue(23)));
    assert_eq!(t.actor.login, "root");
    assert_eq!(t.actor.id, Some(1));
    assert_eq!(
        t.request,
        start(
            "New API: create/update/delete file",
            "Create new API for manipulations with repository"
        )
    );
    assert_eq!(
        t.api_url.as_deref(),
        Some("https://gitlab.example.com/api/v4")
    );
    checked.insert("issue_hook.open.json");

    let t = gitlab("issue_hook.labeled.json", true);
    assert_eq!(t.repo, "gitlab-org/gitlab-test");
    assert_eq!(t.thread, Some(ThreadRef::issue(23)));
    assert_eq!(
        t.actor.login, "jane",
        "whoever added the label, not the token owner"
    );
    assert!(matches!(t.request, Request::Start { .. }));
    checked.insert("issue_hook.labeled.json");

    let t = gitlab("note_hook.issue.json", true);
    assert_eq!(t.thread, Some(ThreadRef::issue(17)));
    assert_eq!(t.actor.login, "root");
    assert_eq!(
        t.request,
        Request::Command(Command::Replan {
            phase: Some(ReplanScope::Tasks),
            reason: Some("the tests are flaky".into())
        })
    );
    let comment = t.comment.unwrap();
    assert_eq!(comment.id, "1241");
    assert_eq!(
        comment.created_at,
        Some("2015-05-17T17:06:40Z".parse().unwrap())
    );
    checked.insert("note_hook.issue.json");

    let t = gitlab("note_hook.merge_request.json", true);
    assert_eq!(
        t.thread,
        Some(ThreadRef {
            kind: ThreadKind::MergeRequest,
            number: 1
        })
    );
    assert!(matches!(t.request, Request::Mention { .. }));
    checked.insert("note_hook.merge_request.json");

    // A note in a diff discussion: a review comment naming its discussion and the branch.
    let t = gitlab("note_hook.diff_note.json", true);
    let Request::Review(review) = &t.request else {
        panic!("a review, got {:?}", t.request)
    };
    assert_eq!(review.pull_request, 1);
    assert_eq!(review.review_id, "0000000000000000000000000000000000000001");
    assert_eq!(review.head_branch, "replan/issue-1");
    assert_eq!(
        review.comment.as_deref(),
        Some("Please also add a greet.md.")
    );
    assert_eq!(t.comment.unwrap().id, "1244");
    checked.insert("note_hook.diff_note.json");

    let t = gitlab("pipeline_hook.failed.json", true);
    assert_eq!(t.thread, Some(ThreadRef::issue(23)));
    let Request::CiResult(ci) = &t.request else {
        panic!("a CI result, got {:?}", t.request)
    };
    assert_eq!(ci.branch, "replan/issue-23");
    assert_eq!(ci.conclusion, "failed");
    assert_eq!(ci.run_id, Some(31));
    assert_eq!(
        ci.url.as_deref(),
        Some("http://example.com/gitlab-org/gitlab-test/-/pipelines/31")
    );
    checked.insert("pipeline_hook.failed.json");

    let checked: BTreeSet<String> = checked.into_iter().map(str::to_owned).collect();
    assert_eq!(
        checked,
        fixture_names("gitlab-events"),
        "fixtures without expectations"
    );
}

#[test]
fn gitlab_issue_update_without_the_label_being_added_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture_dir("gitlab-events").join("issue_hook.labeled.json");
    let mut payload: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(original).unwrap()).unwrap();
    payload["changes"]["labels"]["previous"] = payload["changes"]["labels"]["current"].clone();
    let path = dir.path().join("payload.json");
    std::fs::write(&path, payload.to_string()).unwrap();
    let outcome = from_gitlab(&gitlab_vars(Some(&path), true), &StartRules::default()).unwrap();
    assert!(
        matches!(outcome, EventOutcome::Ignored { .. }),
        "{outcome:?}"
    );
}

#[test]
fn gitlab_invalid_payload_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trigger_payload");
    std::fs::write(&path, "{\"object_kind\": \"note\",").unwrap();
    let message = from_gitlab(&gitlab_vars(Some(&path), true), &StartRules::default())
        .unwrap_err()
        .to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("not valid JSON"), "{message}");
}

#[test]
fn history_paths_follow_the_thread_kind() {
    let mr = ThreadRef {
        kind: ThreadKind::MergeRequest,
        number: 4,
    };
    assert_eq!(
        mr.history_path("planning_history"),
        "planning_history/merge_requests/4.jsonl"
    );
    assert_eq!(
        ThreadRef::issue(7).history_path("planning_history/"),
        "planning_history/issues/7.jsonl"
    );
    assert_eq!(
        serde_json::to_string(&ThreadKind::PullRequest).unwrap(),
        "\"pulls\""
    );
}

// ---- properties ----

fn prose_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/approve".to_owned()),
        Just("/stop".to_owned()),
        Just("/replan tasks flaky".to_owned()),
        Just("/reject nope".to_owned()),
        Just(String::new()),
        // No backticks, tildes, `<` or `>`: the prose around a fence must not open code,
        // quotes or comments of its own; a letter first, so it opens no list item either (a
        // fence inside a list item closes with the item, and what follows is prose again).
        "[a-zA-Z][a-zA-Z0-9 /@.,!?-]{0,29}",
    ]
}

fn code_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/approve".to_owned()),
        Just("  /status".to_owned()),
        Just("/replan goal x".to_owned()),
        Just("> /stop".to_owned()),
        Just("``".to_owned()),
        Just("~~".to_owned()),
        "[ -~]{0,40}",
    ]
}

proptest! {
    #[test]
    fn nothing_inside_a_fenced_block_is_a_command(
        before in prop::collection::vec(prose_line(), 0..4),
        marker in prop_oneof![Just('`'), Just('~')],
        len in 3usize..6,
        indent in "[ ]{0,3}",
        info in "[a-z]{0,6}",
        inside in prop::collection::vec(code_line(), 0..6),
        closed in any::<bool>(),
        after in prop::collection::vec(prose_line(), 0..4),
    ) {
        let fence: String = std::iter::repeat_n(marker, len).collect();
        // A line made only of enough fence characters would close the block early.
        let inside: Vec<String> = inside
            .into_iter()
            .filter(|line| {
                let t = line.trim();
                let run = t.chars().take_while(|&c| c == marker).count();
                !(run >= len && t.chars().skip(run).all(char::is_whitespace))
            })
            .collect();
        let mut lines = before.clone();
        lines.push(format!("{indent}{fence}{info}"));
        lines.extend(inside);
        let mut expected = parse_commands(&before.join("\n"));
        if closed {
            lines.push(format!("{indent}{fence}"));
            lines.extend(after.iter().cloned());
            expected.extend(parse_commands(&after.join("\n")));
        }
        prop_assert_eq!(parse_commands(&lines.join("\n")), expected);
    }

    #[test]
    fn sanitized_text_has_no_invisible_characters(
        pieces in prop::collection::vec(
            prop_oneof![
                any::<char>().prop_map(|c| c.to_string()),
                prop::sample::select(vec!['\u{200B}', '\u{202E}', '\u{2066}', '\u{FEFF}', '\u{00AD}', '\u{E0041}', '\u{2060}', '\u{200F}']).prop_map(|c| c.to_string()),
                Just("<!--".to_owned()),
                Just("-->".to_owned()),
                Just("\n```\n".to_owned()),
                Just("<img title=\"x\" alt=\"".to_owned()),
            ],
            0..80,
        )
    ) {
        let text: String = pieces.concat();
        let clean = sanitize_untrusted(&text);
        prop_assert!(!clean.chars().any(is_invisible), "{:?}", clean);
        prop_assert!(!clean.contains("<!--"), "{:?}", clean);
    }

    #[test]
    fn redaction_never_leaves_a_known_secret(
        secret in "[A-Za-z0-9_-]{8,40}",
        other in "[A-Za-z0-9_-]{8,40}",
        a in ".{0,40}",
        b in ".{0,40}",
        c in ".{0,40}",
    ) {
        let redactor = Redactor::new([secret.clone(), other.clone()]);
        // Overlapping the two secrets as well as placing them apart.
        let text = format!("{a}{secret}{b}{other}{secret}{other}{c}{secret}");
        let out = redactor.redact(&text);
        prop_assert!(!out.contains(secret.as_str()), "{:?}", out);
        prop_assert!(!out.contains(other.as_str()), "{:?}", out);
    }
}

fn patched_github(name: &str, patch: impl FnOnce(&mut serde_json::Value)) -> EventOutcome {
    let mut value: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir("github-events").join(name)).unwrap(),
    )
    .unwrap();
    patch(&mut value);
    let event = name.split('.').next().unwrap();
    from_actions_explained(
        event,
        &value.to_string(),
        Path::new(name),
        &StartRules::default(),
    )
    .unwrap()
}

/// Only a finished run of a Replan pull request branch in this repository, with a verdict on
/// the work, continues a thread.
#[test]
fn ci_runs_on_other_branches_forks_or_without_a_verdict_are_ignored() {
    for (why, patch) in [
        (
            "not a Replan branch",
            Box::new(|v: &mut serde_json::Value| v["workflow_run"]["head_branch"] = "main".into())
                as Box<dyn FnOnce(&mut serde_json::Value)>,
        ),
        (
            "the work branch",
            Box::new(|v: &mut serde_json::Value| {
                v["workflow_run"]["head_branch"] = "replan/work/issue-1".into()
            }),
        ),
        (
            "a fork's branch of the same name",
            Box::new(|v: &mut serde_json::Value| {
                v["workflow_run"]["head_repository"]["full_name"] = "mallory/Hello-World".into()
            }),
        ),
        (
            "cancelled",
            Box::new(|v: &mut serde_json::Value| {
                v["workflow_run"]["conclusion"] = "cancelled".into()
            }),
        ),
    ] {
        let outcome = patched_github("workflow_run.completed.0.json", patch);
        assert!(
            matches!(outcome, EventOutcome::Ignored { .. }),
            "{why}: {outcome:?}"
        );
    }
    let requested = patched_github("workflow_run.completed.0.json", |v| {
        v["action"] = "requested".into()
    });
    assert!(matches!(requested, EventOutcome::Ignored { .. }));
    let passed = patched_github("workflow_run.completed.0.json", |v| {
        v["workflow_run"]["conclusion"] = "success".into();
        v["workflow_run"]["head_branch"] = "replan/issue-7-2".into();
    });
    let EventOutcome::Run(t) = passed else {
        panic!("{passed:?}")
    };
    assert_eq!(t.thread, Some(ThreadRef::issue(7)));
}
