//! Seed 003 alternatives for a blocked subtask: the model proposes ways around, they are ranked by
//! the confidence score (model 40 %, past success 30 %, tools 20 %, complexity 10 %), and the best
//! replaces the task — at once when its score reaches `alternatives_approval_threshold`, after a
//! person's `/approve` below it. The replacement counts along the task's replan chain.

use crate::engine::batch::Batch;
use crate::engine::context;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::judge::{
    Alternative, ChainCheck, check_chain, needs_approval, past_success_rate, rank,
};
use crate::history::entry::EntryBody;
use crate::plan::{Plan, ReplanningInfo, Subtask, TaskState};
use crate::report::Notice;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AlternativesReply {
    #[serde(default)]
    pub alternatives: Vec<Alternative>,
}

/// Try alternatives for `task_id`, which the caller is about to mark BLOCKED. Returns true when an
/// alternative replaced it or waits for approval (the caller then records nothing more).
pub async fn offer(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    reason: &str,
    fx: &mut StepEffects,
) -> Result<bool, CycleError> {
    let cfg = &cx.cfg().replanning;
    let info = batch
        .state
        .tasks
        .get(task_id)
        .and_then(|t| t.replanning_info.clone());
    let ChainCheck::Allowed { next_iteration } = check_chain(info.as_ref(), cfg) else {
        return Ok(false);
    };
    if !cfg.enabled {
        return Ok(false);
    }
    let plan = batch.state.plan.clone().unwrap_or_default();
    let Some(task) = plan.subtask(task_id).cloned() else {
        return Ok(false);
    };
    let prompt = cx.render(
        "task_alternatives",
        &[
            ("task_id", task_id),
            ("task_description", &task.description),
            ("reason", reason),
            ("goal", &plan.goal_understanding.main_objective),
            ("available_tools", &context::available_tools(&cx.deps.tools)),
        ],
    )?;
    let reply = match cx
        .ask::<AlternativesReply>(batch, &format!("alternatives.{task_id}"), prompt)
        .await?
    {
        Ok(r) => r,
        Err(f) => {
            tracing::warn!(error = %f.error, "alternatives reply unusable; the task stays blocked");
            return Ok(false);
        }
    };
    let history = [batch.state.clone()];
    let ranked = rank(
        reply.alternatives,
        |a| past_success_rate(&history, &a.description),
        |t| cx.deps.tools.contains(t),
    );
    let Some(best) = ranked.into_iter().next() else {
        return Ok(false);
    };
    let root = info
        .as_ref()
        .and_then(|i| i.original_task_id.clone())
        .unwrap_or_else(|| task_id.to_string());
    let new_id = unique_id(&plan, &format!("{task_id}_alt"));
    let alt_task = Subtask {
        id: new_id.clone(),
        description: best.alternative.description.clone(),
        dependencies: task.dependencies.clone(),
        estimated_complexity: best.alternative.complexity,
        required_tools: best.alternative.required_tools.clone(),
    };
    let child_info = ReplanningInfo {
        iteration: next_iteration,
        max_iterations: cfg.max_iterations,
        original_task_id: Some(root),
        replaced_by: vec![],
        replan_reason: Some(format!("alternative: {}", best.alternative.approach)),
    };
    let split = EntryBody::TaskSplit {
        original_task_id: task_id.to_string(),
        new_subtasks: vec![alt_task.clone()],
        updated_action_plan: None,
        replanning_info: child_info,
        updated_plan: Some(Box::new(replace_task(&plan, task_id, alt_task))),
    };
    let replaced = EntryBody::TaskState {
        task_id: task_id.to_string(),
        state: TaskState::ReplacedByReplan,
        replanning_info: Some(ReplanningInfo {
            iteration: info.as_ref().map_or(0, |i| i.iteration),
            max_iterations: cfg.max_iterations,
            original_task_id: info.as_ref().and_then(|i| i.original_task_id.clone()),
            replaced_by: vec![new_id.clone()],
            replan_reason: Some(reason.to_string()),
        }),
        note: Some(format!(
            "replaced by alternative {new_id} (score {:.2})",
            best.score.total
        )),
    };
    let summary = format!(
        "Subtask {task_id} is blocked ({reason}). Best alternative (score {:.2}: model {:.2}, past success {:.2}, tools {:.2}, complexity {:.2}): {}",
        best.score.total,
        best.score.llm,
        best.score.past_success,
        best.score.tools,
        best.score.complexity,
        best.alternative.description
    );
    if needs_approval(best.score.total, cfg.alternatives_approval_threshold) {
        batch.push(EntryBody::TaskState {
            task_id: task_id.to_string(),
            state: TaskState::Blocked,
            replanning_info: None,
            note: Some(reason.to_string()),
        });
        let request_id = format!("alternative-{new_id}");
        batch.push(EntryBody::Approval {
            request_id,
            decision: None,
            author: None,
            reason: None,
            subject: serde_json::json!({
                "kind": "alternative",
                "task_id": task_id,
                "score": best.score.total,
                "summary": summary,
                "entries": [split, replaced],
            }),
        });
        fx.notices.push(Notice::ApprovalRequest {
            summary,
            confidence: best.score.total,
        });
    } else {
        batch.push(split);
        batch.push(replaced);
        fx.notices.push(Notice::Info { text: summary });
    }
    Ok(true)
}

fn unique_id(plan: &Plan, base: &str) -> String {
    (1..)
        .map(|n| format!("{base}{n}"))
        .find(|id| plan.subtask(id).is_none())
        .expect("an unused id")
}

/// The plan with `task_id` replaced by `alt`: same place, same dependencies, dependents re-wired.
fn replace_task(plan: &Plan, task_id: &str, alt: Subtask) -> Plan {
    let mut out = plan.clone();
    let subtasks = &mut out.task_decomposition.subtasks;
    for t in subtasks.iter_mut() {
        for d in t.dependencies.iter_mut() {
            if d == task_id {
                *d = alt.id.clone();
            }
        }
    }
    if let Some(i) = subtasks.iter().position(|t| t.id == task_id) {
        subtasks[i] = alt.clone();
    }
    for id in out.action_plan.execution_order.iter_mut() {
        if id == task_id {
            *id = alt.id.clone();
        }
    }
    for a in out.action_plan.actions.iter_mut() {
        if a.task_id == task_id {
            a.task_id = alt.id.clone();
            a.tool = alt.required_tools.first().cloned().or(a.tool.take());
        }
    }
    out
}
