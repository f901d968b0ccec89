//! Phase 5 (seed 001 §2.5, seed 000 §8): reflection during execution (on errors and every
//! `trigger_interval` actions) and the monitoring decision once every task is finished.

use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::decide::{DecisionAsk, DecisionOutcome, decide, decision_format};
use crate::engine::phases::complete::human_needed;
use crate::engine::replan::carry_over_from_state;
use crate::history::entry::{EntryBody, RunStatus};
use crate::plan::{
    Phase, Plan, Reflection, ReflectionResponse, ReflectionStatus, ReplanTrigger, ReplanType,
    TaskState,
};
use crate::report::Notice;
use schemars::JsonSchema;
use serde::Deserialize;

/// The reflection reply as asked: the revision's schema is only named (the prompt shows it), so
/// the reflection call stays under its 500-token budget (seed 001 §13.4).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct ReflectionReply {
    reflection: Reflection,
    #[serde(default)]
    #[schemars(schema_with = "crate::engine::folded::any_object")]
    plan_revision: Option<crate::plan::PlanRevision>,
}

pub enum ReflectEnd {
    Continue,
    /// A `revision` made a new plan current.
    Revised,
    /// Error level 3: the revision limit was reached.
    HumanNeeded,
}

pub async fn reflect(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    reason: &str,
    given: Option<ReflectionResponse>,
    fx: &mut StepEffects,
) -> Result<ReflectEnd, CycleError> {
    let plan = batch.state.plan.clone().unwrap_or_default();
    let recent: Vec<String> = batch
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action {
                task_id,
                tool,
                outcome,
                summary,
                ..
            } => Some(format!("{task_id}: {tool} → {outcome:?}: {summary}")),
            _ => None,
        })
        .collect();
    let prompt = cx.render(
        "reflection",
        &[
            ("reason", reason),
            ("plan", &context::plan_with_states(&plan, &batch.state)),
            ("recent_actions", &context::bullet_list(&recent)),
        ],
    )?;
    let asked = match given {
        // Folded: the turn after the action carried the reflection.
        Some(r) => Ok(r),
        None => cx
            .ask::<ReflectionReply>(batch, &format!("reflection.{task_id}"), prompt)
            .await?
            .map(|r| ReflectionResponse {
                phase: "reflection".into(),
                reflection: r.reflection,
                plan_revision: r.plan_revision,
                comment: None,
            }),
    };
    let reply = match asked {
        Ok(r) => r,
        Err(f) => {
            // Error level 2: a failed reflection is logged and execution goes on.
            tracing::warn!(error = %f.error, "reflection failed; continuing execution");
            batch.push(EntryBody::Reflection {
                reflection: Reflection {
                    action_id: task_id.to_string(),
                    status: ReflectionStatus::Partial,
                    evaluation: format!("reflection unavailable: {}", f.error),
                    alignment_with_plan: None,
                    issues_identified: vec![],
                    plan_revision_needed: false,
                },
                plan_revision: None,
            });
            return Ok(ReflectEnd::Continue);
        }
    };
    batch.push(EntryBody::Reflection {
        reflection: reply.reflection.clone(),
        plan_revision: reply.plan_revision.clone(),
    });
    let Some(revision) = reply
        .plan_revision
        .filter(|_| reply.reflection.plan_revision_needed)
    else {
        return Ok(ReflectEnd::Continue);
    };
    let Some(updated) = revision.updated_action_plan.clone() else {
        return Ok(ReflectEnd::Continue);
    };
    let max = cx.cfg().planning.revision.max_revisions;
    if batch.state.reflection_revisions >= max {
        human_needed(
            batch,
            &format!(
                "the plan revision limit was reached (planning.revision.max_revisions = {max})"
            ),
            reply.reflection.issues_identified.clone(),
            &mut fx.notices,
        );
        return Ok(ReflectEnd::HumanNeeded);
    }
    let new_plan = Plan {
        action_plan: updated,
        ..Plan::clone(&plan)
    };
    let problems = super::planning::validation_problems(cx, &new_plan);
    if !problems.is_empty() {
        tracing::warn!(
            ?problems,
            "reflection proposed an invalid revision; keeping the plan"
        );
        return Ok(ReflectEnd::Continue);
    }
    let carried = carry_over_from_state(&batch.state, &new_plan, ReplanType::PlanRevision);
    let previous = batch.state.plan_version;
    let trigger = if reply.reflection.status == ReflectionStatus::Failure {
        ReplanTrigger::TaskFailed
    } else {
        ReplanTrigger::BetterPathFound
    };
    batch.push(EntryBody::Revision {
        version: previous + 1,
        reason: revision.reason.clone(),
        changes: revision.changes.clone(),
        updated_plan: Box::new(new_plan),
        replan_type: ReplanType::PlanRevision,
        trigger: Some(trigger),
    });
    for id in carried.kept_done() {
        batch.push(EntryBody::TaskState {
            task_id: id.to_string(),
            state: TaskState::Done,
            replanning_info: None,
            note: Some(format!("carried over from plan v{previous}")),
        });
    }
    fx.notices.push(Notice::Info {
        text: format!("Plan revised (#{}): {}", previous + 1, revision.reason),
    });
    Ok(ReflectEnd::Revised)
}

/// Seed 000 §8.2: evaluate the finished plan against the goal.
pub async fn final_review(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let state = &batch.state;
    let plan = state.plan.clone().unwrap_or_default();
    let tasks = context::task_states(&plan, state);
    let done: Vec<String> = plan
        .subtask_ids()
        .filter(|id| state.task_state(id) == TaskState::Done)
        .map(str::to_string)
        .collect();
    let summary = format!(
        "{}/{} tasks done, {} actions ({} failed), {} plan revisions",
        state.tasks_done(),
        state.tasks_total(),
        state.actions_executed,
        state.action_errors,
        state.revision_count()
    );
    let prompt = cx.render(
        "decision_reflection",
        &[
            ("goal_understanding", &json(&plan.goal_understanding)),
            (
                "success_criteria",
                &context::bullet_list(&plan.goal_understanding.success_criteria),
            ),
            ("execution_summary", &summary),
            ("completed_actions", &context::bullet_list(&done)),
            ("current_state", &context::bullet_list(&tasks)),
            (
                "replan_decision_format",
                &decision_format(cx, Phase::Reflection)?,
            ),
        ],
    )?;
    let mut fx = StepEffects::default();
    let outcome = decide(
        cx,
        batch,
        DecisionAsk {
            phase: Phase::Reflection,
            trigger: Some(ReplanTrigger::GoalUnreachable),
            prompt,
            answer: None,
        },
        &mut fx.notices,
    )
    .await?;
    match outcome {
        DecisionOutcome::Waiting(s) => fx.end = Some(s),
        DecisionOutcome::HumanNeeded => fx.end = Some(RunStatus::RequiresHumanIntervention),
        DecisionOutcome::Continue | DecisionOutcome::Replan(_) | DecisionOutcome::Retry => {}
    }
    Ok(fx)
}
