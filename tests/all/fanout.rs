//! `replan run --stage plan|subtask|join` as CI jobs would run it: separate processes that share
//! nothing but one `--local-dir` (forge and history) and a bare `origin`, each in its own clone.

use std::path::Path;
use std::process::Output;

use replan::llm::scenario::{Scenario, ScriptedToolCall, Step, When};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::github::e2e_support::scenario;
use crate::github::local_run::{checkout, local_command};
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

/// A subtask of the scripted plan: its id, dependencies, and the file it writes.
struct Task {
    id: &'static str,
    deps: &'static [&'static str],
    file: &'static str,
    content: &'static str,
}

const fn task(
    id: &'static str,
    deps: &'static [&'static str],
    file: &'static str,
    content: &'static str,
) -> Task {
    Task {
        id,
        deps,
        file,
        content,
    }
}

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

const NO_REPLAN: &str = r#"{"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []}"#;

/// The e2e base replies, after a plan of `tasks` and, per task, `attempts` executions that
/// write its file and finish it.
fn fanout_scenario(tasks: &[Task], attempts: usize) -> Scenario {
    let subtasks: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"id": t.id, "description": format!("Write {}", t.file), "dependencies": t.deps, "estimated_complexity": "low", "required_tools": ["write_file"]}))
        .collect();
    let actions: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"task_id": t.id, "action_type": "tool_call", "tool": "write_file", "purpose": format!("write {}", t.file), "expected_outcome": "file written"}))
        .collect();
    let order: Vec<&str> = tasks.iter().map(|t| t.id).collect();
    let plan = json!({
        "phase": "planning",
        "goal_understanding": {"main_objective": "Write the files", "success_criteria": ["the files exist"], "constraints": []},
        "task_decomposition": {"reasoning": "one file each", "subtasks": subtasks},
        "action_plan": {"execution_order": order, "actions": actions},
        "self_check": {"goal_understanding": {"ok": true, "notes": "clear"}, "task_decomposition": {"ok": true, "notes": "ids unique"}, "action_plan": {"ok": true, "notes": "tools exist"}},
        "comment": "Plan completed.",
        "replan_decision": serde_json::from_str::<Value>(NO_REPLAN).unwrap(),
        "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}
    });
    let finished = format!(
        r#"{{"report": "Wrote the file.", "replan_decision": {NO_REPLAN}, "verdict": {{"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}}, "reflection": {{"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}}}"#
    );
    let mut steps = vec![step(
        "Produce the planning phases",
        Some(plan.to_string()),
        vec![],
    )];
    for _ in 0..attempts {
        for t in tasks {
            for verb in ["created", "replaced"] {
                steps.push(step(
                    &format!("{verb} `{}`", t.file),
                    Some(finished.clone()),
                    vec![],
                ));
            }
        }
    }
    for _ in 0..attempts {
        for t in tasks {
            steps.push(step(
                &format!("Execute subtask `{}`", t.id),
                None,
                vec![ScriptedToolCall {
                    name: "write_file".into(),
                    arguments: json!({"path": t.file, "content": t.content}),
                }],
            ));
        }
    }
    let mut all = scenario("");
    steps.append(&mut all.steps);
    all.steps = steps;
    all
}

/// One fan-out world: the scripted model, a bare `origin` with `main`, the shared local dir.
struct Fanout {
    llm: LlmServer,
    origin: TestRepo,
    _seed: TestRepo,
    dir: TempDir,
    /// Arguments every job of this world gets (`--set` of a test's config).
    args: Vec<String>,
}

impl Fanout {
    fn new(tasks: &[Task], attempts: usize) -> Self {
        let (origin, seed) = checkout();
        Fanout {
            llm: LlmServer::start(fanout_scenario(tasks, attempts)),
            origin,
            _seed: seed,
            dir: TempDir::new().unwrap(),
            args: Vec::new(),
        }
    }

    /// A fresh clone of `origin` on `main`, as a CI job's checkout.
    fn clone(&self) -> TestRepo {
        let repo = TestRepo::clone_from(&self.origin);
        repo.run_git(&["checkout", "-q", "main"]);
        repo
    }

    fn command(&self, workspace: &TestRepo, args: &[&str]) -> std::process::Command {
        let mut command = local_command(&self.llm, workspace, Some(self.dir.path()));
        command.args(&self.args).args(args);
        command
    }

    /// `replan run --issue 7 … <args>` in `workspace`, to its end.
    fn run(&self, workspace: &TestRepo, args: &[&str]) -> Output {
        self.command(workspace, args).output().unwrap()
    }

    /// The subtask jobs of one wave, all at once, each in its own clone.
    fn subtasks(&self, ids: &[&str]) {
        let clones: Vec<TestRepo> = ids.iter().map(|_| self.clone()).collect();
        let children: Vec<_> = ids
            .iter()
            .zip(&clones)
            .map(|(id, clone)| {
                self.command(clone, &["--stage", "subtask", "--subtask", id])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (id, child) in ids.iter().zip(children) {
            let output = child.wait_with_output().unwrap();
            assert_ok(&output, &format!("subtask {id}"));
        }
    }

    fn matrix_file(&self) -> String {
        self.dir.path().join("matrix.json").display().to_string()
    }

    fn plan(&self) -> String {
        let matrix = self.matrix_file();
        let output = self.run(&self.clone(), &["--stage", "plan", "--matrix-out", &matrix]);
        assert_ok(&output, "plan");
        std::fs::read_to_string(&matrix).unwrap()
    }

    /// The join in `workspace`; returns the matrix it wrote, if it fanned out again.
    fn join(&self, workspace: &TestRepo) -> Option<String> {
        let matrix = self.matrix_file();
        let _ = std::fs::remove_file(&matrix);
        let output = self.run(workspace, &["--stage", "join", "--matrix-out", &matrix]);
        assert_ok(&output, "join");
        std::fs::read_to_string(&matrix).ok()
    }

    /// One wave: the subtask jobs of `ids`, then a join in a fresh clone that fans out `next`.
    fn wave(&self, ids: &[&str], next: &str) -> TestRepo {
        self.subtasks(ids);
        let joined = self.clone();
        assert_eq!(self.join(&joined).as_deref(), Some(next));
        joined
    }

    /// The last join, in a fresh clone: nothing left to fan out, the run completed.
    fn final_join(&self) -> TestRepo {
        let joined = self.clone();
        assert_eq!(self.join(&joined), None, "nothing is left to fan out");
        let show = self.history_show();
        assert!(show.contains("→ completed"), "{show}");
        joined
    }

    fn history(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("planning_history/issues/7.jsonl")).unwrap()
    }

    fn history_show(&self) -> String {
        let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("replan"))
            .args(["history", "show", "7", "--dir"])
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert_ok(&output, "history show");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn assert_ok(output: &Output, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{what}:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn assert_usage(output: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "`{needle}` missing from: {stderr}");
    }
}

#[test]
fn plan_then_four_concurrent_subtask_processes_then_join_completes_with_every_change() {
    let tasks = [
        task("task_1", &[], "a.txt", "alpha\n"),
        task("task_2", &[], "b.txt", "beta\n"),
        task("task_3", &[], "c.txt", "gamma\n"),
        task("task_4", &[], "d.txt", "delta\n"),
    ];
    let world = Fanout::new(&tasks, 1);
    let matrix = world.plan();
    assert_eq!(
        matrix,
        r#"{"subtask":["task_1","task_2","task_3","task_4"]}"#
    );
    let show = world.history_show();
    assert!(show.contains("→ fanned_out"), "{show}");

    // A join before any subtask ran, an unknown id, --subtask without --stage subtask.
    let early = world.run(&world.clone(), &["--stage", "join"]);
    assert_usage(
        &early,
        &["--stage join", "no subtask", "--stage subtask --subtask ID"],
    );
    let unknown = world.run(
        &world.clone(),
        &["--stage", "subtask", "--subtask", "task_9"],
    );
    assert_usage(
        &unknown,
        &["--subtask task_9", "task_1, task_2, task_3, task_4"],
    );
    let stray = world.run(&world.clone(), &["--subtask", "task_1"]);
    assert_usage(&stray, &["--subtask", "--stage subtask"]);
    let missing = world.run(&world.clone(), &["--stage", "subtask"]);
    assert_usage(&missing, &["--stage subtask needs --subtask ID"]);

    world.subtasks(&["task_1", "task_2", "task_3", "task_4"]);
    for t in &tasks {
        let branch = format!("replan/issue-7-tasks/{}", t.id);
        let shown = world
            .origin
            .run_git(&["show", &format!("{branch}:{}", t.file)]);
        assert_eq!(format!("{shown}\n"), t.content, "{branch}");
    }
    let joined = world.final_join();
    for t in &tasks {
        assert_eq!(joined.read(t.file), t.content);
    }
    // The join's merge is Replan's own git's (its private copy; the checkout's `.git` is the
    // model's): the merged work reaches origin's work branch.
    for t in &tasks {
        let shown = world
            .origin
            .run_git(&["show", &format!("replan/work/issue-7:{}", t.file)]);
        assert_eq!(format!("{shown}\n"), t.content);
    }
    // Every entry of the concurrent subtask runs landed: each task was judged once, every run
    // that started finished, and no two lines share a `seq`.
    let history = world.history();
    let parsed = replan::history::jsonl::parse(&history);
    assert!(parsed.corrupt.is_empty(), "{history}");
    let mut seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    let count = seqs.len();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), count, "{history}");
    let started = history.matches(r#""type":"run_started""#).count();
    let finished = history.matches(r#""type":"run_finished""#).count();
    assert_eq!(
        (started, finished),
        (6, 6),
        "plan, four subtasks, join: {history}"
    );
    for t in &tasks {
        let judged = history
            .lines()
            .filter(|l| {
                l.contains(r#""type":"judge""#) && l.contains(&format!(r#""task_id":"{}""#, t.id))
            })
            .count();
        assert_eq!(judged, 1, "{}: {history}", t.id);
    }
}

#[test]
fn a_subtask_that_waits_for_two_others_runs_in_the_second_wave() {
    let tasks = [
        task("task_1", &[], "a.txt", "alpha\n"),
        task("task_2", &[], "b.txt", "beta\n"),
        task("task_3", &["task_1", "task_2"], "c.txt", "gamma\n"),
    ];
    let world = Fanout::new(&tasks, 1);
    assert_eq!(world.plan(), r#"{"subtask":["task_1","task_2"]}"#);
    let early = world.run(
        &world.clone(),
        &["--stage", "subtask", "--subtask", "task_3"],
    );
    assert_usage(&early, &["--subtask task_3 is not ready", "task_1, task_2"]);

    world.wave(&["task_1", "task_2"], r#"{"subtask":["task_3"]}"#);
    world.subtasks(&["task_3"]);
    let second = world.final_join();
    assert_eq!(second.read("a.txt"), "alpha\n");
    assert_eq!(second.read("b.txt"), "beta\n");
    assert_eq!(second.read("c.txt"), "gamma\n");
}

#[test]
fn a_conflicting_subtask_is_redone_on_the_merged_tree() {
    let tasks = [
        task("task_1", &[], "same.txt", "one\n"),
        task("task_2", &[], "same.txt", "two\n"),
    ];
    let world = Fanout::new(&tasks, 2);
    assert_eq!(world.plan(), r#"{"subtask":["task_1","task_2"]}"#);
    // task_1 merges; task_2 conflicts with it and is the next wave.
    let first = world.wave(&["task_1", "task_2"], r#"{"subtask":["task_2"]}"#);
    assert_eq!(first.read("same.txt"), "one\n");
    let history = world.history();
    let conflict = history
        .lines()
        .find(|l| l.contains(r#""type":"judge""#) && l.contains("conflicted in same.txt"))
        .unwrap_or_else(|| panic!("no conflict judgement: {history}"));
    assert!(conflict.contains("NEEDS_CONTINUATION"), "{conflict}");

    world.subtasks(&["task_2"]);
    let second = world.final_join();
    assert_eq!(second.read("same.txt"), "two\n");
}

#[test]
fn the_gitlab_child_pipeline_has_one_job_per_ready_subtask_and_the_join() {
    let tasks = [
        task("task_1", &[], "a.txt", "alpha\n"),
        task("task_2", &[], "b.txt", "beta\n"),
    ];
    let world = Fanout::new(&tasks, 1);
    let pipeline = world.dir.path().join("child.yml");
    let output = world.run(
        &world.clone(),
        &[
            "--stage",
            "plan",
            "--pipeline-out",
            &pipeline.display().to_string(),
        ],
    );
    assert_ok(&output, "plan");
    let text = std::fs::read_to_string(&pipeline).unwrap();
    let parsed: Value = serde_saphyr::from_str(&text).unwrap();
    let script = |job: &str| -> Vec<String> {
        parsed[job]["script"]
            .as_array()
            .unwrap_or_else(|| panic!("{job} has a script: {text}"))
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect()
    };
    // Split trust: an agent job (no GITLAB_TOKEN, a bundle) and a publish job per subtask.
    for id in ["task_1", "task_2"] {
        let agent = format!("replan-subtask-{id}");
        let job = &parsed[&agent];
        assert_eq!(job["variables"]["REPLAN_SUBTASK"], id, "{text}");
        assert_eq!(job["stage"], "subtasks");
        assert_eq!(job["environment"]["name"], "replan-agent", "{text}");
        let lines = script(&agent);
        assert!(lines[0].contains("GITLAB_TOKEN") && lines[0].contains("exit 1"));
        assert!(
            lines[1].contains("--stage subtask --subtask") && lines[1].contains("--bundle"),
            "{text}"
        );
        let publish = format!("replan-publish-subtask-{id}");
        assert_eq!(
            parsed[&publish]["needs"][0]["job"],
            agent.as_str(),
            "{text}"
        );
        assert_eq!(parsed[&publish]["environment"]["name"], "replan-publish");
        assert!(script(&publish)[1].starts_with("replan publish replan-bundle --digest"));
    }
    assert_eq!(parsed["replan-join"]["stage"], "join", "{text}");
    assert_eq!(parsed["replan-join"]["when"], "always", "{text}");
    assert!(
        script("replan-join")[1].contains("--stage join --bundle"),
        "{text}"
    );
    let include = &parsed["replan-next-wave"]["trigger"]["include"][0];
    assert_eq!(include["job"], "replan-publish-join", "{text}");
    let next = include["artifact"].as_str().unwrap();
    assert_eq!(parsed["replan-publish-join"]["artifacts"]["paths"][0], next);
    // The file GitLab runs next comes from the publish job, not from the join that ran the model.
    assert!(parsed["replan-join"]["artifacts"]["paths"][0] != next);

    // The shipped template starts the file the plan's publish job writes, and the join's publish
    // job writes the same name.
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/gitlab/replan-fanout.gitlab-ci.yml"),
    )
    .unwrap();
    let template: Value = serde_saphyr::from_str(&template).unwrap();
    let plan_script = template["replan-plan"]["script"][1].as_str().unwrap();
    assert!(
        plan_script.contains("--stage plan --bundle replan-bundle"),
        "{plan_script}"
    );
    let publish_script = template["replan-publish-plan"]["script"][1]
        .as_str()
        .unwrap();
    assert!(
        publish_script.contains(&format!("--pipeline-out {next}")),
        "{publish_script}"
    );
    assert_eq!(
        template["replan-publish-plan"]["artifacts"]["paths"][0],
        next
    );
    let started = &template["replan-fanout"]["trigger"]["include"][0];
    assert_eq!(started["artifact"], next);
    assert_eq!(started["job"], "replan-publish-plan");
    let join_publish = script("replan-publish-join");
    assert!(
        join_publish[1].contains(&format!("--pipeline-out {next}")),
        "{join_publish:?}"
    );
}

#[test]
fn a_plan_that_does_not_fan_out_still_leaves_a_pipeline_for_the_trigger_job() {
    // The plan's decision asks the issue's author first: the run waits, no subtask is ready.
    let mut script = fanout_scenario(&[task("task_1", &[], "a.txt", "alpha\n")], 1);
    let asking = r#"{"replan_needed": true, "confidence": 0.9, "reasoning": "unclear", "replan_type": "clarification_request", "issues_found": ["which files?"], "recommended_actions": [], "clarification_needed": true, "clarification_questions": ["Which files?"]}"#;
    let plan = script.steps[0].reply.take().unwrap();
    script.steps[0].reply = Some(
        plan.replacen(
            &serde_json::from_str::<Value>(NO_REPLAN)
                .unwrap()
                .to_string(),
            asking,
            1,
        ),
    );
    let (origin, _seed) = checkout();
    let world = Fanout {
        llm: LlmServer::start(script),
        origin,
        _seed,
        dir: TempDir::new().unwrap(),
        args: Vec::new(),
    };
    let pipeline = world.dir.path().join("child.yml");
    let matrix = world.matrix_file();
    let output = world.run(
        &world.clone(),
        &[
            "--stage",
            "plan",
            "--pipeline-out",
            &pipeline.display().to_string(),
            "--matrix-out",
            &matrix,
        ],
    );
    assert_ok(&output, "plan");
    assert!(
        !Path::new(&matrix).exists(),
        "no matrix without ready subtasks"
    );
    let parsed: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&pipeline).unwrap()).unwrap();
    let jobs: Vec<&String> = parsed
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("replan-"))
        .collect();
    assert_eq!(jobs, ["replan-done"], "{parsed}");
    let show = world.history_show();
    assert!(show.contains("→ waiting_for_answer"), "{show}");
}

#[test]
fn stage_flags_that_cannot_work_are_usage_errors() {
    let world = Fanout::new(&[task("task_1", &[], "a.txt", "alpha\n")], 1);
    let no_plan = world.run(
        &world.clone(),
        &["--stage", "subtask", "--subtask", "task_1"],
    );
    assert_usage(&no_plan, &["--stage subtask found no plan", "--stage plan"]);
    let outputs = world.run(
        &world.clone(),
        &[
            "--stage",
            "subtask",
            "--subtask",
            "task_1",
            "--matrix-out",
            "m.json",
        ],
    );
    assert_usage(&outputs, &["--matrix-out", "not by `--stage subtask`"]);
    let bad_id = world.run(
        &world.clone(),
        &["--stage", "subtask", "--subtask", "$(id)"],
    );
    assert_usage(&bad_id, &["cannot name a CI job"]);
}

/// Issue 39: the subtask jobs of a wave, separate processes that cannot see each other's spend,
/// share the thread's ledger. Every call costs $1; the plan job spends $P and the cap leaves $2
/// for the wave: each of its two jobs may spend half, so each makes one call and stops, and
/// together they end at the cap (alone, each would have made its two calls: $2 over).
#[test]
fn the_subtask_jobs_of_a_wave_share_the_threads_ledger() {
    let tasks = [
        task("task_1", &[], "a.txt", "alpha\n"),
        task("task_2", &[], "b.txt", "beta\n"),
    ];
    let mut world = Fanout::new(&tasks, 1);
    world.llm = LlmServer::start(crate::ledger::one_dollar_a_call(fanout_scenario(&tasks, 1)));
    world.args = vec![
        "--set".into(),
        "llm.prices.gpt-test.input_per_mtok=10000".into(),
    ];
    let matrix = world.plan();
    assert_eq!(matrix, r#"{"subtask":["task_1","task_2"]}"#);
    let spent = |world: &Fanout| {
        replan::history::replay(&replan::history::jsonl::parse(&world.history()).entries)
            .usage
            .cost_usd
    };
    let planned = spent(&world);
    assert!(planned >= 1.0, "the plan job spent ${planned}");
    let cap = planned + 2.0;
    world
        .args
        .extend(["--set".into(), format!("llm.budget.per_thread_usd={cap}")]);

    let before = world.llm.requests().len();
    world.subtasks(&["task_1", "task_2"]);
    assert_eq!(world.llm.requests().len(), before + 2, "one call per job");
    assert_eq!(spent(&world), cap, "the wave ends at the cap, not past it");
    let finished = |world: &Fanout| -> Vec<replan::history::entry::RunStatus> {
        replan::history::jsonl::parse(&world.history())
            .entries
            .iter()
            .filter_map(|e| match &e.body {
                replan::history::entry::EntryBody::RunFinished { status, .. } => Some(*status),
                _ => None,
            })
            .collect()
    };
    use replan::history::entry::RunStatus::{BudgetExhausted, FannedOut};
    assert_eq!(
        finished(&world),
        [FannedOut, BudgetExhausted, BudgetExhausted]
    );

    // The next run sees the whole wave's spend: past the cap it does not call the model.
    let before = world.llm.requests().len();
    let next = world.run(&world.clone(), &["--stage", "plan"]);
    assert_ok(&next, "the next plan job");
    assert_eq!(world.llm.requests().len(), before, "no model call");
    assert_eq!(finished(&world).last(), Some(&BudgetExhausted));
}

/// Issue 40: a wave of 300 ready subtasks is written as matrices that fit the platforms — at
/// most 200 each (GitHub runs at most 256 jobs of one matrix, GitLab 200 of one
/// `parallel:matrix`) — and the GitLab child pipeline still has a job pair for every one.
#[test]
fn three_hundred_ready_subtasks_are_split_into_matrices_that_fit_the_platforms() {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let tasks: Vec<Task> = (1..=300)
        .map(|i| {
            task(
                leak(format!("task_{i}")),
                &[],
                leak(format!("f{i}.txt")),
                "x\n",
            )
        })
        .collect();
    let world = Fanout::new(&tasks, 1);
    let outputs = world.dir.path().join("github-output.txt");
    let pipeline = world.dir.path().join("child.yml");
    let workspace = world.clone();
    let mut command = world.command(
        &workspace,
        &[
            "--stage",
            "plan",
            "--set",
            "planning.max_subtasks=300",
            "--pipeline-out",
            &pipeline.display().to_string(),
        ],
    );
    command.env("GITHUB_OUTPUT", &outputs);
    let output = command.output().unwrap();
    assert_ok(&output, "plan");
    let written: std::collections::BTreeMap<String, String> =
        replan::actions::outputs::parse(&std::fs::read_to_string(&outputs).unwrap())
            .into_iter()
            .collect();
    let ids = |name: &str| -> Vec<String> {
        let matrix: Value = serde_json::from_str(&written[name]).unwrap();
        serde_json::from_value(matrix["subtask"].clone()).unwrap()
    };
    assert_eq!(written["status"], "fanned_out");
    assert_eq!(written["matrices"], "2", "{written:?}");
    let (first, second) = (ids("matrix"), ids("matrix_2"));
    assert_eq!((first.len(), second.len()), (200, 100));
    assert!(!written.contains_key("matrix_3"));
    let all: Vec<String> = first.into_iter().chain(second).collect();
    let expected: Vec<String> = (1..=300).map(|i| format!("task_{i}")).collect();
    assert_eq!(all, expected, "every ready subtask once, in plan order");
    // GitLab: one agent job per subtask (no `parallel:matrix` at all), then the join.
    let parsed: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&pipeline).unwrap()).unwrap();
    let jobs = parsed.as_object().unwrap();
    let agents = jobs
        .keys()
        .filter(|k| k.starts_with("replan-subtask-"))
        .count();
    assert_eq!(agents, 300);
    assert!(jobs.values().all(|job| job.get("parallel").is_none()));
}
