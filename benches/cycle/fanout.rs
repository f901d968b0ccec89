//! `fanout_300_*` (issue 40): `replan run --stage plan` on a plan of 300 independent subtasks
//! writes matrices that fit the platforms (GitHub: at most 256 jobs a matrix; GitLab: 200 a
//! `parallel:matrix`), then 300 `--stage subtask` processes push a branch each to a local bare
//! remote and `--stage join` merges them all. Keys: how many matrices, the largest, and the
//! join's wall time. The model is the in-process scripted provider, so the times are Replan's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use replan::llm::scenario::{Scenario, ScenarioMode, ScriptedToolCall, Step, When};
use serde_json::{Value, json};

use crate::report::Report;
use crate::support::git::isolated_git_env;
use crate::world::REPLAN;

const SUBTASKS: usize = 300;
/// Subtask processes at a time: a CI runner pool runs them all at once, but the bench measures
/// the plan and the join, not this machine's throughput.
const AT_ONCE: usize = 4;

/// Who the bench's own commits (the seed) and Replan's commits are by.
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "bench"),
    ("GIT_AUTHOR_EMAIL", "bench@example.com"),
    ("GIT_COMMITTER_NAME", "bench"),
    ("GIT_COMMITTER_EMAIL", "bench@example.com"),
];

fn step(contains: &str, reply: Option<String>, tool_calls: Vec<ScriptedToolCall>) -> Step {
    Step {
        when: Some(When {
            purpose: None,
            contains: Some(contains.to_owned()),
        }),
        reply,
        tool_calls,
        ..Step::default()
    }
}

/// The plan, per subtask its `write_file` call and the report after it, then the e2e base
/// replies (quality judge, review, completion) for the plan and join stages.
fn scenario() -> Scenario {
    let ids: Vec<String> = (1..=SUBTASKS).map(|i| format!("task_{i}")).collect();
    let mut plan = crate::scenario::plan_of_chains(SUBTASKS, SUBTASKS);
    plan["comment"] = json!("Plan completed.");
    let report = json!({
        "report": "Wrote the file.",
        "replan_decision": plan["replan_decision"].clone(),
        "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false,
                    "reason": "done", "missingRequirements": []},
        "reflection": {"action_evaluated": "write_file", "status": "success",
                       "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}
    })
    .to_string();
    let mut steps = vec![step(
        "Produce the planning phases",
        Some(plan.to_string()),
        vec![],
    )];
    for id in &ids {
        steps.push(step(
            &format!("created `notes/{id}.md`"),
            Some(report.clone()),
            vec![],
        ));
    }
    for id in &ids {
        steps.push(step(
            &format!("Execute subtask `{id}`"),
            None,
            vec![ScriptedToolCall {
                name: "write_file".into(),
                arguments: json!({"path": format!("notes/{id}.md"), "content": format!("# {id}\n")}),
            }],
        ));
    }
    let base = Scenario::from_yaml(crate::E2E_SCENARIO).expect("e2e scenario");
    let from = base
        .steps
        .iter()
        .position(|s| {
            s.when
                .as_ref()
                .and_then(|w| w.contains.as_deref())
                .is_some_and(|c| c.contains("strict reviewer of execution plans"))
        })
        .expect("the e2e scenario's review steps");
    for _ in 0..3 {
        steps.extend(base.steps[from..].iter().cloned());
    }
    Scenario {
        mode: ScenarioMode::Matched,
        steps,
    }
}

struct Bench {
    work: tempfile::TempDir,
    scenario: PathBuf,
    clones: usize,
}

impl Bench {
    fn git(&self, dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .envs(isolated_git_env())
            .envs(IDENTITY)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    fn origin(&self) -> PathBuf {
        self.work.path().join("origin.git")
    }

    /// A fresh clone of the origin on `main`, as a CI job's checkout.
    fn clone(&mut self) -> PathBuf {
        self.clones += 1;
        let dir = self.work.path().join(format!("clone-{}", self.clones));
        let origin = self.origin();
        self.git(
            self.work.path(),
            &[
                "clone",
                "-q",
                origin.to_str().expect("utf-8 path"),
                dir.to_str().expect("utf-8 path"),
            ],
        );
        self.git(&dir, &["checkout", "-q", "main"]);
        dir
    }

    fn command(&self, workspace: &Path, stage: &[&str]) -> Command {
        let mut command = Command::new(REPLAN);
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR"] {
            if let Ok(value) = std::env::var(key) {
                command.env(key, value);
            }
        }
        command
            .envs(isolated_git_env())
            .envs(IDENTITY)
            .env("RUST_LOG", "replan=warn")
            .args(["run", "--issue", "1", "--title", "Write the notes"])
            .args(["--body", "One notes file per subtask."])
            .arg("--workspace")
            .arg(workspace)
            .arg("--local-dir")
            .arg(self.work.path().join("local"))
            .args([
                "--set",
                "llm.provider=scripted",
                "--set",
                "llm.model=scripted",
            ])
            .arg("--set")
            .arg(format!("llm.scenario={}", self.scenario.display()))
            .args(["--set", &format!("planning.max_subtasks={SUBTASKS}")])
            .args(stage)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        command
    }
}

fn run_ok(mut command: Command, what: &str) {
    let output = command.output().expect("spawn replan");
    assert!(
        output.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn report(report: &mut Report) {
    let work = tempfile::TempDir::new().expect("temp dir");
    let scenario = work.path().join("scenario.json");
    let text = serde_json::to_string(&scenario_value()).expect("scenario JSON");
    std::fs::write(&scenario, text).expect("write scenario");
    let mut bench = Bench {
        work,
        scenario,
        clones: 0,
    };
    let origin = bench.origin();
    bench.git(
        bench.work.path(),
        &["init", "-q", "--bare", origin.to_str().expect("utf-8 path")],
    );
    bench.git(&origin, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    let seed = bench.work.path().join("seed");
    bench.git(
        bench.work.path(),
        &[
            "clone",
            "-q",
            origin.to_str().expect("utf-8 path"),
            seed.to_str().expect("utf-8 path"),
        ],
    );
    bench.git(&seed, &["checkout", "-q", "-b", "main"]);
    std::fs::write(seed.join("README.md"), "# bench\n").expect("README");
    bench.git(&seed, &["add", "README.md"]);
    bench.git(&seed, &["commit", "-q", "-m", "init"]);
    bench.git(&seed, &["push", "-q", "origin", "main"]);

    let plan_dir = bench.clone();
    let outputs = bench.work.path().join("github-output.txt");
    let mut plan = bench.command(&plan_dir, &["--stage", "plan"]);
    plan.env("GITHUB_OUTPUT", &outputs);
    let started = Instant::now();
    run_ok(plan, "--stage plan");
    let plan_ms = started.elapsed().as_secs_f64() * 1e3;
    let written = replan::actions::outputs::parse(
        &std::fs::read_to_string(&outputs).expect("the plan stage's outputs"),
    );
    let matrices: Vec<Vec<String>> = written
        .iter()
        .filter(|(name, _)| name == "matrix" || name.starts_with("matrix_"))
        .map(|(_, value)| {
            let v: Value = serde_json::from_str(value).expect("a matrix is JSON");
            serde_json::from_value(v["subtask"].clone()).expect("a subtask list")
        })
        .collect();
    let largest = matrices.iter().map(Vec::len).max().unwrap_or(0);
    let ids: Vec<String> = matrices.concat();
    assert_eq!(ids.len(), SUBTASKS, "every subtask is in a matrix once");

    let started = Instant::now();
    for batch in ids.chunks(AT_ONCE) {
        let children: Vec<_> = batch
            .iter()
            .map(|id| {
                let dir = bench.clone();
                let mut command = bench.command(&dir, &["--stage", "subtask", "--subtask", id]);
                command.stderr(std::process::Stdio::piped());
                (id, command.spawn().expect("spawn a subtask"))
            })
            .collect();
        for (id, child) in children {
            let output = child.wait_with_output().expect("wait for a subtask");
            assert!(
                output.status.success(),
                "subtask {id} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    let subtasks_s = started.elapsed().as_secs_f64();

    let join_dir = bench.clone();
    let started = Instant::now();
    run_ok(
        bench.command(&join_dir, &["--stage", "join"]),
        "--stage join",
    );
    let join_ms = started.elapsed().as_secs_f64() * 1e3;
    let history = std::fs::read_to_string(
        bench
            .work
            .path()
            .join("local/planning_history/issues/1.jsonl"),
    )
    .unwrap_or_default();
    assert!(
        history.contains(r#""status":"completed""#),
        "the join of {SUBTASKS} branches completed the thread"
    );
    let merged = std::fs::read_dir(join_dir.join("notes"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        merged, SUBTASKS,
        "every subtask's file is in the join's checkout"
    );

    println!("## Fan-out of {SUBTASKS} ready subtasks (local bare remote, scripted model)\n");
    println!(
        "| matrices | largest matrix | plan stage ms | {SUBTASKS} subtask processes, {AT_ONCE} at a time, s | join of {SUBTASKS} branches ms |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {} | {largest} | {plan_ms:.0} | {subtasks_s:.1} | {join_ms:.0} |",
        matrices.len()
    );
    println!();
    report.set("fanout_300_matrices", matrices.len() as f64);
    report.set("fanout_300_largest_matrix", largest as f64);
    report.set("fanout_300_join_ms", join_ms);
}

fn scenario_value() -> Value {
    serde_json::to_value(scenario()).expect("a scenario serialises")
}
