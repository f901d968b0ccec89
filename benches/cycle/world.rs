//! One GitHub Actions run of the release `replan` binary against the fake GitHub on loopback and
//! the scripted LLM, as `tests/all/github/e2e.rs` drives it; measured with `wait4` so the peak
//! RSS is the child's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::llm::ScriptedLlm;
use crate::support::git::isolated_git_env;
use crate::support::{FakeGitHub, TestRepo};

pub const REPLAN: &str = env!("CARGO_BIN_EXE_replan");

pub struct World {
    pub fake: FakeGitHub,
    origin: TestRepo,
    checkout: TestRepo,
    /// The checkouts of earlier runs, removed when the bench ends (see [`World::fresh_checkout`]).
    used: Vec<TestRepo>,
    files: TempDir,
    runs: u32,
}

pub struct RunResult {
    pub wall: Duration,
    /// Peak resident set of the `replan` process (KiB), from `wait4`'s `ru_maxrss`.
    pub max_rss_kib: i64,
    /// CPU time (user + system) of the `replan` process and the children it reaped (`git`):
    /// steadier than wall time on a shared machine.
    pub cpu: Duration,
    pub exit_code: i32,
    pub stderr: String,
    /// The step outputs the run wrote (`status`, `tasks_done`, ...).
    pub outputs: BTreeMap<String, String>,
}

impl World {
    pub fn new() -> Self {
        let fake = FakeGitHub::start();
        fake.add_collaborator("alice", "write");
        let origin = TestRepo::bare();
        // A forge does not run `git maintenance` inside the push it answers; a bare repository's
        // receive-pack would, and the run would wait for it.
        origin.run_git(&["config", "receive.autogc", "false"]);
        let checkout = TestRepo::clone_from(&origin);
        let _ = checkout.try_git(&["checkout", "-q", "-b", "main"]);
        checkout.write("README.md", "# widgets\n");
        checkout.commit_all("init");
        checkout.run_git(&["push", "-q", "origin", "main"]);
        World {
            fake,
            origin,
            checkout,
            used: Vec::new(),
            files: TempDir::new().expect("temp dir"),
            runs: 0,
        }
    }

    /// This world with an `AGENTS.md` of `bytes` bytes committed on `main` (issue 38: the
    /// repository's instructions join every request's system prompt).
    pub fn agents_md(self, bytes: usize) -> Self {
        let line = "- Keep each change small and run the formatter before committing it.\n";
        let text: String = line.repeat(bytes / line.len() + 1)[..bytes].to_owned();
        self.committed("AGENTS.md", &text, "agent instructions")
    }

    /// This world with `path` holding `text` on `main` (e.g. a `.replan.yml` with `verify`).
    pub fn committed(self, path: &str, text: &str, message: &str) -> Self {
        self.checkout.write(path, text);
        self.checkout.commit_all(message);
        self.checkout.run_git(&["push", "-q", "origin", "main"]);
        self
    }

    /// A new issue opened by a collaborator, and the event payload that announces it.
    pub fn new_issue(&self, title: &str, body: &str) -> (u64, PathBuf) {
        let number = self.fake.seed_issue(title, body, "alice");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github-events/issues.opened.15.json");
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture"))
                .expect("fixture is JSON");
        let repo = self.fake.repo();
        let (owner, name) = repo.split_once('/').expect("owner/name");
        value["repository"]["full_name"] = json!(repo);
        value["repository"]["name"] = json!(name);
        value["repository"]["owner"]["login"] = json!(owner);
        value["issue"]["number"] = json!(number);
        value["issue"]["title"] = json!(title);
        value["issue"]["body"] = json!(body);
        value["issue"]["user"]["login"] = json!("alice");
        value["sender"]["login"] = json!("alice");
        value["sender"]["type"] = json!("User");
        let path = self.files.path().join(format!("issue-{number}.json"));
        std::fs::write(&path, value.to_string()).expect("write payload");
        (number, path)
    }

    pub fn env(&self, llm: &ScriptedLlm, payload: &Path) -> BTreeMap<String, String> {
        let file = |name: &str| self.files.path().join(name).display().to_string();
        let mut env: BTreeMap<String, String> = [
            ("GITHUB_ACTIONS", "true".to_owned()),
            ("GITHUB_EVENT_NAME", "issues".to_owned()),
            ("GITHUB_EVENT_PATH", payload.display().to_string()),
            ("GITHUB_API_URL", self.fake.base_url()),
            ("GITHUB_SERVER_URL", "https://github.com".to_owned()),
            ("GITHUB_REPOSITORY", self.fake.repo()),
            ("GITHUB_RUN_ATTEMPT", "1".to_owned()),
            ("GITHUB_TOKEN", self.fake.token()),
            (
                "GITHUB_WORKSPACE",
                self.checkout.path().display().to_string(),
            ),
            ("GITHUB_OUTPUT", file("output.txt")),
            ("GITHUB_STEP_SUMMARY", file("summary.md")),
            ("REPLAN_LLM__PROVIDER", "openai".to_owned()),
            ("REPLAN_LLM__BASE_URL", llm.openai_base()),
            ("REPLAN_LLM__MODEL", "gpt-bench".to_owned()),
            ("OPENAI_API_KEY", "sk-bench-key-0123456789abcdef".to_owned()),
            ("RUST_LOG", "replan=warn".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for (k, v) in isolated_git_env() {
            env.insert(k.to_owned(), v.to_owned());
        }
        env
    }

    /// A new clone of `main` for the next run, as a CI job starts from. The earlier runs'
    /// checkouts stay until the bench ends: deleting their files just before a run would slow
    /// the run's own file creation on a file system without a journal, where ext4 skips every
    /// inode freed in the last minutes (`recently_deleted`), and charge that to the run.
    pub fn fresh_checkout(&mut self) {
        let checkout = TestRepo::clone_from(&self.origin);
        let old = std::mem::replace(&mut self.checkout, checkout);
        self.used.push(old);
    }

    /// Runs `replan run` once (a new workflow run id each time).
    pub fn run(&mut self, env: &BTreeMap<String, String>) -> RunResult {
        self.run_binary(Path::new(REPLAN), env)
    }

    /// Runs `binary run` once, as [`World::run`] runs the release build.
    pub fn run_binary(&mut self, binary: &Path, env: &BTreeMap<String, String>) -> RunResult {
        self.runs += 1;
        let mut command = Command::new(binary);
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR"] {
            if let Ok(value) = std::env::var(key) {
                command.env(key, value);
            }
        }
        let output_file = self.files.path().join(format!("output-{}.txt", self.runs));
        command
            .envs(env)
            .env("GITHUB_RUN_ID", (5000 + self.runs).to_string())
            .env("GITHUB_OUTPUT", &output_file)
            .arg("run");
        // The previous runs' files reach the disk now, not while this run is timed: the kernel's
        // writeback would take CPU from it, and on ext4 without a journal, inodes whose table
        // block is still dirty count as recently freed for six minutes, which every file the
        // run creates has to skip.
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        let mut result = measure(command);
        let text = std::fs::read_to_string(&output_file).unwrap_or_default();
        result.outputs = replan::actions::outputs::parse(&text).into_iter().collect();
        result
    }

    /// The JSONL history of issue `number` on the fake's history branch.
    pub fn history(&self, number: u64) -> String {
        self.fake
            .file_at_ref(
                "replan-history",
                &format!("planning_history/issues/{number}.jsonl"),
            )
            .unwrap_or_default()
    }

    /// The branch the pull request tool pushes must exist on the fake for it to accept the PR.
    pub fn prepare_pull_request_branch(&self, number: u64) {
        let main = self.fake.ref_sha("main").expect("main branch");
        let branch = format!("replan/issue-{number}");
        self.fake.set_ref(&branch, &main);
        self.fake.append_file(&branch, "hello.md", "hello\n");
    }
}

/// Spawns `command` with stdout discarded and stderr captured in a file, and reaps it with
/// `wait4` for its own resource usage.
pub fn measure(mut command: Command) -> RunResult {
    let stderr_file = tempfile::NamedTempFile::new().expect("stderr file");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file.reopen().expect("reopen stderr file"));
    let start = Instant::now();
    // Reaped by `wait4` below, which std's `wait` cannot replace: it drops the rusage.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().expect("spawn replan");
    let (code, rusage) = wait4(child.id());
    let wall = start.elapsed();
    RunResult {
        wall,
        max_rss_kib: rusage.ru_maxrss,
        cpu: timeval(rusage.ru_utime) + timeval(rusage.ru_stime),
        exit_code: code,
        stderr: std::fs::read_to_string(stderr_file.path()).unwrap_or_default(),
        outputs: BTreeMap::new(),
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

fn wait4(pid: u32) -> (i32, libc::rusage) {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped; both pointers are valid for the call.
    let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as libc::pid_t, "wait4 on the replan child");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage)
}
