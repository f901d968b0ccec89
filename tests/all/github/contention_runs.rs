//! Contention between real `replan run` processes (issue 14): 20 runs on different issues
//! and 5 more on one of them start at once, each with its own checkout and model, and append to
//! one history — the fake GitHub's `replan-history` branch (a real compare-and-swap: on the ref
//! when the branch is created, 422 "Reference already exists", and on each thread's file, 409
//! when it changed since it was read), or one local directory shared by local runs. Every
//! process exits 0, and every run's entries are on the history once, numbered without gaps.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;
use tempfile::TempDir;

use super::e2e::{World, text};
use super::local_run::{checkout, local_command_on};
use crate::gitlab::ci_job::ONE_TASK;
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

/// Issues 1..=DIFFERENT get one run each; issue 1 gets SAME more (issue 14: 20 + 5).
const DIFFERENT: u64 = 20;
const SAME: u64 = 5;
const RUNS: u64 = DIFFERENT + SAME;

/// Which issue run `i` works on: 1..=DIFFERENT, then issue 1 again.
fn issue_of(run: u64) -> u64 {
    if run < DIFFERENT { run + 1 } else { 1 }
}

/// Checks one thread's file: no corrupt line, `seq` 1..=n, no line twice (the line without its
/// `seq` is an entry's identity), and each of `runs` started and finished on it.
fn assert_thread(file: &str, runs: &BTreeSet<String>, label: &str) {
    let parsed = jsonl::parse(file);
    assert!(parsed.corrupt.is_empty(), "{label}: {:?}", parsed.corrupt);
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "{label}: unique, increasing seq"
    );
    let mut seen = BTreeSet::new();
    for line in file.lines() {
        let key = jsonl::idempotency_key(line).expect("a line as replan writes it");
        assert!(seen.insert(key), "{label}: a line twice: {line}");
    }
    let finished: BTreeMap<&str, RunStatus> = parsed
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::RunFinished { status, .. } => Some((e.run_id.as_str(), *status)),
            _ => None,
        })
        .collect();
    let started: BTreeSet<&str> = parsed
        .entries
        .iter()
        .filter(|e| matches!(e.body, EntryBody::RunStarted { .. }))
        .map(|e| e.run_id.as_str())
        .collect();
    for run in runs {
        assert!(started.contains(run.as_str()), "{label}: {run} started");
        assert!(
            finished.contains_key(run.as_str()),
            "{label}: {run}'s entries end with run_finished: {finished:?}"
        );
    }
    // Each run's own entries keep the order it wrote them in; a write's intent (`effect`) is
    // committed at once, alone and ahead of entries whose commit is under way when it cannot
    // join them (see `history::effects`), so its place is not part of that order.
    for run in runs {
        let own: Vec<&str> = parsed
            .entries
            .iter()
            .filter(|e| &e.run_id == run && !matches!(e.body, EntryBody::Effect { .. }))
            .map(|e| e.body.type_name())
            .collect();
        assert_eq!(own.first(), Some(&"run_started"), "{label}: {run}: {own:?}");
        assert_eq!(own.last(), Some(&"run_finished"), "{label}: {run}: {own:?}");
    }
}

fn assert_exit_0(outputs: &[(u64, Output)]) {
    for (run, output) in outputs {
        assert_eq!(output.status.code(), Some(0), "run {run}: {}", text(output));
    }
}

#[test]
fn concurrent_replan_processes_on_one_github_history_branch_lose_and_duplicate_nothing() {
    let world = World::new(ONE_TASK);
    world.fake.add_collaborator("alice", "write");
    for n in 1..=DIFFERENT {
        let number =
            world
                .fake
                .seed_issue(&format!("Add hello {n}"), "Please add hello.md.", "alice");
        assert_eq!(number, n);
    }
    let runs: Vec<(u64, BTreeMap<String, String>, LlmServer, TestRepo)> = (0..RUNS)
        .map(|run| {
            let number = issue_of(run);
            let checkout = world.fresh_checkout();
            let llm = LlmServer::start(super::e2e::scenario(ONE_TASK));
            let mut env = world.env("issues", &world.issue_opened(number, "alice"));
            env.insert("GITHUB_RUN_ID".into(), (9000 + run).to_string());
            env.insert(
                "GITHUB_WORKSPACE".into(),
                checkout.path().display().to_string(),
            );
            env.insert("REPLAN_LLM__BASE_URL".into(), llm.openai_base());
            for (key, name) in [
                ("GITHUB_OUTPUT", "output"),
                ("GITHUB_STEP_SUMMARY", "summary"),
            ] {
                let file = world.files.path().join(format!("{name}-{run}.txt"));
                env.insert(key.into(), file.display().to_string());
            }
            (run, env, llm, checkout)
        })
        .collect();
    let outputs: Vec<(u64, Output)> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(run, env, _, _)| {
                scope.spawn(move || {
                    let mut command =
                        std::process::Command::new(assert_cmd::cargo::cargo_bin("replan"));
                    command.env_clear();
                    for key in ["PATH", "HOME", "TMPDIR"] {
                        if let Ok(value) = std::env::var(key) {
                            command.env(key, value);
                        }
                    }
                    command.envs(env).arg("run");
                    (*run, command.output().expect("run replan"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_exit_0(&outputs);

    // A run that found no branch and lost the race to create it (422 "Reference already
    // exists"), or whose file changed between its read and its write (409).
    let conflicts = world
        .fake
        .requests()
        .iter()
        .filter(|r| {
            (r.method == "POST" && r.path == "/repos/octo/widgets/git/refs" && r.status == 422)
                || (r.method == "PUT"
                    && r.path
                        .starts_with("/repos/octo/widgets/contents/planning_history/")
                    && r.status == 409)
        })
        .count();
    assert!(conflicts > 0, "the processes did contend for the branch");
    for number in 1..=DIFFERENT {
        let runs: BTreeSet<String> = (0..RUNS)
            .filter(|run| issue_of(*run) == number)
            .map(|run| format!("{}-1", 9000 + run))
            .collect();
        assert_thread(&world.history(number), &runs, &format!("issue {number}"));
    }
}

#[test]
fn concurrent_local_replan_processes_on_one_local_history_lose_and_duplicate_nothing() {
    let shared = TempDir::new().unwrap();
    let runs: Vec<(u64, LlmServer, TestRepo, TestRepo)> = (0..RUNS)
        .map(|run| {
            let (origin, checkout) = checkout();
            (
                run,
                LlmServer::start(super::e2e::scenario(ONE_TASK)),
                origin,
                checkout,
            )
        })
        .collect();
    let outputs: Vec<(u64, Output)> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(run, llm, _, checkout)| {
                let dir = shared.path();
                scope.spawn(move || {
                    let mut command =
                        local_command_on(&llm.openai_base(), checkout, Some(dir), issue_of(*run));
                    (*run, command.output().expect("run replan"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_exit_0(&outputs);

    for number in 1..=DIFFERENT {
        let file = std::fs::read_to_string(
            shared
                .path()
                .join(format!("planning_history/issues/{number}.jsonl")),
        )
        .unwrap_or_default();
        let parsed = jsonl::parse(&file);
        let runs: BTreeSet<String> = parsed.entries.iter().map(|e| e.run_id.clone()).collect();
        let expected = (0..RUNS).filter(|run| issue_of(*run) == number).count();
        assert_eq!(
            runs.len(),
            expected,
            "issue {number}: one run id per process"
        );
        assert_thread(&file, &runs, &format!("issue {number}"));
    }
}
