//! The scripted model for a cycle whose plan has N subtasks, each writing one file.
//!
//! The steps follow the phrases of `tests/scenarios/github_e2e_base.yaml` (the prompts under
//! `prompts/`); the order matters because later prompts quote earlier ones. Replies carry the
//! folded decisions (issue 15) and still parse as the separate calls' replies.

use std::sync::Arc;

use replan::llm::scenario::{Scenario, ScenarioMode, ScriptedToolCall, Step, When};
use serde_json::{Value, json};

use crate::llm::Dynamic;

/// The planning reply: a chain task_1 → … → task_n, one `write_file` action each.
pub fn plan_json(n: usize) -> Value {
    plan_of_chains(n, 1)
}

/// The planning reply for `chains` independent chains of `n / chains` subtasks each: task_i
/// needs task_{i - chains} (chain c holds task_c, task_{c + chains}, ...).
pub fn plan_of_chains(n: usize, chains: usize) -> Value {
    let subtasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<String> = if i > chains {
                vec![format!("task_{}", i - chains)]
            } else {
                vec![]
            };
            json!({"id": format!("task_{i}"),
                   "description": format!("Write notes/task_{i}.md with the findings of step {i}"),
                   "dependencies": deps, "estimated_complexity": "low",
                   "required_tools": ["write_file"]})
        })
        .collect();
    let actions: Vec<Value> = (1..=n)
        .map(|i| {
            json!({"task_id": format!("task_{i}"), "action_type": "tool_call",
                   "tool": "write_file", "purpose": format!("write notes/task_{i}.md"),
                   "expected_outcome": "file written"})
        })
        .collect();
    let order: Vec<String> = (1..=n).map(|i| format!("task_{i}")).collect();
    json!({
        "phase": "planning",
        "goal_understanding": {"main_objective": "Write the notes, one file per step",
            "success_criteria": ["every notes file exists"], "constraints": []},
        "task_decomposition": {"reasoning": "one file per step, in order", "subtasks": subtasks},
        "action_plan": {"execution_order": order, "actions": actions},
        "self_check": {"goal_understanding": {"ok": true, "notes": "clear"},
            "task_decomposition": {"ok": true, "notes": "ids unique"},
            "action_plan": {"ok": true, "notes": "tools exist"}},
        "comment": "Plan completed. Starting execution.",
        // Folded decisions (issue 15): the decision on the plan and the quality self-check.
        "replan_decision": no_replan(),
        "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}
    })
}

fn no_replan() -> Value {
    json!({"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none",
           "issues_found": [], "recommended_actions": [], "clarification_needed": false,
           "clarification_questions": []})
}

/// The final reply of an attempt with folded decisions: report, the decision on the last tool
/// result, the judge's verdict, and a reflection for when one is due.
fn folded_final() -> String {
    json!({
        "report": "Wrote the file.",
        "replan_decision": no_replan(),
        "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false,
                    "reason": "done", "missingRequirements": []},
        "reflection": {"action_evaluated": "write_file", "status": "success",
                       "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}
    })
    .to_string()
}

fn step(contains: &str, reply: String) -> Step {
    Step {
        when: Some(When {
            purpose: None,
            contains: Some(contains.to_owned()),
        }),
        reply: Some(reply),
        ..Step::default()
    }
}

pub fn cycle_scenario(n: usize) -> Scenario {
    chains_scenario(n, 1)
}

/// The scripted model of `chains` independent chains over `n` subtasks.
pub fn chains_scenario(n: usize, chains: usize) -> Scenario {
    scenario_of(plan_of_chains(n, chains), n)
}

/// The 20-subtask cycle's model when the repository has the `each_task` check `check` (issue
/// 37): the plan maps its success criterion to that check, as the planning prompt asks.
pub fn checked_cycle_scenario(n: usize, check: &str) -> Scenario {
    let mut plan = plan_json(n);
    plan["goal_understanding"]["criteria_evidence"] =
        json!([{"criterion": "every notes file exists", "evidence": check, "reason": ""}]);
    scenario_of(plan, n)
}

/// The steps that answer every call of a cycle whose planning reply is `plan` (`n` subtasks).
fn scenario_of(plan: Value, n: usize) -> Scenario {
    let plan = plan.to_string();
    let steps = vec![
        step("Produce the planning phases", plan.clone()),
        // Before the decision step: execute turns quote the decision format too.
        step("created `notes/", folded_final()),
        step("Perform the planning phase", plan),
        step(
            "strict reviewer of execution plans",
            r#"{"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}"#.into(),
        ),
        step(
            "Judge whether subtask",
            r#"{"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []}"#.into(),
        ),
        step(
            "Reflect on the execution so far",
            r#"{"phase": "reflection", "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}"#.into(),
        ),
        step(
            "The plan has finished",
            format!(
                r#"{{"phase": "completion", "summary": {{"goal_achieved": true, "tasks_completed": {n}, "tasks_failed": 0, "key_outcomes": ["notes written"]}}, "done": true, "comment": "All tasks completed"}}"#
            ),
        ),
    ];
    Scenario {
        mode: ScenarioMode::Matched,
        steps,
    }
}

/// "Execute subtask `task_k`" → a `write_file` call for that subtask's file; any other prompt
/// that asks for a replan decision → no replan. Execute turns quote the decision format when
/// decisions are folded, so the subtask comes first.
pub fn execute_step() -> Dynamic {
    Arc::new(|texts: &[String]| {
        const MARK: &str = "Execute subtask `";
        let Some(text) = texts.iter().find(|t| t.contains(MARK)) else {
            return texts
                .iter()
                .any(|t| t.contains("\"replan_decision\""))
                .then(|| Step {
                    reply: Some(json!({"replan_decision": no_replan()}).to_string()),
                    ..Step::default()
                });
        };
        let rest = &text[text.find(MARK)? + MARK.len()..];
        let id = &rest[..rest.find('`')?];
        Some(Step {
            tool_calls: vec![ScriptedToolCall {
                name: "write_file".into(),
                arguments: json!({"path": format!("notes/{id}.md"), "content": format!("# {id}\n\ndone\n")}),
            }],
            ..Step::default()
        })
    })
}

/// The scripted model of the synthetic `n`-subtask cycle, answering each request after
/// `latency` (zero: at once).
pub fn cycle_llm(n: usize, latency: std::time::Duration) -> crate::llm::ScriptedLlm {
    crate::llm::ScriptedLlm::answering_after(latency, cycle_scenario(n), Some(execute_step()))
}

/// [`cycle_llm`] for a repository whose `verify` has the `each_task` check `check`.
pub fn checked_cycle_llm(
    n: usize,
    check: &str,
    latency: std::time::Duration,
) -> crate::llm::ScriptedLlm {
    crate::llm::ScriptedLlm::answering_after(
        latency,
        checked_cycle_scenario(n, check),
        Some(execute_step()),
    )
}

/// The scripted model of `chains` independent chains over `n` subtasks, answering every call
/// `latency` after it arrived, calls made together waiting together.
pub fn chains_llm(
    n: usize,
    chains: usize,
    latency: std::time::Duration,
) -> crate::llm::ScriptedLlm {
    crate::llm::ScriptedLlm::answering_concurrently_after(
        latency,
        chains_scenario(n, chains),
        Some(execute_step()),
    )
}
