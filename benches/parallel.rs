//! `execution.max_parallel` in one run (issue 19): a scripted 4- and 16-subtask plan of
//! independent `sleep 1` commands in a real git workspace, run sequentially (`max_parallel` 1)
//! and with 2, 4 and 8 at a time; wall times and the speed-up over sequential. Then the issue 39
//! case: 4 subtasks under `llm.budget.max_cost_usd` (the budget wrapper around the model, every
//! reply taking 300 ms), sequential and 4 at a time: budgeted calls reserve instead of taking
//! turns, so the parallel run stays under half the sequential time (asserted).
//!
//! `cargo bench --bench parallel`; `REPLAN_BENCH_JSON=FILE` also writes the numbers as JSON.

#[path = "common/quiet.rs"]
mod quiet;

use quiet::Quiet;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use replan::config::Config;
use replan::engine::demo::FirstMatchLlm;
use replan::engine::journal::MemorySink;
use replan::engine::prompts::Prompts;
use replan::engine::{CycleDeps, EngineInput, run_cycle};
use replan::history::SessionState;
use replan::history::entry::{RunRequest, RunStatus};
use replan::llm::{Budgeted, ChatRequest, ChatResponse, Llm, LlmError};
use replan::tools::registry_builder::{ToolContext, build_registry};
use replan::tools::workspace::Workspace;
use serde_json::{Map, Value, json};

const SIZES: [usize; 2] = [4, 16];
const PARALLEL: [u32; 4] = [1, 2, 4, 8];

/// Folded replies: the plan carries its decision and quality, the report its verdict.
fn scenario(subtasks: usize) -> String {
    let tasks: Vec<Value> = (1..=subtasks)
        .map(|i| {
            json!({"id": format!("task_{i}"), "description": format!("Part {i}"),
            "dependencies": [], "estimated_complexity": "low", "required_tools": ["run_command"]})
        })
        .collect();
    let actions: Vec<Value> = (1..=subtasks)
        .map(|i| {
            json!({"task_id": format!("task_{i}"), "action_type": "tool_call",
            "tool": "run_command", "purpose": "wait", "expected_outcome": "done"})
        })
        .collect();
    let no_replan = json!({"replan_needed": false, "confidence": 0.9, "reasoning": "fine",
        "replan_type": "none", "issues_found": [], "recommended_actions": [],
        "clarification_needed": false, "clarification_questions": []});
    let plan = json!({"phase": "planning",
        "goal_understanding": {"main_objective": "Wait in parallel", "success_criteria": ["all waited"], "constraints": []},
        "task_decomposition": {"reasoning": "independent", "subtasks": tasks},
        "action_plan": {"execution_order": (1..=subtasks).map(|i| format!("task_{i}")).collect::<Vec<_>>(), "actions": actions},
        "self_check": {"goal_understanding": {"ok": true, "notes": ""}, "task_decomposition": {"ok": true, "notes": ""}, "action_plan": {"ok": true, "notes": ""}},
        "comment": "Plan completed.", "replan_decision": no_replan,
        "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}});
    let report = json!({"report": "Waited.", "replan_decision": no_replan,
        "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
        "reflection": {"action_evaluated": "wait", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}});
    let completion = json!({"phase": "completion", "summary": {"goal_achieved": true,
        "tasks_completed": subtasks, "tasks_failed": 0, "key_outcomes": ["waited"]}, "done": true,
        "comment": "All tasks completed"});
    let steps = json!({"mode": "matched", "steps": [
        {"when": {"purpose": "planning"}, "reply": plan.to_string()},
        {"when": {"purpose": "quality_judge"}, "reply": json!({"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}).to_string()},
        {"when": {"purpose": "replan_decision"}, "reply": json!({"replan_decision": no_replan}).to_string()},
        {"when": {"purpose": "execute", "contains": "exited with status 0"}, "reply": report.to_string()},
        {"when": {"purpose": "execute"}, "tool_calls": [{"name": "run_command", "arguments": {"argv": ["sleep", "1"]}}]},
        {"when": {"purpose": "judge"}, "reply": json!({"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}).to_string()},
        {"when": {"purpose": "completion"}, "reply": completion.to_string()},
    ]});
    // JSON is YAML.
    steps.to_string()
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A model whose every reply takes `delay`, as a real one's generation does.
struct Slow {
    inner: FirstMatchLlm,
    delay: std::time::Duration,
}

#[async_trait::async_trait]
impl Llm for Slow {
    fn describe(&self) -> String {
        "slow scripted".into()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        tokio::time::sleep(self.delay).await;
        self.inner.chat(request).await
    }
}

/// The model of a run: the scripted replies, or (`budgeted`) the same replies taking 300 ms
/// each inside the budget wrapper with a cost limit no run reaches.
fn model(subtasks: usize, budgeted: bool, config: &mut Config) -> Arc<dyn Llm> {
    let replies = FirstMatchLlm::new(&scenario(subtasks)).expect("scenario");
    if !budgeted {
        return Arc::new(replies);
    }
    config.llm.model = Some("scripted".into());
    config.llm.budget.max_cost_usd = Some(100.0);
    config.llm.prices.insert(
        "scripted".into(),
        replan::config::Price {
            input_per_mtok: 2.5,
            output_per_mtok: 10.0,
        },
    );
    let slow = Slow {
        inner: replies,
        delay: std::time::Duration::from_millis(300),
    };
    Arc::new(Budgeted::new(Box::new(slow), &config.llm))
}

/// Seconds one whole cycle over `subtasks` sleeps takes with `max_parallel`.
async fn one_run(subtasks: usize, max_parallel: u32) -> f64 {
    run_with(subtasks, max_parallel, false).await
}

async fn run_with(subtasks: usize, max_parallel: u32, budgeted: bool) -> f64 {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("README.md"), "# bench\n").expect("README");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    // Subtasks run side by side only in a checkout Replan adopted (its private git directory
    // holds their worktrees), as `replan run` adopts the workspace before the cycle.
    let private = tempfile::TempDir::new().expect("private dir");
    let private_path = private.path().to_string_lossy().into_owned();
    let env = |name: &str| (name == "REPLAN_PRIVATE_DIR").then(|| private_path.clone());
    let _adopted = replan::git::adopt(root, &env, &[]).expect("adopt the workspace");
    let mut config = Config::default();
    config.execution.max_parallel = max_parallel;
    config.tools.allowed_commands = vec!["sleep 1".into()];
    let workspace = Workspace::new(root).expect("workspace");
    let tools = build_registry(ToolContext::new(workspace.clone(), config.tools.clone())).await;
    let llm = model(subtasks, budgeted, &mut config);
    let deps = CycleDeps {
        llm,
        tools: tools.registry,
        reporter: Arc::new(Quiet),
        store: Arc::new(MemorySink::default()),
        config,
        clock: Arc::new(chrono::Utc::now),
        run_id: "bench-parallel-1".into(),
        prompts: Prompts::built_in(),
        request: RunRequest {
            event: "bench".into(),
            actor: "octocat".into(),
            request: "start".into(),
            title: Some("Wait".into()),
            text: Some("Wait in parallel.".into()),
            run_url: None,
        },
        workspace: Some(workspace),
        scope: replan::engine::Scope::Whole,
    };
    let input = EngineInput::Start {
        title: "Wait".into(),
        body: "Wait in parallel.".into(),
        author: "octocat".into(),
    };
    let started = Instant::now();
    let outcome = run_cycle(&deps, SessionState::default(), &input)
        .await
        .expect("cycle");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(outcome.tasks_done, subtasks);
    seconds
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut json = Map::new();
    println!("| subtasks | max_parallel | wall s | speed-up over sequential |");
    println!("|---|---|---|---|");
    for subtasks in SIZES {
        let mut sequential = 0.0;
        for max_parallel in PARALLEL {
            let seconds = runtime.block_on(one_run(subtasks, max_parallel));
            if max_parallel == 1 {
                sequential = seconds;
            }
            let ratio = sequential / seconds;
            println!("| {subtasks} | {max_parallel} | {seconds:.2} | {ratio:.2}× |");
            json.insert(
                format!("parallel{subtasks}_max{max_parallel}_s"),
                json!((seconds * 100.0).round() / 100.0),
            );
            json.insert(
                format!("parallel{subtasks}_max{max_parallel}_speedup"),
                json!((ratio * 100.0).round() / 100.0),
            );
        }
    }
    // Issue 39: the same 4 subtasks under a cost limit, the model's replies taking 300 ms.
    let sequential = runtime.block_on(run_with(4, 1, true));
    let parallel = runtime.block_on(run_with(4, 4, true));
    let share = parallel / sequential;
    println!(
        "\nbudgeted (llm.budget.max_cost_usd, 300 ms replies), 4 subtasks: sequential {sequential:.2} s, max_parallel 4 {parallel:.2} s ({share:.2}× sequential)"
    );
    json.insert(
        "parallel4_budgeted_max1_s".into(),
        json!((sequential * 100.0).round() / 100.0),
    );
    json.insert(
        "parallel4_budgeted_max4_s".into(),
        json!((parallel * 100.0).round() / 100.0),
    );
    assert!(
        share < 0.5,
        "under a budget 4 parallel subtasks took {share:.2}× the sequential time: budgeted calls are taking turns"
    );
    let text = Value::Object(json).to_string();
    eprintln!("bench JSON: {text}");
    if let Some(path) = std::env::var_os("REPLAN_BENCH_JSON") {
        std::fs::write(&path, format!("{text}\n"))
            .unwrap_or_else(|e| panic!("error: cannot write REPLAN_BENCH_JSON file: {e}"));
    }
}
