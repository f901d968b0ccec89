//! Seed 002 refinement's replan: the draft is asked again with the quality judge's feedback, and
//! a replanned draft must keep its structure or falls back task by task.

use crate::engine::batch::Batch;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::phases::planning::ask_draft;
use crate::engine::refine::choose_refined_plan;
use crate::history::entry::{DraftSource, EntryBody};
use crate::plan::Phase;

/// Replan the draft with the judge's feedback, then check its structure (seed 002).
pub async fn refine(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let w = batch.state.planning.clone().unwrap_or_default();
    let before = w.draft();
    let first = w
        .from
        .unwrap_or(Phase::GoalUnderstanding)
        .min(Phase::TaskDecomposition);
    let fx = ask_draft(
        cx,
        batch,
        &w,
        first,
        Phase::ActionSequence,
        DraftSource::Refinement,
        &[],
    )
    .await?;
    let after = batch.state.planning.as_ref().and_then(|w| w.draft());
    if let (Some(prev), Some(next)) = (before, after) {
        let (chosen, validation) = choose_refined_plan(&prev, &next, &cx.cfg().refinement);
        if validation.is_broken() {
            let problems: Vec<String> = validation.problems.iter().map(|p| p.to_string()).collect();
            tracing::warn!(
                ?problems,
                "refined plan broke the structure; falling back per task"
            );
            batch.push(EntryBody::Draft {
                goal_understanding: Some(chosen.goal_understanding),
                task_decomposition: Some(chosen.task_decomposition),
                action_plan: Some(chosen.action_plan),
                self_check: serde_json::Value::Null,
                source: DraftSource::Fallback,
                problems: vec![],
            });
        }
    }
    Ok(fx)
}
