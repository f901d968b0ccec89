use std::collections::BTreeMap;

use replan::config::{Config, DecisionMode};
use replan::engine::demo::{DemoReport, run_demo, run_demo_with};
use replan::history::entry::RunStatus;
use replan::history::{jsonl, replay};

#[tokio::test]
async fn the_demo_adds_contributing_md_through_a_replan_and_a_revision() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_demo(Some(dir.path().to_path_buf()))
        .await
        .expect("demo runs");
    assert_eq!(report.status, RunStatus::Completed);
    assert_eq!(
        report.plan_version, 3,
        "one partial replan, one reflection revision"
    );
    assert_eq!((report.tasks_done, report.tasks_total), (3, 3));
    let repo = dir.path().join("sample-repo");
    let guide = std::fs::read_to_string(repo.join("CONTRIBUTING.md")).unwrap();
    assert!(guide.starts_with("# Contributing"));
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    assert!(
        readme.contains("[CONTRIBUTING.md](CONTRIBUTING.md)"),
        "{readme}"
    );
    let history = std::fs::read_to_string(&report.history_file).unwrap();
    assert!(history.lines().count() > 20);
    assert!(history.contains(r#""type":"revision""#));
    assert!(
        report.checklist.contains("Revised #2"),
        "{}",
        report.checklist
    );
    assert!(
        report.checklist.contains("- [x] **task_3**"),
        "{}",
        report.checklist
    );
    let shown = report.to_string();
    assert!(shown.contains(&report.history_file.display().to_string()));
    assert!(report.notices.iter().any(|n| n.contains("repository root")));
}

/// LLM calls of the run (`history stats` usage.calls) and how many entries of each type it wrote.
fn calls_and_entries(report: &DemoReport) -> (u64, BTreeMap<String, usize>) {
    let text = std::fs::read_to_string(&report.history_file).unwrap();
    let entries = jsonl::parse(&text).entries;
    let mut kinds = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        if !matches!(kind.as_str(), "usage" | "checklist" | "run_finished") {
            *kinds.entry(kind).or_insert(0) += 1;
        }
    }
    (replay(&entries).usage.calls, kinds)
}

#[tokio::test]
async fn folded_decisions_halve_the_demo_round_trips_and_keep_one_entry_per_decision() {
    let folded_dir = tempfile::tempdir().unwrap();
    let folded = run_demo(Some(folded_dir.path().to_path_buf()))
        .await
        .unwrap();
    let separate_dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.planning.decisions = DecisionMode::Separate;
    let separate = run_demo_with(Some(separate_dir.path().to_path_buf()), config, None)
        .await
        .unwrap();
    for report in [&folded, &separate] {
        assert_eq!(report.status, RunStatus::Completed);
        assert_eq!(report.plan_version, 3);
        assert_eq!((report.tasks_done, report.tasks_total), (3, 3));
    }
    let (folded_calls, folded_kinds) = calls_and_entries(&folded);
    let (separate_calls, separate_kinds) = calls_and_entries(&separate);
    assert!(
        folded_calls <= 14,
        "folded demo made {folded_calls} LLM calls"
    );
    assert_eq!(separate_calls, 25, "separate reproduces the seed's calls");
    assert_eq!(
        folded_kinds, separate_kinds,
        "the same decisions, verdicts and reflections are recorded either way"
    );
    assert_eq!(folded_kinds["replan_decision"], 8);
    assert_eq!(folded_kinds["judge"], 3);
    assert_eq!(folded_kinds["refinement"], 2);
    assert_eq!(folded_kinds["reflection"], 1);
}
