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
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join(".replan.yml"),
        "planning:\n  max_subtasks: 12\n",
    )
    .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".github")).unwrap();
    fs::write(
        dir.path().join(".github/replan.yml"),
        "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: 1.5\n",
    )
    .unwrap();
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
