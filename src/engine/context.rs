//! Text the prompts are built from, derived from the replayed state (so a resumed cycle sends the
//! same prompts as an uninterrupted one).

use crate::config::{Config, DecompositionLevel, Strategy};
use crate::history::SessionState;
use crate::plan::{Plan, TaskState};
use crate::tools::ToolRegistry;

/// The request that drives the thread: the latest run that carried a title (the issue), plus any
/// later comments. The trigger sanitized the text (`trigger::sanitize_untrusted`) before it was
/// recorded.
pub fn task_request(state: &SessionState) -> String {
    let Some(start) = state.runs.iter().rposition(|r| r.request.title.is_some()) else {
        return state
            .runs
            .last()
            .and_then(|r| r.request.text.clone())
            .unwrap_or_else(|| "(no request text)".to_string());
    };
    let issue = &state.runs[start].request;
    let mut out = format!(
        "Title: {}\n\n{}",
        issue.title.as_deref().unwrap_or_default(),
        issue.text.as_deref().unwrap_or_default()
    );
    for later in &state.runs[start + 1..] {
        if let Some(text) = &later.request.text {
            out.push_str(&format!(
                "\n\nLater comment by @{} ({}):\n{}",
                later.request.actor, later.request.request, text
            ));
        }
    }
    out
}

/// Seed 001 §2.1: earlier plans and runs of the same thread, for continuity.
pub fn past_history(state: &SessionState) -> String {
    let mut out = String::new();
    let earlier_runs = state.runs.len().saturating_sub(1);
    for run in &state.runs[..earlier_runs] {
        out.push_str(&format!(
            "- run {} ({} by @{}): {}\n",
            run.run_id,
            run.request.request,
            run.request.actor,
            run.status
                .map(|s| format!("{s:?}"))
                .unwrap_or_else(|| "did not finish".into())
        ));
    }
    for snap in &state.plan_history {
        out.push_str(&format!(
            "- plan v{}: {}{}\n",
            snap.version,
            snap.plan.goal_understanding.main_objective,
            snap.reason
                .as_ref()
                .map(|r| format!(" (replanned: {r})"))
                .unwrap_or_default()
        ));
        let states = if snap.final_tasks.is_empty() {
            state
                .tasks
                .iter()
                .map(|(k, v)| (k.clone(), v.state))
                .collect()
        } else {
            snap.final_tasks.clone()
        };
        for t in &snap.plan.task_decomposition.subtasks {
            out.push_str(&format!(
                "  - [{}] {}: {}\n",
                state_label(states.get(&t.id).copied().unwrap_or_default()),
                t.id,
                t.description
            ));
        }
    }
    if let Some(c) = &state.completion {
        out.push_str(&format!(
            "- last completion: goal achieved = {}, {}\n",
            c.summary.goal_achieved,
            c.summary.key_outcomes.join("; ")
        ));
    }
    if out.is_empty() {
        "(none: this is the first run on this thread)".to_string()
    } else {
        out
    }
}

pub fn state_label(s: TaskState) -> &'static str {
    match s {
        TaskState::Done => "x",
        TaskState::Blocked => "blocked",
        TaskState::ReplacedByReplan => "replaced",
        TaskState::Cancelled => "cancelled",
        TaskState::NeedsContinuation => "continuing",
        TaskState::Running => "running",
        TaskState::Ready => " ",
    }
}

/// The tool named in prompt examples: `read_file` when there is one, else the first tool.
pub fn example_tool(tools: &ToolRegistry) -> String {
    if tools.contains("read_file") {
        return "read_file".into();
    }
    tools.names().next().unwrap_or("read_file").to_string()
}

pub fn available_tools(tools: &ToolRegistry) -> String {
    let specs = tools.specs();
    if specs.is_empty() {
        return "(no tools)".to_string();
    }
    specs
        .iter()
        .map(|t| format!("- {}: {}", t.name, t.description))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names of the run's checks (none without a checkout or with `verify: []`).
pub fn check_names(tools: &ToolRegistry) -> Vec<String> {
    tools
        .checks()
        .map(|runner| runner.checks().iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}

/// What the planner is told about the checks, after the tools: their names, and that each success
/// criterion maps to one or to `manual`. Empty without checks (the prompt stays as it was).
pub fn checks_for_planning(tools: &ToolRegistry) -> String {
    let names = check_names(tools);
    if names.is_empty() {
        return String::new();
    }
    format!(
        "\n\n**Checks** (Replan runs them to prove the work): {}. In `goal_understanding`, map \
         every success criterion to the check that proves it or to `manual`: \
         \"criteria_evidence\": [{{\"criterion\": \"<a success criterion>\", \"evidence\": \"{}\", \
         \"reason\": \"\"}}, {{\"criterion\": \"...\", \"evidence\": \"manual\", \"reason\": \"why a \
         person must judge it\"}}]",
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        names[0]
    )
}

/// Every tool the plan names (required by a subtask or used by an action), sorted, once each.
pub fn tools_named_by(plan: &Plan) -> Vec<&str> {
    let mut names: Vec<&str> = plan
        .task_decomposition
        .subtasks
        .iter()
        .flat_map(|t| t.required_tools.iter().map(String::as_str))
        .chain(
            plan.action_plan
                .actions
                .iter()
                .filter_map(|a| a.tool.as_deref()),
        )
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Seed 000 §6.2 "Available Tools and Their Status": required tools of the draft against the
/// registry.
pub fn tool_availability(plan: &Plan, tools: &ToolRegistry) -> String {
    let names = tools_named_by(plan);
    let mut out = available_tools(tools);
    for n in names {
        let status = if tools.contains(n) {
            "available"
        } else {
            "NOT AVAILABLE"
        };
        out.push_str(&format!("\n- required `{n}`: {status}"));
    }
    out
}

/// The plan as one line per subtask, in execution order and without states, so the text stays
/// byte-identical while the plan does (the cached prefix of every execute turn).
pub fn compact_plan(plan: &Plan) -> String {
    let lines: Vec<String> = super::step::ordered_subtasks(plan)
        .into_iter()
        .map(|t| {
            let deps = if t.dependencies.is_empty() {
                String::new()
            } else {
                format!(" (after {})", t.dependencies.join(", "))
            };
            format!("{}: {}{deps}", t.id, t.description)
        })
        .collect();
    bullet_list(&lines)
}

/// Each subtask as `[state] id: description`, in plan order (the completion summary and the
/// final review).
pub fn task_states(plan: &Plan, state: &SessionState) -> Vec<String> {
    plan.task_decomposition
        .subtasks
        .iter()
        .map(|t| {
            let label = state_label(state.task_state(&t.id));
            format!("[{label}] {}: {}", t.id, t.description)
        })
        .collect()
}

/// The plan with each subtask's state, for the decisions that weigh progress (reflection).
pub fn plan_with_states(plan: &Plan, state: &SessionState) -> String {
    let lines: Vec<String> = super::step::ordered_subtasks(plan)
        .into_iter()
        .map(|t| {
            let actions: Vec<String> = plan
                .action_plan
                .actions
                .iter()
                .filter(|a| a.task_id == t.id)
                .map(|a| {
                    format!(
                        "{} {} → {}",
                        a.tool.as_deref().unwrap_or(a.action_type.as_str()),
                        a.purpose,
                        a.expected_outcome
                    )
                })
                .collect();
            format!(
                "[{}] {}: {} ({})",
                state_label(state.task_state(&t.id)),
                t.id,
                t.description,
                actions.join("; ")
            )
        })
        .collect();
    bullet_list(&lines)
}

/// Compact JSON: indentation would cost a third more tokens on every call that quotes a plan.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

pub fn bullet_list(items: &[String]) -> String {
    if items.is_empty() {
        return "(none)".to_string();
    }
    items
        .iter()
        .map(|i| format!("- {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn strategy_name(cfg: &Config) -> &'static str {
    match cfg.planning.strategy {
        Strategy::ChainOfThought => "Chain-of-Thought",
        Strategy::Hierarchical => "Hierarchical Task Network",
        Strategy::Simple => "Simple",
    }
}

pub fn strategy_instructions(cfg: &Config) -> &'static str {
    match cfg.planning.strategy {
        Strategy::ChainOfThought => {
            "- Develop thought process step by step\n- Break down complex tasks into executable units\n- Analyze dependencies between subtasks\n- Evaluate complexity of each subtask"
        }
        Strategy::Hierarchical => {
            "- Build a hierarchy: split the goal into a few high-level tasks, then each into executable subtasks\n- Express the hierarchy through dependencies and ids (task_1, task_1_1, ...)\n- Analyze dependencies between subtasks\n- Evaluate complexity of each subtask"
        }
        Strategy::Simple => {
            "- List the direct steps needed, in order\n- Keep the reasoning short\n- Add dependencies only where a step needs another's result"
        }
    }
}

pub fn decomposition_instructions(cfg: &Config) -> &'static str {
    match cfg.planning.decomposition_level {
        DecompositionLevel::Detailed => {
            "Decompose into fine-grained subtasks, each small enough for one or two tool calls"
        }
        DecompositionLevel::Moderate => {
            "Decompose into subtasks of a few tool calls each, one concern per subtask"
        }
        DecompositionLevel::Minimal => {
            "Use as few subtasks as possible; only split where the work truly has separate steps"
        }
    }
}

/// The system prompt: short and the same for every call of a thread, so it heads every cached
/// prefix. The planning process lives in `planning_rules`, sent with the planning calls only.
/// The repository's instructions for the whole repository end it (the same for every call too).
pub fn system_prompt(
    prompts: &super::prompts::Prompts,
    cfg: &Config,
) -> Result<String, super::prompts::PromptError> {
    let mut system = with_strategy(prompts, "system", cfg)?;
    system.push_str(&prompts.instructions().system_block());
    Ok(system)
}

/// Seed 001's planning process with the configured strategy and limits.
pub fn planning_rules(
    prompts: &super::prompts::Prompts,
    cfg: &Config,
) -> Result<String, super::prompts::PromptError> {
    with_strategy(prompts, "planning_rules", cfg)
}

/// Renders `name` with the strategy values (an override of either template may use them).
fn with_strategy(
    prompts: &super::prompts::Prompts,
    name: &str,
    cfg: &Config,
) -> Result<String, super::prompts::PromptError> {
    let max = cfg.planning.max_subtasks.to_string();
    let interval = cfg.planning.reflection.trigger_interval.to_string();
    prompts.render(
        name,
        &[
            ("strategy_name", strategy_name(cfg)),
            ("strategy_instructions", strategy_instructions(cfg)),
            (
                "decomposition_instructions",
                decomposition_instructions(cfg),
            ),
            ("max_subtasks", &max),
            ("reflection_interval", &interval),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prompts::Prompts;

    #[test]
    fn strategy_and_decomposition_level_change_the_planning_instructions() {
        let mut cfg = Config::default();
        let cot = planning_rules(&Prompts::built_in(), &cfg).unwrap();
        assert!(cot.contains("Task Decomposition (Chain-of-Thought)"));
        assert!(cot.contains("Develop thought process step by step"));
        cfg.planning.strategy = Strategy::Hierarchical;
        cfg.planning.decomposition_level = DecompositionLevel::Minimal;
        cfg.planning.max_subtasks = 7;
        let h = planning_rules(&Prompts::built_in(), &cfg).unwrap();
        assert!(h.contains("Hierarchical Task Network") && h.contains("Build a hierarchy"));
        assert!(h.contains("as few subtasks as possible") && h.contains("At most 7 subtasks"));
        cfg.planning.strategy = Strategy::Simple;
        cfg.planning.decomposition_level = DecompositionLevel::Detailed;
        let s = planning_rules(&Prompts::built_in(), &cfg).unwrap();
        assert!(s.contains("List the direct steps") && s.contains("fine-grained"));
    }
}
