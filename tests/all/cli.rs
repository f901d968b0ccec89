//! The command line as a user meets it: help, exit codes, `config --explain`.

use assert_cmd::Command;
use predicates::prelude::*;
use std::fs;

fn replan() -> Command {
    let mut cmd = Command::cargo_bin("replan").expect("binary built");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd
}

/// A workspace holding one config file (`file` relative to it) with `yaml` in it.
fn workspace_with(file: &str, yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, yaml).unwrap();
    dir
}

#[test]
fn help_lists_every_command_and_the_exit_codes() {
    replan()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("run"))
        .stdout(predicate::str::contains("demo"))
        .stdout(predicate::str::contains("history"))
        .stdout(predicate::str::contains("config"))
        .stdout(predicate::str::contains("plan"))
        .stdout(predicate::str::contains(
            "Exit codes: 0 done or waiting for a person",
        ));
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    replan().arg("--no-such-flag").assert().code(2);
}

#[test]
fn config_explain_names_the_source_of_each_value() {
    let dir = workspace_with(".replan.yml", "planning:\n  max_subtasks: 12\n");
    replan()
        .args(["config", "--explain", "--workspace"])
        .arg(dir.path())
        .args(["--set", "planning.strategy=simple"])
        .env("MAX_TOTAL_REPLANS", "7")
        .assert()
        .success()
        .stdout(
            predicate::str::is_match(r"planning\.max_subtasks = 12\s+\(file .*\.replan\.yml\)")
                .unwrap(),
        )
        .stdout(
            predicate::str::is_match(r#"planning\.strategy = "simple"\s+\(flag --set\)"#).unwrap(),
        )
        .stdout(
            predicate::str::is_match(
                r"planning\.replanning\.global\.max_total_replans = 7\s+\(env MAX_TOTAL_REPLANS\)",
            )
            .unwrap(),
        )
        .stdout(
            predicate::str::is_match(r"planning\.reflection\.trigger_interval = 3\s+\(default\)")
                .unwrap(),
        );
}

#[test]
fn a_bad_config_file_exits_2_and_names_the_key_and_the_file() {
    let dir = workspace_with(
        ".github/replan.yml",
        "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: 1.5\n",
    );
    replan()
        .args(["config", "--workspace"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "planning.replanning.llm_decision.min_confidence_threshold",
        ))
        .stderr(predicate::str::contains("replan.yml"));
}

#[test]
fn a_missing_workspace_exits_2_and_says_how_to_fix_it() {
    replan()
        .args(["config", "--workspace", "/definitely/not/here"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/definitely/not/here"))
        .stderr(predicate::str::contains("--workspace"));
}

mod history_and_plan {
    use super::replan;
    use chrono::{TimeZone, Utc};
    use predicates::prelude::*;
    use replan::history::entry::{
        DecisionRecord, DecisionResult, Entry, EntryBody, RunRequest, RunStatus, SCHEMA_VERSION,
        UsageTotals,
    };
    use replan::history::jsonl::to_lines;
    use replan::plan::{Phase, Plan, ReplanDecision, ReplanType, Subtask, TaskDecomposition};
    use std::fs;
    use std::path::Path;

    fn entry(seq: u64, body: EntryBody) -> Entry {
        Entry {
            v: SCHEMA_VERSION,
            seq,
            ts: Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, seq as u32).unwrap(),
            run_id: "4242-1".into(),
            body,
        }
    }

    /// A small history for issue 7 under `<dir>/planning_history/issues/7.jsonl`, plus one corrupt line.
    fn write_history(dir: &Path) {
        let plan = Plan {
            task_decomposition: TaskDecomposition {
                reasoning: "one step".into(),
                subtasks: vec![Subtask {
                    id: "task_1".into(),
                    description: "Fix the typo".into(),
                    ..Default::default()
                }],
            },
            ..Default::default()
        };
        let decision = ReplanDecision {
            replan_needed: true,
            confidence: 0.62,
            reasoning: "the file moved".into(),
            replan_type: ReplanType::PartialReplan,
            ..Default::default()
        };
        let entries = vec![
            entry(
                1,
                EntryBody::RunStarted {
                    request: RunRequest {
                        event: "issues".into(),
                        actor: "octocat".into(),
                        request: "start".into(),
                        ..Default::default()
                    },
                },
            ),
            entry(
                2,
                EntryBody::Plan {
                    version: 1,
                    plan: Box::new(plan),
                },
            ),
            entry(
                3,
                EntryBody::ReplanDecision(Box::new(DecisionRecord {
                    replan_id: "r1".into(),
                    phase: Phase::Execution,
                    llm_decision: decision,
                    confidence: 0.62,
                    executed: true,
                    override_reason: None,
                    result: DecisionResult::Success,
                    duration_ms: 12,
                    trigger: None,
                    trigger_key: "k".into(),
                    parse_error: None,
                    raw_reply: None,
                    restart_phase: None,
                })),
            ),
            entry(
                4,
                EntryBody::RunFinished {
                    status: RunStatus::Completed,
                    usage: UsageTotals::default(),
                    pull_request: None,
                    structured_output: None,
                },
            ),
        ];
        let path = dir.join("planning_history/issues/7.jsonl");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = to_lines(&entries);
        text.insert_str(0, "{not json\n");
        fs::write(path, text).unwrap();
    }

    #[test]
    fn history_show_export_and_stats_read_a_local_history_and_report_corrupt_lines() {
        let dir = tempfile::tempdir().unwrap();
        write_history(dir.path());
        replan()
            .args(["history", "show", "7", "--dir"])
            .arg(dir.path())
            .assert()
            .success()
            .stdout(predicate::str::contains("task_1"));
        replan()
            .args(["history", "export", "issues/7", "--format", "md", "--dir"])
            .arg(dir.path())
            .assert()
            .success()
            .stdout(predicate::str::contains("62%").or(predicate::str::contains("0.62")))
            .stderr(predicate::str::contains("skipped corrupt history line 1"));
        replan()
            .args(["history", "stats", "7", "--json", "--dir"])
            .arg(dir.path())
            .assert()
            .success()
            .stdout(predicate::str::contains("partial_replan"));
        let out = replan()
            .args(["history", "export", "7", "--format", "jsonl", "--dir"])
            .arg(dir.path())
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        assert_eq!(
            String::from_utf8(out).unwrap().lines().count(),
            4,
            "valid lines only, verbatim"
        );
    }

    #[test]
    fn history_of_an_unknown_thread_or_directory_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        write_history(dir.path());
        replan()
            .args(["history", "show", "8", "--dir"])
            .arg(dir.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("no history for"));
        replan()
            .args(["history", "show", "7", "--dir", "/no/such/dir"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--dir DIR"));
        replan()
            .args(["history", "show", "issue/7", "--dir"])
            .arg(dir.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("issues/12"));
    }

    #[test]
    fn history_prune_archives_an_old_thread() {
        let dir = tempfile::tempdir().unwrap();
        write_history(dir.path());
        replan()
            .args(["history", "prune", "--older-than", "1", "--dir"])
            .arg(dir.path())
            .assert()
            .success();
        assert!(!dir.path().join("planning_history/issues/7.jsonl").exists());
        let archived = fs::read_to_string(dir.path().join("archive/issues-7.jsonl")).unwrap();
        assert!(
            archived.starts_with("{not json\n"),
            "archived verbatim, corrupt line included"
        );
    }

    #[test]
    fn history_prune_reads_the_retention_days_of_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        write_history(dir.path());
        // About 270 years: the thread is not old enough, so nothing is archived.
        let workspace =
            super::workspace_with(".replan.yml", "history:\n  retention_days: 100000\n");
        replan()
            .args(["history", "prune", "--dir"])
            .arg(dir.path())
            .arg("--workspace")
            .arg(workspace.path())
            .assert()
            .success();
        assert!(dir.path().join("planning_history/issues/7.jsonl").exists());
        // --set overrides the file, and a bad value is the configuration's usage error.
        replan()
            .args([
                "history",
                "prune",
                "--set",
                "history.retention_days=0",
                "--dir",
            ])
            .arg(dir.path())
            .arg("--workspace")
            .arg(workspace.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("history.retention_days"));
        replan()
            .args([
                "history",
                "prune",
                "--set",
                "history.retention_days=1",
                "--dir",
            ])
            .arg(dir.path())
            .arg("--workspace")
            .arg(workspace.path())
            .assert()
            .success();
        assert!(!dir.path().join("planning_history/issues/7.jsonl").exists());
    }

    #[test]
    fn plan_validate_accepts_the_seed_planning_response_and_names_a_cycle() {
        // The seed's own example orders a task_2 it never defines: validation must say so.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed-json");
        replan()
            .args(["plan", "validate"])
            .arg(fixtures.join("001_planning_response.json"))
            .assert()
            .code(1)
            .stdout(predicate::str::contains(
                "execution_order names \"task_2\", which is not a subtask",
            ));
        let valid = tempfile::tempdir().unwrap();
        let valid_file = valid.path().join("plan.json");
        fs::write(
            &valid_file,
            r#"{"phase":"planning","goal_understanding":{"main_objective":"x"},
                "task_decomposition":{"reasoning":"","subtasks":[
                  {"id":"task_1","description":"a"},
                  {"id":"task_2","description":"b","dependencies":["task_1"]}]},
                "action_plan":{"execution_order":["task_1","task_2"],"actions":[]}}"#,
        )
        .unwrap();
        replan()
            .args(["plan", "validate"])
            .arg(&valid_file)
            .assert()
            .success()
            .stdout(predicate::str::contains("valid plan with 2 subtasks"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cyclic.json");
        fs::write(
            &file,
            r#"{"goal_understanding":{"main_objective":"x"},
                "task_decomposition":{"reasoning":"","subtasks":[
                  {"id":"task_1","description":"a","dependencies":["task_2"]},
                  {"id":"task_2","description":"b","dependencies":["task_1"]}]},
                "action_plan":{"execution_order":["task_1","task_2"],"actions":[]}}"#,
        )
        .unwrap();
        replan()
            .args(["plan", "validate"])
            .arg(&file)
            .assert()
            .code(1)
            .stdout(
                predicate::str::contains("task_1 → task_2 → task_1")
                    .or(predicate::str::contains("task_2 → task_1 → task_2")),
            );
        let broken = dir.path().join("broken.json");
        fs::write(&broken, "{\n  \"plan\": [\n").unwrap();
        replan()
            .args(["plan", "validate"])
            .arg(&broken)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("broken.json"));
    }
}

/// A format width above u16::MAX used to panic in `config --explain`.
#[test]
fn config_explain_with_a_line_longer_than_65535_bytes_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let model = "m".repeat(70_000);
    replan()
        .args(["config", "--explain", "--workspace"])
        .arg(dir.path())
        .args(["--set", &format!("llm.model={model}")])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("llm.model = \"{model}\"")));
}

#[test]
fn a_history_directory_outside_the_workspace_is_refused_and_named() {
    for directory in ["../../x", "/tmp/elsewhere", "planning_history/../../x"] {
        let yaml = format!("history:\n  directory: \"{directory}\"\n");
        let dir = workspace_with(".replan.yml", &yaml);
        replan()
            .args(["config", "--workspace"])
            .arg(dir.path())
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("error"))
            .stderr(predicate::str::contains("history.directory"))
            .stderr(predicate::str::contains(directory));
    }
}

#[test]
fn issue_number_zero_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    replan()
        .args([
            "run",
            "--issue",
            "0",
            "--title",
            "t",
            "--body",
            "b",
            "--workspace",
        ])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with("error"))
        .stderr(predicate::str::contains("--issue"));
}

/// Issue 38: `config --explain` lists the repository instructions a run would read, with the
/// commit and their sizes; a file only in the work tree is not among them.
#[test]
fn config_explain_lists_the_repository_instructions_with_commit_and_sizes() {
    let repo = crate::support::TestRepo::new();
    repo.write("AGENTS.md", "Run make lint.\n");
    repo.write("crates/x/AGENTS.md", "x rules\n");
    let commit = repo.commit_all("instructions");
    repo.write("CLAUDE.md", "only in the work tree\n");
    let out = replan()
        .args(["config", "--explain", "--workspace"])
        .arg(repo.path())
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains(&format!("# repository instructions from HEAD ({commit}):")),
        "{stdout}"
    );
    assert!(
        stdout.contains("#   `AGENTS.md` (15 bytes; every call)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("#   `crates/x/AGENTS.md` (8 bytes; subtasks under `crates/x/`)"),
        "{stdout}"
    );
    assert!(!stdout.contains("CLAUDE.md`"), "{stdout}");

    replan()
        .args(["config", "--explain", "--workspace"])
        .arg(repo.path())
        .args(["--set", "instructions.files=[]"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "# repository instructions: off (instructions.files is empty)",
        ));
}

#[test]
fn an_instruction_file_outside_the_repository_is_a_usage_error_naming_the_key() {
    let dir = workspace_with(
        ".replan.yml",
        "instructions:\n  files: [\"../secrets.md\"]\n",
    );
    replan()
        .args(["config", "--workspace"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("instructions.files"))
        .stderr(predicate::str::contains("../secrets.md"));
}
