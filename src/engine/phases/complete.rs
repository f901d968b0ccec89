//! The end of a plan: the seed 001 completion summary, or the §10.4 hand-off to a person.

use crate::engine::batch::Batch;
use crate::engine::context;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::evidence::final_state::EndState;
use crate::history::entry::{EntryBody, RunStatus};
use crate::plan::{Completion, CompletionSummary, TaskState};
use crate::report::Notice;

pub async fn complete(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let end = crate::engine::evidence::final_state::verify_final(cx, batch).await;
    let state = &batch.state;
    let plan = state.plan.clone().unwrap_or_default();
    let tasks: Vec<String> = context::task_states(&plan, state)
        .iter()
        .map(|t| format!("- {t}"))
        .collect();
    let review = state
        .open_review()
        .map(|r| crate::engine::review_feedback::answer_request(&r.round))
        .unwrap_or_default();
    let prompt = cx.render(
        "completion",
        &[
            ("goal", &plan.goal_understanding.main_objective),
            ("success_criteria", &criteria_with_evidence(&plan, &end)),
            ("tasks", &tasks.join("\n")),
            ("revisions", &state.revision_count().to_string()),
            ("review", &review),
        ],
    )?;
    let done = state.tasks_done() as u32;
    let failed = plan
        .subtask_ids()
        .filter(|id| state.task_state(id) == TaskState::Blocked)
        .count() as u32;
    let mut completion = match cx.ask::<Completion>(batch, "completion", prompt).await? {
        Ok(c) => c,
        Err(f) => {
            tracing::warn!(error = %f.error, "completion summary unusable; writing it from the state");
            Completion {
                phase: "completion".into(),
                status: None,
                summary: CompletionSummary {
                    goal_achieved: failed == 0,
                    key_outcomes: vec![],
                    ..CompletionSummary::default()
                },
                done: true,
                comment: None,
                review_threads: vec![],
            }
        }
    };
    // The counts come from the history, not from the model's memory of it.
    completion.summary.tasks_completed = done;
    completion.summary.tasks_failed = failed;
    completion.done = true;
    if end.status != RunStatus::Completed {
        // The evidence, not the model, says whether the goal was reached.
        completion.summary.goal_achieved = false;
        completion.status = Some(status_name(end.status));
        completion.summary.reason = Some(end.problems.join("; "));
    }
    let summary = format!(
        "{} ({}/{} tasks done, {} plan revisions){}",
        if completion.summary.goal_achieved {
            "Goal achieved"
        } else {
            "Goal not achieved"
        },
        done,
        batch.state.tasks_total(),
        batch.state.revision_count(),
        if completion.summary.key_outcomes.is_empty() {
            String::new()
        } else {
            format!(": {}", completion.summary.key_outcomes.join("; "))
        }
    ) + &evidence_lines(&end);
    batch.push(EntryBody::Completion {
        completion: Box::new(completion),
    });
    Ok(StepEffects {
        notices: vec![Notice::Completion { summary }],
        end: Some(end.status),
    })
}

fn status_name(status: RunStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The criteria as the completion prompt gets them: each with its evidence, when verified.
fn criteria_with_evidence(plan: &crate::plan::Plan, end: &EndState) -> String {
    if end.criteria.is_empty() {
        return plan.goal_understanding.success_criteria.join("; ");
    }
    end.criteria
        .iter()
        .map(|c| format!("{} [{}]", c.criterion, c.describe()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The completion summary's verification part: why the run is not `completed`, and every
/// criterion with its evidence.
fn evidence_lines(end: &EndState) -> String {
    let mut out = String::new();
    if end.status != RunStatus::Completed {
        out.push_str(&format!(
            "\n\n**{}**: {}",
            status_name(end.status),
            end.problems.join("; ")
        ));
    }
    for c in &end.criteria {
        out.push_str(&format!("\n- {} — {}", c.criterion, c.describe()));
    }
    out
}

/// Error level 3 (seed 001 §10.4): record `requires_human_intervention` and tell people.
pub fn human_needed(
    batch: &mut Batch,
    reason: &str,
    recommendations: Vec<String>,
    notices: &mut Vec<Notice>,
) {
    let state = &batch.state;
    let failed = state
        .plan
        .iter()
        .flat_map(|p| p.subtask_ids())
        .filter(|id| state.task_state(id) == TaskState::Blocked)
        .count() as u32;
    let current_state = format!(
        "plan v{}, {}/{} tasks done",
        state.plan_version,
        state.tasks_done(),
        state.tasks_total()
    );
    let completion = Completion {
        phase: "completion".into(),
        status: Some("requires_human_intervention".into()),
        summary: CompletionSummary {
            goal_achieved: false,
            tasks_completed: state.tasks_done() as u32,
            tasks_failed: failed,
            key_outcomes: vec![],
            revision_attempts: Some(state.reflection_revisions.max(state.revision_count())),
            reason: Some(reason.to_string()),
            current_state: Some(current_state),
            recommendations: recommendations.clone(),
        },
        done: false,
        comment: Some("Automatic processing cannot go on; a person is needed.".into()),
        review_threads: vec![],
    };
    batch.push(EntryBody::Completion {
        completion: Box::new(completion),
    });
    notices.push(Notice::HumanNeeded {
        reason: reason.to_string(),
        recommendations,
    });
}
