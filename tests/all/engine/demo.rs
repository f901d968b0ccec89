use replan::engine::demo::run_demo;
use replan::history::entry::RunStatus;

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
