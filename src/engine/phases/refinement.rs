//! Seed 002 refinement: the quality judge scores the draft, `make_refinement_decision` accepts,
//! replans with the judge's feedback, or rejects; a replanned draft must keep its structure or
//! falls back task by task.

use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cycle::{Cx, CycleError, StepEffects};
use crate::engine::phases::planning::ask_draft;
use crate::engine::refine::{
    RefinementInput, choose_refined_plan, make_refinement_decision, quality_ok,
};
use crate::history::entry::{DraftSource, EntryBody, RefinementVerdict};
use crate::plan::Phase;
use crate::report::Notice;
use schemars::JsonSchema;
use serde::Deserialize;

/// The quality judge's reply (seed 002 QualityJudge).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct QualityVerdict {
    #[serde(default)]
    pub score: Option<f64>,
    #[serde(default, alias = "isAcceptable")]
    pub is_acceptable: bool,
    #[serde(default)]
    pub issues: Vec<String>,
    #[serde(default)]
    pub suggestions: Vec<String>,
}

pub async fn judge(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let w = batch.state.planning.clone().unwrap_or_default();
    let plan = w.draft().unwrap_or_default();
    let prompt = cx.render(
        "quality_judge",
        &[
            ("task_request", &context::task_request(&batch.state)),
            ("plan", &json(&plan)),
            ("available_tools", &context::available_tools(&cx.deps.tools)),
        ],
    )?;
    let verdict = match cx
        .ask::<QualityVerdict>(batch, "quality_judge", prompt)
        .await?
    {
        Ok(v) => v,
        Err(f) => {
            // Seed 001 §10.3.1: when the result cannot be judged, assume there is a problem.
            tracing::warn!(error = %f.error, "quality judge reply unusable; no score");
            QualityVerdict {
                score: None,
                is_acceptable: false,
                issues: vec![format!(
                    "the quality judge reply could not be used: {}",
                    f.error
                )],
                suggestions: vec![],
            }
        }
    };
    Ok(weigh(cx, batch, verdict))
}

/// Seed 002 `make_refinement_decision` on a verdict, asked or folded into the planning reply.
pub fn weigh(cx: &Cx<'_>, batch: &mut Batch, verdict: QualityVerdict) -> StepEffects {
    let cfg = &cx.cfg().refinement;
    let w = batch.state.planning.clone().unwrap_or_default();
    let ok = quality_ok(verdict.is_acceptable, verdict.score, cfg);
    let input = RefinementInput {
        attempt: w.refinement_drafts,
        max_attempts: cfg.max_refinement_attempts,
        score: verdict.score,
        previous_score: w.refinement.last().and_then(|r| r.score),
        is_acceptable: ok,
        suggestions: verdict.suggestions.len(),
        suggestion_replans_done: w.refinement.iter().filter(|r| r.for_suggestions).count() as u32,
    };
    let decision = make_refinement_decision(&input, cfg);
    let reason = if decision.verdict == RefinementVerdict::Replan {
        let mut fb = vec![format!(
            "Quality review (priority {}, score {}): {}",
            decision.priority,
            verdict
                .score
                .map(|s| format!("{s:.0}"))
                .unwrap_or_else(|| "none".into()),
            decision.reason
        )];
        fb.extend(verdict.issues.iter().map(|i| format!("Issue: {i}")));
        fb.extend(
            verdict
                .suggestions
                .iter()
                .map(|s| format!("Suggestion: {s}")),
        );
        fb.join("\n")
    } else {
        format!("priority {}: {}", decision.priority, decision.reason)
    };
    batch.push(EntryBody::Refinement {
        attempt: w.refinement_drafts,
        score: verdict.score,
        is_acceptable: ok,
        issues: verdict.issues.clone(),
        suggestions: verdict.suggestions.clone(),
        decision: decision.verdict,
        reason: reason.clone(),
    });
    let mut fx = StepEffects::default();
    if decision.verdict == RefinementVerdict::Reject {
        fx.notices.push(Notice::HumanNeeded {
            reason: format!(
                "The plan did not pass the quality review: {}",
                decision.reason
            ),
            recommendations: verdict.issues,
        });
    }
    fx
}

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
