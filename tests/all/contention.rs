//! Many runs appending to one history branch at the same time (issue 14's "Done when"): 20 runs
//! on different issues plus 5 on the same issue, each appending its entries in several commits
//! through its own backend (as separate CI jobs would), against the fake GitHub's git data API
//! (a real compare-and-swap on refs, 422 "Update is not a fast forward") and against a bare git
//! remote. Every run succeeds, and the branch holds exactly the entries written, once each.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use replan::forge::github::{GitHubClient, GitHubHistory};
use replan::history::{BlockingBackend, Entry, EntryBody, GitBranchHistory, HistoryBackend, jsonl};
use replan::trigger::ThreadRef;

use crate::support::client::install_crypto_provider;
use crate::support::git::isolated_git_env;
use crate::support::{FakeGitHub, TestRepo};

const BRANCH: &str = "replan-history";
const DIRECTORY: &str = "planning_history";
/// Runs on issues 1..=20, and five more on issue 1.
const DIFFERENT: u64 = 20;
const SAME: u64 = 5;

/// Which thread run `i` works on.
fn thread_of(run: u64) -> ThreadRef {
    if run < DIFFERENT {
        ThreadRef::issue(run + 1)
    } else {
        ThreadRef::issue(1)
    }
}

/// The entries run `run` writes in its `batch`-th commit.
fn batch(run: u64, batch: u64, size: u64) -> Vec<Entry> {
    (0..size)
        .map(|k| Entry {
            v: 1,
            seq: 0,
            ts: Utc
                .timestamp_opt(1_714_564_800 + batch as i64, k as u32 * 1_000)
                .unwrap(),
            run_id: format!("run-{run}"),
            body: EntryBody::Answer {
                author: "alice".into(),
                text: format!("run-{run} batch-{batch} entry-{k}"),
                assumed: false,
            },
        })
        .collect()
}

/// Checks every thread file: no corrupt line, `seq` 1..=n in order, and exactly the texts written.
fn assert_exact(files: &BTreeMap<u64, String>, written: &BTreeMap<u64, Vec<String>>) {
    for (number, expected) in written {
        let file = files
            .get(number)
            .unwrap_or_else(|| panic!("no history file for issue {number}"));
        let parsed = jsonl::parse(file);
        assert!(parsed.corrupt.is_empty(), "{:?}", parsed.corrupt);
        let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (1..=parsed.entries.len() as u64).collect::<Vec<_>>(),
            "issue {number}: unique, increasing seq"
        );
        let mut found: Vec<String> = parsed
            .entries
            .iter()
            .map(|e| match &e.body {
                EntryBody::Answer { text, .. } => text.clone(),
                other => panic!("unexpected entry {other:?}"),
            })
            .collect();
        found.sort();
        let mut expected = expected.clone();
        expected.sort();
        assert_eq!(
            found, expected,
            "issue {number}: entries on the branch = entries written"
        );
        // Each run's own entries stay in the order it wrote them.
        for run in 0..DIFFERENT + SAME {
            let own: Vec<&str> = parsed
                .entries
                .iter()
                .filter(|e| e.run_id == format!("run-{run}"))
                .map(|e| match &e.body {
                    EntryBody::Answer { text, .. } => text.as_str(),
                    _ => "",
                })
                .collect();
            let mut sorted = own.clone();
            sorted.sort();
            assert_eq!(own, sorted, "run-{run} keeps its order");
        }
    }
}

fn expected(batches: u64, size: u64) -> BTreeMap<u64, Vec<String>> {
    let mut written: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for run in 0..DIFFERENT + SAME {
        for b in 0..batches {
            for e in batch(run, b, size) {
                let EntryBody::Answer { text, .. } = e.body else {
                    unreachable!()
                };
                written.entry(thread_of(run).number).or_default().push(text);
            }
        }
    }
    written
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_25_runs_on_the_github_history_branch_lose_and_duplicate_nothing() {
    install_crypto_provider();
    let fake = FakeGitHub::start();
    const BATCHES: u64 = 4;
    const SIZE: u64 = 2;
    let mut runs = Vec::new();
    for run in 0..DIFFERENT + SAME {
        let settings = crate::github::settings(&fake);
        // One client and backend per run: separate jobs share nothing but the branch.
        let client = Arc::new(GitHubClient::new(settings).expect("client"));
        let backend = GitHubHistory::new(client, BRANCH, DIRECTORY);
        runs.push(tokio::spawn(async move {
            let thread = thread_of(run);
            backend.load(&thread).await?;
            let mut conflicts = 0;
            for b in 0..BATCHES {
                conflicts += backend
                    .append(&thread, &batch(run, b, SIZE))
                    .await?
                    .conflicts;
            }
            Ok::<u32, replan::history::HistoryError>(conflicts)
        }));
    }
    let mut conflicts = 0;
    for run in runs {
        conflicts += run.await.unwrap().expect("every run's appends succeed");
    }
    assert!(conflicts > 0, "the runs did contend for the branch");

    let files: BTreeMap<u64, String> = (1..=DIFFERENT)
        .filter_map(|n| {
            fake.file_at_ref(BRANCH, &ThreadRef::issue(n).history_path(DIRECTORY))
                .map(|f| (n, f))
        })
        .collect();
    assert_exact(&files, &expected(BATCHES, SIZE));
}

#[test]
fn contention_25_runs_on_a_git_remote_history_branch_lose_and_duplicate_nothing() {
    // Every attempt costs a dozen `git` processes: one commit per run keeps this test quick.
    const BATCHES: u64 = 1;
    const SIZE: u64 = 3;
    let origin = TestRepo::bare();
    let seed = TestRepo::clone_from(&origin);
    seed.write("README.md", "# widgets\n");
    seed.commit_all("init");
    seed.run_git(&["push", "-q", "origin", "HEAD"]);
    let env: Vec<(String, String)> = isolated_git_env()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let clones: Vec<TestRepo> = (0..DIFFERENT + SAME)
        .map(|_| TestRepo::clone_from(&origin))
        .collect();
    std::thread::scope(|scope| {
        let runs: Vec<_> = clones
            .iter()
            .enumerate()
            .map(|(run, clone)| {
                let run = run as u64;
                let mut backend = GitBranchHistory::new(clone.path(), BRANCH, DIRECTORY);
                backend.push_remote = Some("origin".into());
                backend.git_env = env.clone();
                scope.spawn(move || {
                    let thread = thread_of(run);
                    for b in 0..BATCHES {
                        backend.append_blocking(&thread, &batch(run, b, SIZE))?;
                    }
                    Ok::<(), replan::history::HistoryError>(())
                })
            })
            .collect();
        for run in runs {
            run.join().unwrap().expect("every run's appends succeed");
        }
    });

    let files: BTreeMap<u64, String> = (1..=DIFFERENT)
        .filter_map(|n| {
            let spec = format!("{BRANCH}:{}", ThreadRef::issue(n).history_path(DIRECTORY));
            origin.try_show(&spec).map(|f| (n, f))
        })
        .collect();
    assert_exact(&files, &expected(BATCHES, SIZE));
}
