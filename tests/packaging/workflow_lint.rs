//! The workflows (the project's CI, the release, the users' example) pass actionlint and say
//! what the packaging needs; the shell scripts pass shellcheck.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::tools::{lint_tool, repo_root};

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the workflow dir") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn actionlint_in(dir: &Path, files: &[PathBuf]) -> Output {
    Command::new(lint_tool("actionlint"))
        .arg("-no-color")
        .args(files)
        .current_dir(dir)
        .output()
        .expect("run actionlint")
}

fn actionlint(files: &[PathBuf]) -> Output {
    actionlint_in(&repo_root(), files)
}

fn workflow(rel: &str) -> Value {
    let text = std::fs::read_to_string(repo_root().join(rel)).expect("read the workflow");
    serde_saphyr::from_str(&text).expect("the workflow is YAML")
}

#[test]
fn actionlint_passes_on_the_workflows_and_the_example() {
    let files = yaml_files(&repo_root().join(".github/workflows"));
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    for expected in ["ci.yml", "release.yml"] {
        assert!(
            names.iter().any(|n| n.ends_with(expected)),
            "{expected} exists: {names:?}"
        );
    }
    let output = actionlint(&files);
    assert!(
        output.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The examples where users put them, so the fan-out's call of replan-stage.yml resolves and
    // its inputs are checked.
    let repo = tempfile::tempdir().expect("temp dir");
    let installed = repo.path().join(".github/workflows");
    std::fs::create_dir_all(&installed).expect("create .github/workflows");
    std::fs::create_dir(repo.path().join(".git")).expect("mark the repository root");
    for example in yaml_files(&repo_root().join("examples/workflows")) {
        std::fs::copy(&example, installed.join(example.file_name().unwrap()))
            .expect("install an example");
    }
    let examples = yaml_files(&installed);
    let names: Vec<String> = examples.iter().map(|f| f.display().to_string()).collect();
    for expected in ["replan.yml", "replan-fanout.yml", "replan-stage.yml"] {
        assert!(
            names.iter().any(|n| n.ends_with(&format!("/{expected}"))),
            "{expected} exists: {names:?}"
        );
    }
    let output = actionlint_in(repo.path(), &examples);
    assert!(
        output.status.success(),
        "actionlint on the installed examples:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The lint run above can fail: actionlint catches issue text pasted into a script.
#[test]
fn actionlint_rejects_a_workflow_that_pastes_issue_text_into_a_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: issues\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo \"${{ github.event.issue.title }}\"\n",
    )
    .expect("write the bad workflow");
    let output = actionlint(&[bad]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(stdout.contains("potentially untrusted"), "{stdout}");
}

#[test]
fn shellcheck_passes_on_the_install_step_and_the_ci_scripts() {
    let output = Command::new(lint_tool("shellcheck"))
        .args([
            "dist/install.sh",
            ".ci/packaging-tools.sh",
            ".ci/packaging.sh",
            ".ci/run",
            "scripts/prism-conformance.sh",
        ])
        .current_dir(repo_root())
        .output()
        .expect("run shellcheck");
    assert!(
        output.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn example_workflow_has_the_permissions_concurrency_and_time_limit_it_needs() {
    let w = workflow("examples/workflows/replan.yml");
    assert_eq!(
        w["permissions"],
        serde_json::json!({}),
        "nothing by default"
    );
    assert_eq!(
        w["jobs"]["agent"]["permissions"],
        serde_json::json!({"contents": "read", "issues": "read", "actions": "read", "pull-requests": "read", "models": "read"}),
        "the job that runs the model reads"
    );
    let publish = &w["jobs"]["publish"]["permissions"];
    for scope in ["issues", "contents", "pull-requests"] {
        assert_eq!(publish[scope], "write", "publish permissions.{scope}");
    }
    let group = w["concurrency"]["group"]
        .as_str()
        .expect("a concurrency group");
    assert!(
        group.contains("github.event.issue.number"),
        "one group per issue: {group}"
    );
    assert_eq!(
        w["concurrency"]["cancel-in-progress"], false,
        "a running cycle is not killed"
    );
    for name in ["agent", "publish"] {
        let job = &w["jobs"][name];
        assert!(
            job["timeout-minutes"].as_u64().is_some(),
            "{name}: timeout-minutes is set"
        );
        let uses_action = job["steps"].as_array().expect("steps").iter().any(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.ends_with("/replan@v1"))
        });
        assert!(uses_action, "{name} uses the action at its major tag");
    }
    for event in ["issues", "issue_comment", "workflow_dispatch", "schedule"] {
        assert!(
            w["on"].get(event).is_some(),
            "the example triggers on {event}"
        );
    }
}

#[test]
fn release_workflow_builds_both_musl_targets_checksums_them_and_moves_the_major_tag() {
    let w = workflow(".github/workflows/release.yml");
    let targets: Vec<&str> = w["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .expect("a build matrix")
        .iter()
        .filter_map(|e| e["target"].as_str())
        .collect();
    assert_eq!(
        targets,
        ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"]
    );
    let publish = serde_json::to_string(&w["jobs"]["publish"]).expect("publish job");
    for needle in [
        "sha256sum replan-*.tar.gz > SHA256SUMS",
        "gh release upload",
        "git tag -f",
        "git push -f origin",
    ] {
        assert!(publish.contains(needle), "the publish job does `{needle}`");
    }
    assert_eq!(w["jobs"]["publish"]["permissions"]["contents"], "write");
    // The asset names are the ones dist/install.sh downloads.
    let build = serde_json::to_string(&w["jobs"]["build"]).expect("build job");
    assert!(build.contains("replan-$TARGET.tar.gz"), "{build}");
    let install = std::fs::read_to_string(repo_root().join("dist/install.sh")).expect("install.sh");
    assert!(install.contains("asset=\"replan-${target}.tar.gz\""));
    assert!(install.contains("/SHA256SUMS"));
}

#[test]
fn project_ci_workflow_runs_the_ci_entry_point() {
    let w = workflow(".github/workflows/ci.yml");
    let text = serde_json::to_string(&w["jobs"]).expect("jobs");
    assert!(text.contains("bash .ci/run"), "{text}");
    assert!(
        text.contains("x86_64-unknown-linux-musl"),
        "the musl target is installed: {text}"
    );
    let ci_run = std::fs::read_to_string(repo_root().join(".ci/run")).expect(".ci/run");
    assert!(
        ci_run.contains("bash .ci/packaging.sh"),
        ".ci/run runs the packaging checks: {ci_run}"
    );
    let packaging =
        std::fs::read_to_string(repo_root().join(".ci/packaging.sh")).expect(".ci/packaging.sh");
    let musl = packaging
        .find("cargo build --locked --release --target x86_64-unknown-linux-musl")
        .expect(".ci/packaging.sh builds the musl binary");
    let tests = packaging
        .find("cargo test --locked --test packaging")
        .expect(".ci/packaging.sh runs the packaging tests");
    assert!(
        musl < tests,
        "the musl binary is built before the tests that check it"
    );
}
