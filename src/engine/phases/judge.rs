//! Seed 004 task judge after each attempt: DONE, NEEDS_CONTINUATION (bounded), a split of the
//! subtask into smaller ones (`REPLACED_BY_REPLAN`, dependents re-wired, chain limit), or BLOCKED.

use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::evidence::attempt::FailedChecks;
use crate::engine::judge::{JudgeVerdict, apply_split, decide};
use crate::history::entry::{EntryBody, JudgeOutcome};
use crate::plan::{Subtask, TaskState};
use crate::report::Notice;
use schemars::JsonSchema;
use serde::Deserialize;

/// Attempts of one subtask that end in NEEDS_CONTINUATION before it counts as BLOCKED: each is a
/// full tool loop, and a subtask that three loops could not finish needs a split or a person.
pub const MAX_CONTINUATIONS: u32 = 3;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SplitReply {
    pub subtasks: Vec<Subtask>,
    #[serde(default)]
    pub reasoning: String,
}

pub async fn judge_task(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    report: &str,
    given: Option<JudgeVerdict>,
    failed_checks: Option<&FailedChecks>,
    fx: &mut StepEffects,
) -> Result<(), CycleError> {
    let plan = batch.state.plan.clone().unwrap_or_default();
    let task = plan.subtask(task_id).cloned().unwrap_or_default();
    let expected: Vec<String> = plan
        .action_plan
        .actions
        .iter()
        .filter(|a| a.task_id == task_id)
        .map(|a| a.expected_outcome.clone())
        .collect();
    let actions: Vec<String> = batch
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action {
                task_id: t,
                tool,
                outcome,
                summary,
                ..
            } if t == task_id => Some(format!("{tool} → {outcome:?}: {summary}")),
            _ => None,
        })
        .collect();
    let prompt = cx.render(
        "task_judge",
        &[
            ("task_id", task_id),
            ("task_description", &task.description),
            ("expected_outcomes", &context::bullet_list(&expected)),
            ("worker_report", report),
            ("actions", &context::bullet_list(&actions)),
            (
                "attempt",
                &(batch.state.continuations.get(task_id).copied().unwrap_or(0) + 1).to_string(),
            ),
            ("max_attempts", &MAX_CONTINUATIONS.to_string()),
        ],
    )?;
    let asked = match given {
        // Folded: the attempt's final reply carried the verdict.
        Some(v) => Ok(v),
        None => {
            cx.ask::<JudgeVerdict>(batch, &format!("judge.{task_id}"), prompt)
                .await?
        }
    };
    let mut verdict = match asked {
        Ok(v) => v,
        Err(f) => JudgeVerdict {
            success: false,
            should_continue: true,
            should_replan: false,
            reason: format!("the judge reply could not be used: {}", f.error),
            missing_requirements: vec![],
        },
    };
    if let Some(failed) = failed_checks {
        // A failing check is a failed attempt, whatever the judge read into the report: it may
        // continue, replan or block, never call the subtask done.
        if verdict.success {
            verdict.success = false;
            verdict.should_continue = !verdict.should_replan;
        }
        let mut missing = failed.requirements.clone();
        missing.append(&mut verdict.missing_requirements);
        verdict.missing_requirements = missing;
        verdict.reason = format!(
            "{} {}\n{}",
            failed.requirements.join("; "),
            verdict.reason,
            failed.report
        );
    }
    let info = batch
        .state
        .tasks
        .get(task_id)
        .and_then(|t| t.replanning_info.clone());
    let task_cfg = &cx.cfg().replanning;
    let mut outcome = decide(&verdict, info.as_ref(), task_cfg);
    let mut note = verdict.reason.clone();
    if outcome == JudgeOutcome::NeedsContinuation
        && batch.state.continuations.get(task_id).copied().unwrap_or(0) + 1 >= MAX_CONTINUATIONS
    {
        outcome = JudgeOutcome::Blocked;
        note = format!("{note} (still unfinished after {MAX_CONTINUATIONS} attempts)");
    }
    if crate::engine::judge::outcome(&verdict) == JudgeOutcome::Replan
        && outcome == JudgeOutcome::Blocked
    {
        note = format!(
            "{note} (the task's replan chain reached replanning.max_iterations = {})",
            task_cfg.max_iterations
        );
    }
    batch.push(EntryBody::Judge {
        task_id: task_id.to_string(),
        outcome,
        reason: note.clone(),
        missing_requirements: verdict.missing_requirements.clone(),
    });
    let state = match outcome {
        JudgeOutcome::Done => TaskState::Done,
        JudgeOutcome::NeedsContinuation => TaskState::NeedsContinuation,
        JudgeOutcome::Blocked => TaskState::Blocked,
        JudgeOutcome::Replan => {
            match split(cx, batch, task_id, &task, &verdict, report, info.as_ref()).await? {
                Ok(()) => return Ok(()),
                Err(why) => {
                    note = format!("{note}; the split failed: {why}");
                    TaskState::Blocked
                }
            }
        }
    };
    if state == TaskState::Blocked
        && super::alternatives::offer(cx, batch, task_id, &note, fx).await?
    {
        return Ok(());
    }
    set_state(batch, task_id, state, note, fx);
    Ok(())
}

/// The subtask's new state; a blocked one tells people how to go on.
fn set_state(
    batch: &mut Batch,
    task_id: &str,
    state: TaskState,
    note: String,
    fx: &mut StepEffects,
) {
    if state == TaskState::Blocked {
        fx.notices.push(Notice::HumanNeeded {
            reason: format!("Subtask {task_id} is blocked: {note}"),
            recommendations: vec![
                "Comment `/resume` to retry blocked tasks".into(),
                "or `/replan tasks <reason>` to change the plan".into(),
            ],
        });
    }
    batch.push(EntryBody::TaskState {
        task_id: task_id.to_string(),
        state,
        replanning_info: None,
        note: Some(note),
    });
}

/// A subtask that ran beside others and whose changes conflict with those merged before it:
/// the attempt failed (a `merge` action), and a finished subtask runs again on the merged tree
/// while attempts remain, else it is blocked for a person or a replan.
pub fn merge_failed(batch: &mut Batch, task_id: &str, message: &str, fx: &mut StepEffects) {
    batch.push(EntryBody::Action {
        task_id: task_id.to_string(),
        tool: "merge".into(),
        arguments_digest: String::new(),
        outcome: crate::history::entry::ActionOutcome::FAILED,
        summary: message.chars().take(200).collect(),
        duration_ms: 0,
    });
    if batch.state.task_state(task_id) != TaskState::Done {
        return;
    }
    let attempts = batch.state.continuations.get(task_id).copied().unwrap_or(0) + 1;
    let (outcome, state, note) = if attempts >= MAX_CONTINUATIONS {
        let note = format!("{message} (still conflicting after {MAX_CONTINUATIONS} attempts)");
        (JudgeOutcome::Blocked, TaskState::Blocked, note)
    } else {
        let note = format!("{message}; run it again on the merged tree");
        (
            JudgeOutcome::NeedsContinuation,
            TaskState::NeedsContinuation,
            note,
        )
    };
    batch.push(EntryBody::Judge {
        task_id: task_id.to_string(),
        outcome,
        reason: note.clone(),
        missing_requirements: vec![],
    });
    set_state(batch, task_id, state, note, fx);
}

#[allow(clippy::too_many_arguments)]
async fn split(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    task: &Subtask,
    verdict: &JudgeVerdict,
    report: &str,
    info: Option<&crate::plan::ReplanningInfo>,
) -> Result<Result<(), String>, CycleError> {
    let cfg = &cx.cfg().replanning;
    let plan = batch.state.plan.clone().unwrap_or_default();
    let allowed: Vec<&str> = plan.subtask_ids().filter(|id| *id != task_id).collect();
    let prompt = cx.render(
        "task_split",
        &[
            ("task_id", task_id),
            ("task_description", &task.description),
            ("judge_reason", &verdict.reason),
            (
                "missing_requirements",
                &verdict.missing_requirements.join("; "),
            ),
            ("worker_log", report),
            ("available_tools", &context::available_tools(&cx.deps.tools)),
            ("min_tasks", &cfg.min_new_subtasks.to_string()),
            ("max_tasks", &cfg.max_new_subtasks.to_string()),
            ("allowed_dependencies", &json(&allowed)),
        ],
    )?;
    let reply = match cx
        .ask::<SplitReply>(batch, &format!("task_split.{task_id}"), prompt)
        .await?
    {
        Ok(r) => r,
        Err(f) => return Ok(Err(f.error)),
    };
    let result = match apply_split(&plan, task_id, info, reply.subtasks, &verdict.reason, cfg) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let new_subtasks: Vec<Subtask> = result
        .new_task_ids
        .iter()
        .filter_map(|id| result.plan.subtask(id).cloned())
        .collect();
    batch.push(EntryBody::TaskSplit {
        original_task_id: task_id.to_string(),
        new_subtasks,
        updated_action_plan: Some(result.plan.action_plan.clone()),
        replanning_info: result.child_info.clone(),
        updated_plan: Some(Box::new(result.plan.clone())),
    });
    batch.push(EntryBody::TaskState {
        task_id: task_id.to_string(),
        state: TaskState::ReplacedByReplan,
        replanning_info: Some(result.replaced_info.clone()),
        note: Some(verdict.reason.clone()),
    });
    Ok(Ok(()))
}
