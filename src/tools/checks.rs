//! The checks Replan runs itself to prove the work (issue 37): the configured `verify` checks, or
//! those detected from the repository's manifests, run exactly as configured (an argv, no shell)
//! in the same sandbox as `run_command`, with the tree id of the work tree they ran on.
//!
//! Detection reads the manifests at the commit the run started from (`HEAD` of Replan's private
//! git), never the work tree: a `Makefile` or `package.json` the model wrote during the run
//! does not decide which checks exist.

use super::git_command::git;
use super::process::{describe, run_argv};
use super::workspace::Workspace;
use crate::config::{CheckConfig, CheckWhen, VerifyConfig};
use crate::history::check::{CheckRecord, CheckStatus, output_tail};
use crate::sandbox::SandboxPolicy;
use crate::sandbox::protected::restoring;
use std::path::Path;
use std::time::{Duration, Instant};

/// Where the run's checks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksSource {
    /// `verify` names them.
    Configured,
    /// Found in the repository's manifests at the starting commit.
    Detected,
    /// `verify: []`.
    Off,
}

/// The checks of a run and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSet {
    pub checks: Vec<CheckConfig>,
    pub source: ChecksSource,
}

impl CheckSet {
    /// The configured checks, else those detected in the repository at `root`.
    pub fn resolve(config: &VerifyConfig, root: &Path) -> CheckSet {
        match &config.checks {
            Some(checks) if checks.is_empty() => CheckSet {
                checks: vec![],
                source: ChecksSource::Off,
            },
            Some(checks) => CheckSet {
                checks: checks.clone(),
                source: ChecksSource::Configured,
            },
            None => CheckSet {
                checks: detect_checks(root),
                source: ChecksSource::Detected,
            },
        }
    }

    /// One line for the log and the job summary: which checks, and where they came from.
    pub fn describe(&self) -> String {
        let names = || {
            self.checks
                .iter()
                .map(|c| format!("`{}`", c.argv.join(" ")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (self.source, self.checks.is_empty()) {
            (ChecksSource::Off, _) => "verification is off (`verify: []`)".to_owned(),
            (ChecksSource::Detected, true) => {
                "no checks: none configured in `verify` and none detected in the repository"
                    .to_owned()
            }
            (ChecksSource::Detected, false) => format!("checks detected: {}", names()),
            (ChecksSource::Configured, _) => format!("checks configured: {}", names()),
        }
    }
}

/// The test command of each ecosystem whose manifest is in the repository's starting commit.
pub fn detect_checks(root: &Path) -> Vec<CheckConfig> {
    let read = |name: &str| git(root, &["cat-file", "-p", &format!("HEAD:{name}")], &[]).ok();
    detect_from(read)
}

/// Detection over any way of reading a file of the starting commit (`None`: no such file).
pub fn detect_from(read: impl Fn(&str) -> Option<String>) -> Vec<CheckConfig> {
    let exists = |name: &str| read(name).is_some();
    let text = |name: &str| read(name).unwrap_or_default();
    let mut found = Vec::new();
    let mut add =
        |argv: &[&str]| found.push(CheckConfig::new(&argv.join(" "), argv, CheckWhen::EachTask));
    if exists("Cargo.toml") {
        add(&["cargo", "test"]);
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&text("package.json")).unwrap_or_default();
    if manifest
        .get("scripts")
        .and_then(|s| s.get("test"))
        .is_some()
    {
        let runner = if exists("pnpm-lock.yaml") {
            "pnpm"
        } else if exists("yarn.lock") {
            "yarn"
        } else {
            "npm"
        };
        add(&[runner, "test"]);
    }
    let pytest = exists("pytest.ini")
        || exists("conftest.py")
        || text("pyproject.toml").contains("[tool.pytest")
        || text("setup.cfg").contains("[tool:pytest]")
        || text("tox.ini").contains("[pytest]");
    if pytest {
        add(&["python", "-m", "pytest"]);
    }
    if exists("go.mod") {
        add(&["go", "test", "./..."]);
    }
    let make_test = ["Makefile", "makefile", "GNUmakefile"].iter().any(|name| {
        text(name).lines().any(|l| {
            l.strip_prefix("test")
                .is_some_and(|r| r.starts_with(':') && !r.starts_with(":="))
        })
    });
    if make_test {
        add(&["make", "test"]);
    }
    found
}

/// Runs the run's checks in one checkout (the workspace, or a parallel subtask's worktree).
#[derive(Clone)]
pub struct CheckRunner {
    pub workspace: Workspace,
    pub sandbox: SandboxPolicy,
    pub output_cap: usize,
    pub set: CheckSet,
}

impl CheckRunner {
    /// The same checks in another checkout.
    pub fn rooted_at(&self, workspace: &Workspace) -> CheckRunner {
        let mut runner = self.clone();
        runner.sandbox.workspace = workspace.root().to_path_buf();
        runner.sandbox.temp_dir = workspace.temp_dir().map(Path::to_path_buf);
        runner.workspace = workspace.clone();
        runner
    }

    pub fn checks(&self) -> &[CheckConfig] {
        &self.set.checks
    }

    /// The checks that prove one subtask's attempt.
    pub fn each_task(&self) -> Vec<CheckConfig> {
        self.set
            .checks
            .iter()
            .filter(|c| c.when == CheckWhen::EachTask)
            .cloned()
            .collect()
    }

    /// The tree id of the work tree as it is now (every change `git add -A` sees, protected
    /// paths as committed); `None` without git.
    pub fn tree(&self) -> Option<String> {
        let protected = self.workspace.protected().entries().to_vec();
        super::git::working_tree(self.workspace.root(), &protected).ok()
    }

    /// The tree of the commit the run started from; `None` without git.
    pub fn start_tree(&self) -> Option<String> {
        git(self.workspace.root(), &["rev-parse", "HEAD^{tree}"], &[]).ok()
    }

    /// Run `check` on the work tree as it is, recording the tree it ran on.
    pub async fn run(&self, check: &CheckConfig, tree: Option<String>) -> CheckRecord {
        let started = Instant::now();
        let limit = Duration::from_secs(check.timeout_seconds.max(1));
        let root = self.workspace.root().to_path_buf();
        let (result, restored) = restoring(
            self.workspace.protected(),
            run_argv(&check.argv, &root, limit, self.output_cap, &self.sandbox),
        )
        .await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let (status, exit_code, output) = match result {
            Err(e) => (CheckStatus::NotRun, None, e.message),
            Ok(finished) => match finished.status {
                None => (
                    CheckStatus::TimedOut,
                    None,
                    format!(
                        "{}\n(did not finish within {}s and was killed)",
                        finished.output,
                        limit.as_secs()
                    ),
                ),
                Some(s) if s.success() => (CheckStatus::Passed, Some(0), finished.output),
                Some(s) => (
                    CheckStatus::Failed,
                    s.code(),
                    format!("{}\n({})", finished.output, describe(s)),
                ),
            },
        };
        // A check that rewrote Replan's own files fails: its result may have been written to pass.
        let (status, output) = if restored.is_empty() {
            (status, output)
        } else {
            (
                CheckStatus::Failed,
                format!(
                    "{output}\nthe check changed protected paths ({}); Replan put them back",
                    restored.join(", ")
                ),
            )
        };
        CheckRecord {
            name: check.name.clone(),
            argv: check.argv.clone(),
            status,
            exit_code,
            duration_ms,
            tree,
            task_id: None,
            base_tree: None,
            output_tail: output_tail(&output),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn files(list: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = list
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn each_ecosystem_gives_its_test_command() {
        let found = detect_from(files(&[
            ("Cargo.toml", "[package]"),
            ("package.json", r#"{"scripts":{"test":"jest"}}"#),
            ("yarn.lock", ""),
            ("pyproject.toml", "[tool.pytest.ini_options]"),
            ("go.mod", "module x"),
            ("Makefile", "VAR := 1\ntest: build\n"),
        ]));
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cargo test",
                "yarn test",
                "python -m pytest",
                "go test ./...",
                "make test"
            ]
        );
        assert!(found.iter().all(|c| c.when == CheckWhen::EachTask));
    }

    #[test]
    fn nothing_without_a_test_command() {
        let found = detect_from(files(&[
            ("package.json", r#"{"scripts":{"build":"tsc"}}"#),
            ("Makefile", "build:\n"),
        ]));
        assert!(found.is_empty(), "{found:?}");
    }
}
