//! Seed 002 refinement: the quality judge scores the draft and `make_refinement_decision` accepts,
//! replans with the judge's feedback (`refined_draft.rs`), or rejects.

use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::refine::{RefinementInput, make_refinement_decision, quality_ok};
use crate::history::entry::{EntryBody, RefinementVerdict};
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
