//! Start-up: from spawning `replan run` (a local run: `--issue`, local forge and history) to the
//! scripted LLM receiving its first request. Nothing subtracted; the child is stopped there.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::llm::ScriptedLlm;
use crate::stats::Samples;
use crate::support::git::isolated_git_env;
use crate::world::REPLAN;

pub fn measure(llm: &ScriptedLlm, runs: usize) -> Samples {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(workspace.join("README.md"), "# sample\n").expect("README");
    let mut samples = Samples::default();
    for run in 0..runs {
        let _ = llm.take();
        let mut command = Command::new(REPLAN);
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR"] {
            if let Ok(value) = std::env::var(key) {
                command.env(key, value);
            }
        }
        command
            .envs(isolated_git_env())
            .env("REPLAN_LLM__PROVIDER", "openai")
            .env("REPLAN_LLM__BASE_URL", llm.openai_base())
            .env("REPLAN_LLM__MODEL", "gpt-bench")
            .env("OPENAI_API_KEY", "sk-bench-key-0123456789abcdef")
            .env("RUST_LOG", "replan=warn")
            .args(["run", "--issue", "1", "--title", "Write the notes"])
            .args(["--body", "Write one notes file per step."])
            .arg("--workspace")
            .arg(&workspace)
            .arg("--local-dir")
            .arg(dir.path().join(format!("local-{run}")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let start = Instant::now();
        let mut child = command.spawn().expect("spawn replan");
        let first = loop {
            if let Some(at) = llm.first_request_at() {
                break Some(at);
            }
            if child.try_wait().expect("poll replan").is_some()
                || start.elapsed() > Duration::from_secs(20)
            {
                break None;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        let _ = child.kill();
        let _ = child.wait();
        let first = first.expect("replan run sent an LLM request");
        samples.push(first.duration_since(start).as_secs_f64() * 1e3);
    }
    samples
}
