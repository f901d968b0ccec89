//! One file per kind of step; `perform` dispatches a `Step` to it.

pub mod alternatives;
pub mod complete;
pub mod execute;
pub mod judge;
pub mod legacy;
pub mod plan_approval;
pub mod plan_fallback;
pub mod planning;
pub mod refined_draft;
pub mod refinement;
pub mod reflect;

use super::batch::Batch;
use super::cx::{Cx, CycleError, StepEffects};
use super::step::Step;

pub async fn perform(
    cx: &Cx<'_>,
    batch: &mut Batch,
    step: &Step,
) -> Result<StepEffects, CycleError> {
    match step {
        Step::Draft { first, last } => planning::draft(cx, batch, *first, *last).await,
        Step::RedraftInvalid => planning::redraft_invalid(cx, batch).await,
        Step::DecidePlanning(phase) => planning::decide_phase(cx, batch, *phase).await,
        Step::InvalidPlan => plan_fallback::salvage(cx, batch),
        Step::QualityJudge => refinement::judge(cx, batch).await,
        Step::Refine => refined_draft::refine(cx, batch).await,
        Step::CommitPlan => planning::commit_plan(batch),
        Step::Execute(task_id) => execute::attempt(cx, batch, task_id).await,
        Step::FinalReview => reflect::final_review(cx, batch).await,
        Step::Complete => complete::complete(cx, batch).await,
        Step::Legacy => legacy::run(cx, batch).await,
        Step::AwaitPlanApproval => Ok(plan_approval::request(cx, batch)),
        Step::Finish(status) => Ok(StepEffects {
            notices: vec![],
            end: Some(*status),
        }),
    }
}
