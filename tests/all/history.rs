//! The history store against real files and a real git repository.

use chrono::{DateTime, Duration, TimeZone, Utc};
use replan::history::entry::{
    ActionOutcome, ApprovalDecision, DecisionRecord, DecisionResult, Question, RunRequest,
    RunStatus, UsageTotals,
};
use replan::history::export::{ExportFormat, export};
use replan::history::jsonl::{self, to_line};
use replan::history::prune::{PruneOptions, prune};
use replan::history::stats::stats;
use replan::history::{
    BlockingBackend, Entry, EntryBody, GitBranchHistory, HistoryBackend, LocalHistory,
    SCHEMA_VERSION, replay,
};
use replan::plan::{
    ActionPlan, Completion, CompletionSummary, GoalUnderstanding, Phase, Plan, Reflection,
    ReflectionStatus, ReplanDecision, ReplanTrigger, ReplanType, Subtask, TaskDecomposition,
    TaskState,
};
use replan::trigger::ThreadRef;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

fn entry(seq: u64, run: &str, body: EntryBody) -> Entry {
    Entry {
        v: SCHEMA_VERSION,
        seq,
        ts: t0() + Duration::seconds(seq as i64),
        run_id: run.into(),
        body,
    }
}

fn plan(ids: &[&str]) -> Plan {
    Plan {
        goal_understanding: GoalUnderstanding {
            main_objective: "Fix the README typo".into(),
            success_criteria: vec!["README spelled right".into()],
            ..Default::default()
        },
        task_decomposition: TaskDecomposition {
            reasoning: "small".into(),
            subtasks: ids
                .iter()
                .map(|id| Subtask {
                    id: id.to_string(),
                    description: format!("do {id}"),
                    ..Default::default()
                })
                .collect(),
        },
        action_plan: ActionPlan {
            execution_order: ids.iter().map(|s| s.to_string()).collect(),
            actions: vec![],
        },
    }
}

fn decision(
    id: &str,
    phase: Phase,
    kind: ReplanType,
    confidence: f64,
    executed: bool,
    override_reason: Option<&str>,
    duration_ms: u64,
) -> EntryBody {
    EntryBody::ReplanDecision(Box::new(DecisionRecord {
        replan_id: id.into(),
        phase,
        llm_decision: ReplanDecision {
            replan_needed: kind != ReplanType::None,
            confidence,
            reasoning: format!("reason for {id}"),
            replan_type: kind,
            issues_found: vec!["the file moved".into()],
            ..Default::default()
        },
        confidence,
        executed,
        override_reason: override_reason.map(str::to_string),
        result: if executed {
            DecisionResult::Success
        } else {
            DecisionResult::Skipped
        },
        duration_ms,
        trigger: Some(ReplanTrigger::TaskFailed),
        trigger_key: format!("{phase}:{}", kind.as_str()),
        parse_error: None,
        raw_reply: None,
        restart_phase: None,
    }))
}

fn usage(calls: u64, p: u64, c: u64, cost: f64) -> UsageTotals {
    UsageTotals {
        calls,
        prompt_tokens: p,
        completion_tokens: c,
        cached_tokens: 0,
        cost_usd: cost,
        ..UsageTotals::default()
    }
}

fn request(actor: &str, what: &str) -> RunRequest {
    RunRequest {
        event: "issues".into(),
        actor: actor.into(),
        request: what.into(),
        title: Some("README typo".into()),
        ..Default::default()
    }
}

/// A body for entry number `i` of a long history, cycling through the kinds a run writes.
fn varied_body(i: u64) -> EntryBody {
    match i % 10 {
        0 => EntryBody::RunStarted {
            request: request("alice", "start"),
        },
        1 => EntryBody::Plan {
            version: (i / 10 + 1) as u32,
            plan: Box::new(plan(&["task_1", "task_2"])),
        },
        2 => decision(
            &format!("d{i}"),
            Phase::Execution,
            ReplanType::PartialReplan,
            0.9,
            true,
            None,
            100,
        ),
        3 => EntryBody::TaskState {
            task_id: "task_1".into(),
            state: if i % 20 == 3 {
                TaskState::Done
            } else {
                TaskState::Running
            },
            replanning_info: None,
            note: None,
        },
        4 => EntryBody::Action {
            task_id: "task_1".into(),
            tool: "read".into(),
            arguments_digest: "ab".repeat(32),
            outcome: if i % 3 == 1 {
                ActionOutcome::FAILED
            } else {
                ActionOutcome::Ok
            },
            summary: "read README.md".into(),
            duration_ms: 12,
        },
        5 => EntryBody::Reflection {
            reflection: Reflection {
                action_id: format!("a{i}"),
                status: ReflectionStatus::Success,
                evaluation: "fine".into(),
                ..Default::default()
            },
            plan_revision: None,
        },
        6 => EntryBody::Question(Question {
            questions: vec!["Which README?".into()],
            context: String::new(),
            assumptions: vec![],
            phase: Phase::GoalUnderstanding,
        }),
        7 => EntryBody::Answer {
            author: "alice".into(),
            text: "The top-level one".into(),
            assumed: false,
        },
        8 => EntryBody::Usage {
            model: None,
            usage: usage(1, 100, 20, 0.001),
        },
        _ => EntryBody::RunFinished {
            status: RunStatus::Completed,
            usage: UsageTotals::default(),
            pull_request: None,
            structured_output: None,
        },
    }
}

fn long_history(n: u64) -> Vec<Entry> {
    (1..=n)
        .map(|i| entry(i, &format!("run-{}", i / 10), varied_body(i)))
        .collect()
}

#[test]
fn corrupt_lines_are_skipped_and_survive_a_later_append() {
    let entries = long_history(10_000);
    let lines: Vec<String> = entries.iter().map(to_line).collect();
    let clean = lines.join("\n") + "\n";

    let future = to_line(&entry(10_001, "run-x", varied_body(8))).replacen(
        &format!("\"v\":{SCHEMA_VERSION}"),
        "\"v\":99",
        1,
    );
    let truncated = &lines[0][..lines[0].len() / 2];
    let mut corrupt_lines = lines.clone();
    corrupt_lines.insert(5_000, "{\"v\":1,\"seq\":\"not a number\",".to_string());
    corrupt_lines.insert(7_000, future.clone());
    let corrupted = corrupt_lines.join("\n") + "\n" + truncated;

    let parsed_clean = jsonl::parse(&clean);
    let parsed = jsonl::parse(&corrupted);
    assert!(parsed_clean.corrupt.is_empty());
    assert_eq!(
        parsed.corrupt.iter().map(|c| c.line_no).collect::<Vec<_>>(),
        [5_001, 7_001, 10_003]
    );
    assert!(parsed.corrupt[1].error.contains("schema version 99"));
    assert!(parsed.corrupt[2].error.starts_with("truncated last line"));
    assert_eq!(parsed.entries, entries);
    assert_eq!(replay(&parsed.entries), replay(&parsed_clean.entries));

    // Replaying the file as it is read (the load path) gives the same state and the same report,
    // also when the file is large enough to be parsed on several threads.
    assert!(corrupted.len() > 2 << 20, "{}", corrupted.len());
    let (state, scan) = replan::history::replay_text(&corrupted);
    assert_eq!(state, replay(&parsed.entries));
    assert_eq!(scan.corrupt, parsed.corrupt);
    assert_eq!((scan.entries, scan.max_seq), (entries.len(), 10_001));

    // A further append keeps every line, closes the cut-off line and numbers after the future one.
    let dir = tempfile::tempdir().unwrap();
    let history = LocalHistory::new(dir.path(), "planning_history");
    let thread = ThreadRef::issue(7);
    let path = history.path(&thread);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &corrupted).unwrap();
    let outcome = history
        .append_blocking(&thread, &[entry(1, "run-new", varied_body(8))])
        .unwrap();
    assert_eq!(outcome.first_seq, 10_002);
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&corrupted), "existing bytes were changed");
    let after_lines: Vec<&str> = after.lines().collect();
    assert_eq!(after_lines.len(), 10_004);
    assert_eq!(after_lines[10_002], truncated);
    assert!(after_lines[10_003].contains("\"seq\":10002"));
    let reparsed = jsonl::parse(&after);
    assert_eq!(reparsed.corrupt.len(), 3);
    assert_eq!(reparsed.entries.len(), 10_001);
}

#[test]
fn concurrent_local_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let thread = ThreadRef::issue(3);
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|run| {
            let root = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let history = LocalHistory::new(root, "planning_history");
                for i in 0..200u64 {
                    let body = EntryBody::Checklist {
                        comment_id: format!("{run}-{i}"),
                    };
                    history
                        .append_blocking(&thread, &[entry(1, run, body)])
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let history = LocalHistory::new(dir.path(), "planning_history");
    let text = history.load_blocking(&thread).unwrap().text;
    let parsed = jsonl::parse(&text);
    assert!(parsed.corrupt.is_empty());
    assert_eq!(parsed.entries.len(), 400);
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<_>>());
    for run in ["a", "b"] {
        let mine: Vec<String> = parsed
            .entries
            .iter()
            .filter(|e| e.run_id == run)
            .map(|e| match &e.body {
                EntryBody::Checklist { comment_id } => comment_id.clone(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        let expected: Vec<String> = (0..200).map(|i| format!("{run}-{i}")).collect();
        assert_eq!(mine, expected);
    }
    assert_eq!(history.threads_blocking().unwrap(), [thread]);
}

// ---------------------------------------------------------------- git branch backend

const GIT_ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_AUTHOR_NAME", "Test Author"),
    ("GIT_AUTHOR_EMAIL", "author@example.com"),
    ("GIT_COMMITTER_NAME", "Test Committer"),
    ("GIT_COMMITTER_EMAIL", "committer@example.com"),
];

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(GIT_ENV.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn repo_with_work_in_progress() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::write(p.join("README.md"), "hello\n").unwrap();
    git(p, &["add", "README.md"]);
    git(p, &["commit", "-q", "-m", "first"]);
    // Uncommitted work that must survive: a staged file and an edited one.
    std::fs::write(p.join("staged.txt"), "staged\n").unwrap();
    git(p, &["add", "staged.txt"]);
    std::fs::write(p.join("README.md"), "hello, edited\n").unwrap();
    dir
}

fn git_history(repo: &Path) -> GitBranchHistory {
    let mut h = GitBranchHistory::new(repo, "replan-history", "planning_history");
    h.git_env = GIT_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    h
}

fn checklist(run: &str, id: &str) -> Entry {
    entry(
        1,
        run,
        EntryBody::Checklist {
            comment_id: id.into(),
        },
    )
}

fn comment_ids(text: &str) -> Vec<(u64, String)> {
    let parsed = jsonl::parse(text);
    assert!(parsed.corrupt.is_empty(), "{:?}", parsed.corrupt);
    parsed
        .entries
        .iter()
        .map(|e| match &e.body {
            EntryBody::Checklist { comment_id } => (e.seq, comment_id.clone()),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

#[test]
fn git_branch_history_uses_an_orphan_branch_and_leaves_the_checkout_alone() {
    let repo = repo_with_work_in_progress();
    let p = repo.path();
    let head = git(p, &["rev-parse", "HEAD"]);
    let status = git(p, &["status", "--porcelain"]);
    let staged = git(p, &["diff", "--cached"]);
    let history = git_history(p);
    let thread = ThreadRef::issue(42);

    assert_eq!(history.load_blocking(&thread).unwrap().text, "");
    let first = history
        .append_blocking(&thread, &[checklist("r1", "c1"), checklist("r1", "c2")])
        .unwrap();
    assert_eq!(first.first_seq, 1);
    let second = history
        .append_blocking(&thread, &[checklist("r2", "c3")])
        .unwrap();
    assert_eq!(second.first_seq, 3);

    // Orphan: the branch's root commit is its own, with no link to main.
    let roots = git(p, &["rev-list", "--max-parents=0", "replan-history"]);
    assert_eq!(roots.lines().count(), 1);
    assert_ne!(roots, git(p, &["rev-list", "--max-parents=0", "main"]));
    assert_eq!(git(p, &["rev-list", "--count", "replan-history"]), "2");
    assert_eq!(
        Some(git(p, &["rev-parse", "replan-history"])),
        second.commit
    );
    let file = git(
        p,
        &["show", "replan-history:planning_history/issues/42.jsonl"],
    );
    assert_eq!(
        comment_ids(&file),
        [(1, "c1".into()), (2, "c2".into()), (3, "c3".into())]
    );
    assert_eq!(
        git(p, &["ls-tree", "-r", "--name-only", "replan-history"]),
        "planning_history/issues/42.jsonl"
    );

    // The checkout is as it was.
    assert_eq!(git(p, &["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(git(p, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(p, &["status", "--porcelain"]), status);
    assert_eq!(git(p, &["diff", "--cached"]), staged);
    assert!(!p.join("planning_history").exists());

    assert_eq!(history.threads_blocking().unwrap(), [thread]);
    let loaded = history.load_blocking(&thread).unwrap();
    assert_eq!(loaded.version, second.commit);
    assert_eq!(comment_ids(&loaded.text).len(), 3);
}

#[test]
fn git_branch_history_reappends_when_the_branch_moves_underneath() {
    let repo = repo_with_work_in_progress();
    let p = repo.path().to_path_buf();
    let thread = ThreadRef::issue(5);
    git_history(&p)
        .append_blocking(&thread, &[checklist("r0", "base")])
        .unwrap();

    let mut racer = git_history(&p);
    let other = git_history(&p);
    racer.before_update_ref = Some(Arc::new(move |attempt| {
        if attempt == 0 {
            other
                .append_blocking(
                    &thread,
                    &[checklist("other", "o1"), checklist("other", "o2")],
                )
                .unwrap();
        }
    }));
    let outcome = racer
        .append_blocking(&thread, &[checklist("mine", "m1"), checklist("mine", "m2")])
        .unwrap();
    assert_eq!(outcome.conflicts, 1);
    assert_eq!(outcome.first_seq, 4);
    let file = git(
        &p,
        &["show", "replan-history:planning_history/issues/5.jsonl"],
    );
    assert_eq!(
        comment_ids(&file),
        [
            (1, "base".into()),
            (2, "o1".into()),
            (3, "o2".into()),
            (4, "m1".into()),
            (5, "m2".into())
        ]
    );
    assert_eq!(git(&p, &["rev-list", "--count", "replan-history"]), "3");
}

#[test]
fn git_branch_history_gives_up_only_when_its_time_is_up() {
    let repo = repo_with_work_in_progress();
    let p = repo.path().to_path_buf();
    let thread = ThreadRef::issue(6);
    let mut racer = git_history(&p);
    racer.retry = replan::history::cas::Retry::with_timeout(std::time::Duration::from_millis(200));
    let other = git_history(&p);
    racer.before_update_ref = Some(Arc::new(move |_| {
        other
            .append_blocking(&thread, &[checklist("other", "o")])
            .unwrap();
    }));
    let err = racer
        .append_blocking(&thread, &[checklist("mine", "m")])
        .unwrap_err();
    let err = err.to_string();
    assert!(
        err.starts_with(
            "could not append to planning_history/issues/6.jsonl: the history branch kept moving for 0 s"
        ),
        "{err}"
    );
    // The other writer's lines are all there, ours not.
    let file = git(
        &p,
        &["show", "replan-history:planning_history/issues/6.jsonl"],
    );
    let ids = comment_ids(&file);
    assert!(
        !ids.is_empty() && ids.iter().all(|(_, id)| id == "o"),
        "{ids:?}"
    );
}

#[test]
fn git_branch_history_pushes_and_reappends_after_a_rejected_push() {
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare"]);
    let clone = |name: &str| {
        let dir = tempfile::tempdir().unwrap();
        let _ = name;
        git(dir.path(), &["init", "-q", "-b", "main"]);
        git(
            dir.path(),
            &["remote", "add", "origin", remote.path().to_str().unwrap()],
        );
        dir
    };
    let a_dir = clone("a");
    let b_dir = clone("b");
    let thread = ThreadRef::issue(9);
    let with_remote = |p: &Path| {
        let mut h = git_history(p);
        h.push_remote = Some("origin".into());
        h
    };
    with_remote(a_dir.path())
        .append_blocking(&thread, &[checklist("a", "a1")])
        .unwrap();
    let b = with_remote(b_dir.path());
    let mut a = with_remote(a_dir.path());
    a.before_update_ref = Some(Arc::new(move |attempt| {
        if attempt == 0 {
            b.append_blocking(&thread, &[checklist("b", "b1")]).unwrap();
        }
    }));
    let outcome = a.append_blocking(&thread, &[checklist("a", "a2")]).unwrap();
    assert_eq!(outcome.conflicts, 1);
    let file = git(
        remote.path(),
        &["show", "replan-history:planning_history/issues/9.jsonl"],
    );
    assert_eq!(
        comment_ids(&file),
        [(1, "a1".into()), (2, "b1".into()), (3, "a2".into())]
    );
}

// ---------------------------------------------------------------- export and stats

fn crafted_history() -> Vec<Entry> {
    let bodies = vec![
        (
            "r1",
            EntryBody::RunStarted {
                request: request("alice", "start"),
            },
        ),
        (
            "r1",
            EntryBody::Plan {
                version: 1,
                plan: Box::new(plan(&["task_1", "task_2"])),
            },
        ),
        (
            "r1",
            decision(
                "d1",
                Phase::Execution,
                ReplanType::PartialReplan,
                0.85,
                true,
                None,
                1200,
            ),
        ),
        (
            "r1",
            decision(
                "d2",
                Phase::Reflection,
                ReplanType::PlanRevision,
                0.4,
                false,
                Some("confidence below threshold"),
                800,
            ),
        ),
        (
            "r1",
            decision(
                "d3",
                Phase::Execution,
                ReplanType::FullReplan,
                0.2,
                false,
                Some("confidence below threshold"),
                400,
            ),
        ),
        (
            "r1",
            decision(
                "d4",
                Phase::TaskDecomposition,
                ReplanType::None,
                0.6,
                false,
                None,
                600,
            ),
        ),
        (
            "r1",
            EntryBody::Revision {
                version: 2,
                reason: "README moved to docs/".into(),
                changes: vec![],
                updated_plan: Box::new(plan(&["task_1", "task_3"])),
                replan_type: ReplanType::PartialReplan,
                trigger: Some(ReplanTrigger::TaskFailed),
            },
        ),
        (
            "r1",
            EntryBody::Reflection {
                reflection: Reflection {
                    action_id: "task_1_action_1".into(),
                    status: ReflectionStatus::Failure,
                    evaluation: "file not found".into(),
                    plan_revision_needed: true,
                    ..Default::default()
                },
                plan_revision: None,
            },
        ),
        (
            "r1",
            EntryBody::Question(Question {
                questions: vec!["Which README should change?".into()],
                context: "two READMEs".into(),
                assumptions: vec!["the top-level one".into()],
                phase: Phase::GoalUnderstanding,
            }),
        ),
        (
            "r1",
            EntryBody::Usage {
                model: None,
                usage: usage(3, 1000, 200, 0.02),
            },
        ),
        (
            "r1",
            EntryBody::RunFinished {
                status: RunStatus::WaitingForAnswer,
                usage: usage(3, 1000, 200, 0.02),
                pull_request: None,
                structured_output: None,
            },
        ),
        (
            "r2",
            EntryBody::RunStarted {
                request: request("alice", "answer"),
            },
        ),
        (
            "r2",
            EntryBody::Answer {
                author: "alice".into(),
                text: "docs/README.md".into(),
                assumed: false,
            },
        ),
        (
            "r2",
            EntryBody::Approval {
                request_id: "ap1".into(),
                decision: None,
                author: None,
                reason: None,
                subject: serde_json::json!({"decision": "d2"}),
            },
        ),
        (
            "r2",
            EntryBody::Approval {
                request_id: "ap1".into(),
                decision: Some(ApprovalDecision::Approved),
                author: Some("bob".into()),
                reason: None,
                subject: serde_json::Value::Null,
            },
        ),
        (
            "r2",
            EntryBody::TaskState {
                task_id: "task_1".into(),
                state: TaskState::Done,
                replanning_info: None,
                note: None,
            },
        ),
        (
            "r2",
            EntryBody::TaskState {
                task_id: "task_3".into(),
                state: TaskState::Blocked,
                replanning_info: None,
                note: Some("no access".into()),
            },
        ),
        (
            "r2",
            EntryBody::Usage {
                model: None,
                usage: usage(2, 500, 100, 0.01),
            },
        ),
        (
            "r2",
            EntryBody::Completion {
                completion: Box::new(Completion {
                    phase: "completion".into(),
                    status: None,
                    summary: CompletionSummary {
                        goal_achieved: true,
                        tasks_completed: 1,
                        tasks_failed: 1,
                        key_outcomes: vec!["README fixed".into()],
                        ..Default::default()
                    },
                    done: true,
                    comment: None,
                    review_threads: vec![],
                }),
            },
        ),
        (
            "r2",
            EntryBody::RunFinished {
                status: RunStatus::Completed,
                usage: usage(2, 500, 100, 0.01),
                pull_request: Some("https://example.com/pr/1".into()),
                structured_output: None,
            },
        ),
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, (run, body))| entry(i as u64 + 1, run, body))
        .collect()
}

#[test]
fn stats_count_decisions_runs_tasks_and_usage() {
    let s = stats(&crafted_history(), 1);
    assert_eq!(s.entries, 20);
    assert_eq!(s.corrupt_lines, 1);
    assert_eq!(
        (s.runs_started, s.runs_finished, s.runs_completed),
        (2, 2, 1)
    );
    assert_eq!(s.run_success_rate, Some(0.5));
    assert_eq!(s.plan_version, 2);
    assert_eq!(s.plan_revisions, 1);
    assert_eq!(s.decisions, 4);
    assert_eq!(
        s.replans_by_phase.into_iter().collect::<Vec<_>>(),
        [("execution".to_string(), 2), ("reflection".to_string(), 1)]
    );
    assert_eq!(
        s.replans_by_type.into_iter().collect::<Vec<_>>(),
        [
            ("full_replan".to_string(), 1),
            ("partial_replan".to_string(), 1),
            ("plan_revision".to_string(), 1)
        ]
    );
    assert_eq!((s.decisions_executed, s.decisions_overridden), (1, 2));
    assert_eq!(
        s.override_reasons.into_iter().collect::<Vec<_>>(),
        [("confidence below threshold".to_string(), 2)]
    );
    assert_eq!(
        (
            s.confidence.high,
            s.confidence.medium,
            s.confidence.low,
            s.confidence.very_low
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(s.average_decision_duration_ms, Some(750.0));
    // Current plan: task_1 (done), task_3 (blocked).
    assert_eq!((s.tasks_done, s.tasks_total), (1, 2));
    assert_eq!(s.task_success_rate, Some(0.5));
    assert_eq!(s.usage.calls, 5);
    assert_eq!(s.usage.prompt_tokens + s.usage.completion_tokens, 1800);
    assert!((s.usage.cost_usd - 0.03).abs() < 1e-9);
    assert_eq!((s.questions, s.answers), (1, 1));
    assert_eq!((s.approvals_requested, s.approvals_granted), (1, 1));
}

fn crafted_text_with_a_corrupt_line() -> String {
    let lines: Vec<String> = crafted_history().iter().map(to_line).collect();
    format!(
        "{}\nthis is not json\n{}\n",
        lines[..3].join("\n"),
        lines[3..].join("\n")
    )
}

#[test]
fn every_export_format_renders_the_history() {
    let text = crafted_text_with_a_corrupt_line();
    let thread = ThreadRef::issue(12);

    let md = export(&thread, &text, ExportFormat::Markdown);
    assert_eq!(md.corrupt.len(), 1);
    let b = &md.body;
    assert!(b.starts_with("# Replan history: issue #12\n"), "{b}");
    assert!(b.contains("- Entries: 20 (1 corrupt lines skipped)"), "{b}");
    assert!(b.contains("## Run `r1`"), "{b}");
    assert!(
        b.contains("Requested by @alice (start, event `issues`)"),
        "{b}"
    );
    assert!(b.contains("### Plan v1"), "{b}");
    assert!(b.contains("| task_2 | do task_2 |"), "{b}");
    assert!(b.contains("### Plan v2 — revision (partial_replan)"), "{b}");
    assert!(b.contains("**Reason:** README moved to docs/"), "{b}");
    assert!(b.contains("### Decision `d1`"), "{b}");
    assert!(b.contains("- Phase: execution\n- Replan needed: yes\n- Type: partial_replan\n- Confidence: 0.85\n- Executed: yes"), "{b}");
    assert!(b.contains("- Override: confidence below threshold"), "{b}");
    assert!(b.contains("### Reflection on `task_1_action_1`"), "{b}");
    assert!(b.contains("- Which README should change?"), "{b}");
    assert!(b.contains("### Answer by @alice"), "{b}");
    assert!(b.contains("- Approval `ap1` requested"), "{b}");
    assert!(b.contains("- Approval `ap1` approved by @bob"), "{b}");
    assert!(b.contains("### Completion"), "{b}");
    assert!(b.contains("- Goal achieved: yes"), "{b}");
    assert!(b.contains("**Run finished: completed**"), "{b}");
    assert!(b.contains("| task_3 | BLOCKED |"), "{b}");
    assert!(
        b.contains("5 LLM calls, 1500 prompt + 300 completion tokens, $0.0300"),
        "{b}"
    );
    assert!(b.contains("- line 4: not valid JSON"), "{b}");

    let parsed = jsonl::parse(&text);
    let show = replan::history::export::summary(
        &thread,
        &replay(&parsed.entries),
        parsed.entries.len(),
        &parsed.corrupt,
    );
    assert!(
        show.starts_with("issue #12: 20 entries, 2 runs, 1 corrupt lines skipped\n"),
        "{show}"
    );
    assert!(
        show.contains("last run: r2 by @alice (answer) → completed"),
        "{show}"
    );
    assert!(
        show.contains("plan v2 (1 revisions): Fix the README typo"),
        "{show}"
    );
    assert!(show.contains("  [x] task_1 do task_1 (DONE)"), "{show}");
    assert!(show.contains("  [!] task_3 do task_3 (BLOCKED)"), "{show}");

    let json = export(&thread, &text, ExportFormat::Json);
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(
        v["thread"],
        serde_json::json!({"kind": "issues", "number": 12})
    );
    assert_eq!(v["entries"].as_array().unwrap().len(), 20);
    assert_eq!(v["entries"][2]["type"], "replan_decision");
    assert_eq!(v["entries"][2]["llm_decision"]["confidence"], 0.85);
    assert_eq!(v["corrupt_lines"][0]["line_no"], 4);
    assert_eq!(v["state"]["plan_version"], 2);
    assert_eq!(v["state"]["tasks"]["task_1"], "DONE");
    assert_eq!(v["state"]["last_status"], "completed");

    let jsonl_out = export(&thread, &text, ExportFormat::Jsonl);
    let expected: String = crafted_history()
        .iter()
        .map(|e| to_line(e) + "\n")
        .collect();
    assert_eq!(jsonl_out.body, expected);
    assert_eq!(jsonl_out.corrupt[0].raw_prefix, "this is not json");

    let st = export(&thread, &text, ExportFormat::Stats);
    assert!(
        st.body
            .contains("Runs:               2 started, 2 finished, 1 completed (success rate 50 %)"),
        "{}",
        st.body
    );
    assert!(
        st.body
            .contains("Confidence:         ≥0.8: 1, 0.5–0.8: 1, 0.3–0.5: 1, <0.3: 1"),
        "{}",
        st.body
    );
    assert!(
        st.body
            .contains("Override reasons:   confidence below threshold 2"),
        "{}",
        st.body
    );
    let sj = export(&thread, &text, ExportFormat::StatsJson);
    let v: serde_json::Value = serde_json::from_str(&sj.body).unwrap();
    assert_eq!(v["decisions"], 4);
    assert_eq!(v["replans_by_type"]["full_replan"], 1);
    assert_eq!(v["confidence"]["very_low"], 1);
    assert_eq!(
        "stats-json".parse::<ExportFormat>(),
        Ok(ExportFormat::StatsJson)
    );
    assert!(
        "xml"
            .parse::<ExportFormat>()
            .unwrap_err()
            .contains("use md, json, jsonl")
    );
}

// ---------------------------------------------------------------- prune

#[tokio::test]
async fn prune_archives_an_old_thread_and_keeps_a_live_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let archive = tempfile::tempdir().unwrap();
    let history = LocalHistory::new(dir.path(), "planning_history");
    let now = t0() + Duration::days(200);
    let old = ThreadRef::issue(1);
    let live = ThreadRef::issue(2);
    // Old thread: everything from t0, with a corrupt line that must reach the archive too.
    let old_text = format!(
        "{}\n{{broken\n{}\n",
        to_line(&entry(1, "r", varied_body(0))),
        to_line(&entry(2, "r", varied_body(8)))
    );
    history.rewrite(&old, &old_text).await.unwrap();
    // Live thread: old entries and one from yesterday.
    let mut recent = entry(3, "r2", varied_body(8));
    recent.ts = now - Duration::days(1);
    let live_text = format!(
        "{}\n{}\n{}\n",
        to_line(&entry(1, "r", varied_body(0))),
        to_line(&entry(2, "r", varied_body(8))),
        to_line(&recent)
    );
    history.rewrite(&live, &live_text).await.unwrap();

    let mut options = PruneOptions::retention_days(90, now);
    options.archive_dir = Some(archive.path().to_path_buf());

    let dry = PruneOptions {
        dry_run: true,
        ..options.clone()
    };
    let report = prune(&history, &dry).await.unwrap();
    assert_eq!(report.retired.len(), 1);
    assert_eq!(history.threads().await.unwrap(), [old, live]);

    let report = prune(&history, &options).await.unwrap();
    let archived = archive.path().join("issues-1.jsonl");
    assert_eq!(report.retired, [(old, Some(archived.clone()))]);
    assert_eq!(report.kept, [live]);
    assert_eq!(std::fs::read_to_string(&archived).unwrap(), old_text);
    assert_eq!(history.threads().await.unwrap(), [live]);
    assert_eq!(history.load(&live).await.unwrap().text, live_text);
    assert!(report.to_string().contains("retired #1: archived to"));
}

#[tokio::test]
async fn git_branch_history_prunes_through_rewrite() {
    let repo = repo_with_work_in_progress();
    let history = git_history(repo.path());
    let old = ThreadRef::issue(1);
    let live = ThreadRef::issue(2);
    let mut fresh = checklist("r", "new");
    fresh.ts = t0() + Duration::days(199);
    history
        .append(&old, &[checklist("r", "old")])
        .await
        .unwrap();
    history.append(&live, &[fresh]).await.unwrap();
    let report = prune(
        &history,
        &PruneOptions::retention_days(90, t0() + Duration::days(200)),
    )
    .await
    .unwrap();
    assert_eq!(report.retired, [(old, None)]);
    assert_eq!(history.threads().await.unwrap(), [live]);
    assert_eq!(
        git(
            repo.path(),
            &["ls-tree", "-r", "--name-only", "replan-history"]
        ),
        "planning_history/issues/2.jsonl"
    );
}

#[test]
fn git_branch_history_keeps_lines_that_are_not_utf8() {
    let repo = repo_with_work_in_progress();
    let p = repo.path();
    git(p, &["stash", "-q"]);
    git(p, &["switch", "-q", "--orphan", "replan-history"]);
    let original: Vec<u8> = [
        to_line(&checklist("r", "c1")).as_bytes(),
        b"\n{\"v\":1,\"broken\xff\xfe\n",
    ]
    .concat();
    std::fs::create_dir_all(p.join("planning_history/issues")).unwrap();
    std::fs::write(p.join("planning_history/issues/1.jsonl"), &original).unwrap();
    git(p, &["add", "planning_history"]);
    git(p, &["commit", "-q", "-m", "hand-written history"]);
    git(p, &["switch", "-q", "main"]);

    let outcome = git_history(p)
        .append_blocking(&ThreadRef::issue(1), &[checklist("r2", "c2")])
        .unwrap();
    assert_eq!(outcome.first_seq, 2);
    let out = Command::new("git")
        .arg("-C")
        .arg(p)
        .args([
            "cat-file",
            "blob",
            "replan-history:planning_history/issues/1.jsonl",
        ])
        .output()
        .unwrap();
    assert!(out.stdout.starts_with(&original));
    let text = String::from_utf8_lossy(&out.stdout);
    let parsed = jsonl::parse(&text);
    assert_eq!(parsed.entries.len(), 2);
    assert_eq!(parsed.corrupt.len(), 1);
}

// ----- bad input: counters at their limits (issue 14; these used to panic)

fn huge_usage(tokens: u64) -> EntryBody {
    EntryBody::Usage {
        model: None,
        usage: UsageTotals {
            calls: u64::MAX,
            prompt_tokens: tokens,
            completion_tokens: tokens,
            cached_tokens: tokens,
            cost_usd: 0.5,
            ..UsageTotals::default()
        },
    }
}

#[test]
fn a_thread_at_the_largest_seq_gets_a_clear_error_not_a_panic_or_a_wrapped_seq() {
    let dir = tempfile::tempdir().unwrap();
    let history = LocalHistory::new(dir.path(), "planning_history");
    let thread = ThreadRef::issue(9);
    let last = to_line(&entry(u64::MAX, "old", huge_usage(1)));
    let path = history.path(&thread);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{last}\n")).unwrap();

    // The engine's next entry saturates instead of overflowing...
    let state = replay(&jsonl::parse(&std::fs::read_to_string(&path).unwrap()).entries);
    let mut batch = replan::engine::batch::Batch::new(&state, "run", std::sync::Arc::new(t0));
    batch.push(huge_usage(1));
    assert_eq!(batch.entries[0].seq, u64::MAX);
    // ...and the writer refuses it with a message that says why and what to do.
    let err = history
        .append_blocking(&thread, &batch.entries)
        .unwrap_err()
        .to_string();
    assert!(err.contains("largest sequence number"), "{err}");
    assert!(err.contains("replan history prune"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{last}\n"),
        "nothing written"
    );
}

#[test]
fn usage_totals_saturate_instead_of_wrapping() {
    let entries = [
        entry(1, "run", huge_usage(u64::MAX - 1)),
        entry(2, "run", huge_usage(u64::MAX - 1)),
    ];
    let state = replay(&entries);
    assert_eq!(state.usage.calls, u64::MAX);
    assert_eq!(state.usage.prompt_tokens, u64::MAX);
    assert_eq!(state.usage.completion_tokens, u64::MAX);
    assert_eq!(state.usage.cached_tokens, u64::MAX);
    assert_eq!(stats(&entries, 0).usage.prompt_tokens, u64::MAX);
}

// ----- the run's history writer: batches, flush points, nothing lost

fn run_finished() -> EntryBody {
    EntryBody::RunFinished {
        status: RunStatus::Completed,
        usage: UsageTotals::default(),
        pull_request: None,
        structured_output: None,
    }
}

#[tokio::test]
async fn the_history_sink_batches_commit_every_entries_and_flushes_at_the_end_of_the_run() {
    use replan::app::history_sink::HistorySink;
    use replan::engine::journal::EntrySink;
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalHistory::new(dir.path(), "planning_history"));
    let thread = ThreadRef::issue(4);
    let sink = HistorySink::new(backend.clone(), thread, 3);
    let count = || {
        jsonl::parse(&backend.load_blocking(&thread).unwrap().text)
            .entries
            .len()
    };

    sink.append(&[checklist("run", "a"), checklist("run", "b")])
        .await
        .unwrap();
    assert_eq!(count(), 0, "two entries wait for the third");
    sink.append(&[checklist("run", "c")]).await.unwrap();
    assert_eq!(count(), 3, "commit_every reached");
    sink.append(&[checklist("run", "d")]).await.unwrap();
    sink.append(&[entry(1, "run", run_finished())])
        .await
        .unwrap();
    assert_eq!(count(), 5, "the end of the run flushes at once");
}

/// The types of the entries committed to issue 4's history in `backend`, in file order.
fn committed_types(backend: &LocalHistory) -> Vec<&'static str> {
    jsonl::parse(&backend.load_blocking(&ThreadRef::issue(4)).unwrap().text)
        .entries
        .iter()
        .map(|e| e.body.type_name())
        .collect()
}

/// The intent of a comment posted under `key`.
fn comment_effect(key: &str) -> Entry {
    entry(
        0,
        "run",
        EntryBody::Effect {
            key: key.into(),
            effect: replan::history::entry::EffectKind::Comment,
            target: None,
        },
    )
}

/// A step with a notice: its entries wait for the notice's effect entry even when they fill a
/// batch, and go out in the same commit (the end of a run whose work is already saved made three
/// history commits in a row: the full batch, the completion notice's intent, run_finished).
#[tokio::test]
async fn entries_before_a_notice_wait_for_its_effect_entry_and_commit_with_it() {
    use replan::app::history_sink::HistorySink;
    use replan::engine::journal::EntrySink;
    use replan::history::Journal;
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalHistory::new(dir.path(), "planning_history"));
    let thread = ThreadRef::issue(4);
    let sink = HistorySink::new(backend.clone(), thread, 2);
    let types = || committed_types(&backend);

    sink.append_before_notices(&[checklist("run", "a"), checklist("run", "b")])
        .await
        .unwrap();
    assert!(types().is_empty(), "a full batch before a notice waits");
    sink.commit_with(&[comment_effect("notice")]).await.unwrap();
    assert_eq!(types(), ["checklist", "checklist", "effect"]);

    // The same entries without a notice to follow: the full batch commits at once.
    sink.append(&[checklist("run", "c"), checklist("run", "d")])
        .await
        .unwrap();
    assert_eq!(types().len(), 5);
    // A flush point before a notice still commits at once.
    sink.append_before_notices(&[entry(6, "run", run_finished())])
        .await
        .unwrap();
    assert_eq!(types().last(), Some(&"run_finished"));
}

/// A local history whose appends wait for the test to open a gate, and fail while `failing`.
struct GatedHistory {
    inner: LocalHistory,
    gate: tokio::sync::Semaphore,
    failing: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl replan::history::HistoryBackend for GatedHistory {
    async fn load(
        &self,
        thread: &ThreadRef,
    ) -> Result<replan::history::LoadedHistory, replan::history::HistoryError> {
        self.inner.load(thread).await
    }

    async fn append(
        &self,
        thread: &ThreadRef,
        entries: &[Entry],
    ) -> Result<replan::history::AppendOutcome, replan::history::HistoryError> {
        let _pass = self.gate.acquire().await.unwrap();
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(replan::history::HistoryError::Backend(
                "the forge is down".into(),
            ));
        }
        self.inner.append(thread, entries).await
    }

    async fn threads(&self) -> Result<Vec<ThreadRef>, replan::history::HistoryError> {
        self.inner.threads().await
    }

    async fn rewrite(
        &self,
        thread: &ThreadRef,
        text: &str,
    ) -> Result<replan::history::AppendOutcome, replan::history::HistoryError> {
        self.inner.rewrite(thread, text).await
    }
}

/// The run's sink commits a full batch beside what the run does next: the append returns while
/// the commit still waits on the forge, the next flush waits for it, and a batch that failed is
/// still pending (and committed) at the next flush, in order.
#[tokio::test]
async fn a_full_batch_is_committed_in_the_background_and_a_failed_one_by_the_next_flush() {
    use replan::app::history_sink::HistorySink;
    use replan::engine::journal::EntrySink;
    let dir = tempfile::tempdir().unwrap();
    let thread = ThreadRef::issue(4);
    let backend = Arc::new(GatedHistory {
        inner: LocalHistory::new(dir.path(), "planning_history"),
        gate: tokio::sync::Semaphore::new(0),
        failing: std::sync::atomic::AtomicBool::new(false),
    });
    let sink = HistorySink::new(backend.clone(), thread, 2).shared();
    let lines = || -> Vec<String> {
        jsonl::parse(&backend.inner.load_blocking(&thread).unwrap().text)
            .entries
            .iter()
            .map(|e| match &e.body {
                EntryBody::Checklist { comment_id } => comment_id.clone(),
                other => other.type_name().to_owned(),
            })
            .collect()
    };
    let quick = std::time::Duration::from_secs(5);

    tokio::time::timeout(
        quick,
        sink.append(&[checklist("run", "a"), checklist("run", "b")]),
    )
    .await
    .expect("a full batch does not hold up the run while the forge is slow")
    .unwrap();
    assert!(lines().is_empty());
    backend.gate.add_permits(1);
    sink.flush().await.unwrap();
    assert_eq!(lines(), ["a", "b"]);

    backend
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    backend.gate.add_permits(1);
    sink.append(&[checklist("run", "c"), checklist("run", "d")])
        .await
        .unwrap();
    // Let the background commit run and fail.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(lines(), ["a", "b"]);
    backend
        .failing
        .store(false, std::sync::atomic::Ordering::SeqCst);
    backend.gate.add_permits(10);
    sink.append(&[checklist("run", "e")]).await.unwrap();
    sink.flush().await.unwrap();
    assert_eq!(lines(), ["a", "b", "c", "d", "e"]);
}

/// An entry of run "run" that marks `task` done.
fn task_done(seq: u64, task: &str) -> Entry {
    entry(
        seq,
        "run",
        EntryBody::TaskState {
            task_id: task.into(),
            state: TaskState::Done,
            replanning_info: None,
            note: None,
        },
    )
}

/// Counts the thread's committed lines each time a flush is about to commit a finished task.
struct LinesAtHook {
    backend: Arc<LocalHistory>,
    seen: std::sync::Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl replan::app::history_sink::BeforeCommit for LinesAtHook {
    async fn before_commit(&self, _done_at: Option<std::time::Instant>) {
        let text = self
            .backend
            .load_blocking(&ThreadRef::issue(4))
            .unwrap()
            .text;
        self.seen
            .lock()
            .unwrap()
            .push(jsonl::parse(&text).entries.len());
    }
}

#[tokio::test]
async fn a_flush_that_records_a_finished_task_saves_the_work_before_it_commits() {
    use replan::app::history_sink::HistorySink;
    use replan::engine::journal::EntrySink;
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalHistory::new(dir.path(), "planning_history"));
    let hook = Arc::new(LinesAtHook {
        backend: backend.clone(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let sink =
        HistorySink::new(backend.clone(), ThreadRef::issue(4), 2).with_before_commit(hook.clone());
    let done = |seq| task_done(seq, "task_1");

    // No finished task in the batch: no save.
    sink.append(&[checklist("run", "a"), checklist("run", "b")])
        .await
        .unwrap();
    assert_eq!(*hook.seen.lock().unwrap(), Vec::<usize>::new());
    // A batch that finishes a task: the save runs while the history still lacks it.
    sink.append(&[checklist("run", "c"), done(4)])
        .await
        .unwrap();
    assert_eq!(*hook.seen.lock().unwrap(), vec![2]);
    let committed = jsonl::parse(&backend.load_blocking(&ThreadRef::issue(4)).unwrap().text);
    assert_eq!(committed.entries.len(), 4);
}

/// A work saver whose last save is as recent as the test says.
struct RecentSave {
    saves: std::sync::Mutex<usize>,
    saved_at: std::sync::Mutex<Option<std::time::Instant>>,
}

#[async_trait::async_trait]
impl replan::app::history_sink::BeforeCommit for RecentSave {
    async fn before_commit(&self, _done_at: Option<std::time::Instant>) {
        *self.saves.lock().unwrap() += 1;
        *self.saved_at.lock().unwrap() = Some(std::time::Instant::now());
    }

    fn saved_at(&self) -> Option<std::time::Instant> {
        *self.saved_at.lock().unwrap()
    }

    fn saved_recently(&self) -> bool {
        self.saved_at().is_some()
    }
}

/// A sink on issue 4's local history (`commit_every`) whose work saver saved just now.
fn sink_after_a_recent_save(
    dir: &std::path::Path,
    commit_every: u32,
) -> (
    Arc<LocalHistory>,
    Arc<RecentSave>,
    replan::app::history_sink::HistorySink,
) {
    let backend = Arc::new(LocalHistory::new(dir, "planning_history"));
    let hook = Arc::new(RecentSave {
        saves: std::sync::Mutex::new(0),
        saved_at: std::sync::Mutex::new(Some(std::time::Instant::now())),
    });
    let sink = replan::app::history_sink::HistorySink::new(
        backend.clone(),
        ThreadRef::issue(4),
        commit_every,
    )
    .with_before_commit(hook.clone());
    (backend, hook, sink)
}

#[tokio::test]
async fn a_full_batch_with_an_unsaved_finished_task_waits_for_the_next_save_or_flush_point() {
    use replan::engine::journal::EntrySink;
    let dir = tempfile::tempdir().unwrap();
    let (backend, hook, sink) = sink_after_a_recent_save(dir.path(), 2);
    let count = || {
        jsonl::parse(&backend.load_blocking(&ThreadRef::issue(4)).unwrap().text)
            .entries
            .len()
    };
    let done = task_done;

    // The last save was just now and task_1 finished after it: committing would force another
    // save, so the full batch waits.
    sink.append(&[checklist("run", "a"), done(2, "task_1")])
        .await
        .unwrap();
    sink.append(&[checklist("run", "b")]).await.unwrap();
    assert_eq!((count(), *hook.saves.lock().unwrap()), (0, 0));
    // A flush point commits at once, saving the work first.
    sink.append(&[entry(4, "run", run_finished())])
        .await
        .unwrap();
    assert_eq!((count(), *hook.saves.lock().unwrap()), (4, 1));
    // A finished task whose work a later save already holds commits without another save.
    sink.append(&[done(5, "task_2")]).await.unwrap();
    *hook.saved_at.lock().unwrap() = Some(std::time::Instant::now());
    sink.append(&[checklist("run", "c")]).await.unwrap();
    assert_eq!((count(), *hook.saves.lock().unwrap()), (6, 1));
}

/// An effect entry (a forge write's intent) joins the pending entries in one commit, after
/// them; but when committing those would wait for a save of the work, it is committed alone and
/// they keep waiting.
#[tokio::test]
async fn an_effect_entry_commits_with_the_pending_entries_unless_that_forces_a_save() {
    use replan::engine::journal::EntrySink;
    use replan::history::Journal;
    let dir = tempfile::tempdir().unwrap();
    let (backend, hook, sink) = sink_after_a_recent_save(dir.path(), 20);
    let types = || committed_types(&backend);
    let effect = comment_effect;

    sink.append(&[checklist("run", "a")]).await.unwrap();
    sink.commit_with(&[effect("k1")]).await.unwrap();
    assert_eq!(types(), ["checklist", "effect"], "one commit, in order");

    // A finished task the last save does not hold: the effect goes alone, no save is forced.
    let done = task_done(0, "task_1");
    sink.append(&[done]).await.unwrap();
    sink.commit_with(&[effect("k2")]).await.unwrap();
    assert_eq!(types(), ["checklist", "effect", "effect"]);
    assert_eq!(*hook.saves.lock().unwrap(), 0);
    sink.flush().await.unwrap();
    assert_eq!(types(), ["checklist", "effect", "effect", "task_state"]);
    assert_eq!(
        *hook.saves.lock().unwrap(),
        1,
        "the flush saved the work first"
    );
}

#[tokio::test]
async fn entries_that_cannot_be_committed_go_to_the_job_log_and_the_step_summary() {
    use replan::app::history_sink::HistorySink;
    use replan::engine::journal::EntrySink;
    let dir = tempfile::tempdir().unwrap();
    // A file where the history directory should be: every commit fails.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "not a directory").unwrap();
    let backend = Arc::new(LocalHistory::new(&blocked, "planning_history"));
    let sink = HistorySink::new(backend, ThreadRef::issue(4), 20);
    sink.append(&[checklist("run", "kept-1"), checklist("run", "kept-2")])
        .await
        .unwrap();
    let summary = dir.path().join("summary.md");
    let env = std::collections::BTreeMap::from([(
        "GITHUB_STEP_SUMMARY".to_owned(),
        summary.display().to_string(),
    )]);

    let error = sink.close(&env).await.unwrap_err();

    assert!(
        error.starts_with("error: 2 history entries of #4 could not be committed"),
        "{error}"
    );
    let summary = std::fs::read_to_string(summary).unwrap();
    assert!(summary.contains("```jsonl"), "{summary}");
    let lines: Vec<&str> = summary.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), 2, "{summary}");
    assert!(lines[0].contains("kept-1") && lines[1].contains("kept-2"));
}
