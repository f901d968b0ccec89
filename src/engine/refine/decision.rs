//! Seed 002 `makeRefinementDecision`: after the quality judge scored a plan, accept it, replan it
//! with the judge's feedback, or reject it, in exactly the seed's priority order 1–6.

use crate::config::RefinementConfig;
pub use crate::history::entry::RefinementVerdict;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RefinementInput {
    /// Refinement replans already made for this plan: 0 when the first plan is judged.
    pub attempt: u32,
    /// Normally `refinement.max_refinement_attempts` (seed: "再計画最大回数", replans, default 2).
    pub max_attempts: u32,
    /// The judge's score (0–100); `None` when the judge gave none or could not be parsed.
    pub score: Option<f64>,
    /// The score of the plan before the last refinement; `None` on the first judgement.
    pub previous_score: Option<f64>,
    /// Quality OK (see [`quality_ok`]).
    pub is_acceptable: bool,
    /// Number of suggestions the judge made.
    pub suggestions: usize,
    /// Replans already made only because of suggestions on an acceptable plan.
    pub suggestion_replans_done: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefinementDecision {
    pub verdict: RefinementVerdict,
    /// Which rule of the seed decided (1–6).
    pub priority: u8,
    pub reason: String,
}

/// "Quality OK": the judge calls the plan acceptable and, when it gave a score, the score reaches
/// `acceptable_score` (our pass mark; the seed relies on the judge's flag alone).
pub fn quality_ok(judge_acceptable: bool, score: Option<f64>, cfg: &RefinementConfig) -> bool {
    judge_acceptable && score.is_none_or(|s| s >= cfg.acceptable_score)
}

/// Improvement below `delta_threshold` points OR below `delta_threshold_percent` % of the previous
/// score (OR: with AND one large value would keep the loop going, seed 002). Exactly the threshold
/// is not stagnation. A previous score of 0 or less has no meaningful relative improvement; only
/// the absolute rule applies then.
pub fn is_stagnated(previous: f64, new: f64, cfg: &RefinementConfig) -> bool {
    let improvement = new - previous;
    if improvement < cfg.delta_threshold {
        return true;
    }
    if previous > 0.0 {
        // Multiply first: 10 * 100 / 200 is exactly 5, 10 / 200 * 100 is not.
        let relative = improvement * 100.0 / previous;
        return relative < cfg.delta_threshold_percent;
    }
    false
}

fn decision(
    verdict: RefinementVerdict,
    priority: u8,
    reason: impl Into<String>,
) -> RefinementDecision {
    RefinementDecision {
        verdict,
        priority,
        reason: reason.into(),
    }
}

/// Seed 002 decision order. The first rule that applies decides.
pub fn make_refinement_decision(
    input: &RefinementInput,
    cfg: &RefinementConfig,
) -> RefinementDecision {
    use RefinementVerdict::{Accept, Reject, Replan};
    let ok = input.is_acceptable;
    // 1. Out of attempts.
    if input.attempt >= input.max_attempts {
        return if ok {
            decision(
                Accept,
                1,
                format!(
                    "maximum refinement attempts ({}) reached; quality is acceptable",
                    input.max_attempts
                ),
            )
        } else {
            decision(
                Reject,
                1,
                format!(
                    "maximum refinement attempts ({}) reached and quality is still not acceptable",
                    input.max_attempts
                ),
            )
        };
    }
    // 2. No score to compare.
    let Some(score) = input.score else {
        return if ok {
            decision(
                Accept,
                2,
                "the quality judge gave no score; the plan is acceptable",
            )
        } else {
            decision(
                Reject,
                2,
                "the quality judge gave no score and the plan is not acceptable",
            )
        };
    };
    // 3. Improvement stagnated.
    let stagnated_from = input
        .previous_score
        .filter(|previous| is_stagnated(*previous, score, cfg));
    if let Some(previous) = stagnated_from {
        return if ok {
            decision(
                Accept,
                3,
                format!("score stagnated ({previous} → {score}); the plan is acceptable"),
            )
        } else {
            // Attempts remain (rule 1 did not apply): keep trying, as the seed's NOTE says.
            decision(
                Replan,
                3,
                format!(
                    "score stagnated ({previous} → {score}) but the plan is not acceptable; attempts remain"
                ),
            )
        };
    }
    // 4. Not acceptable.
    if !ok {
        return decision(
            Replan,
            4,
            format!("quality not acceptable (score {score}); replanning with the judge's feedback"),
        );
    }
    // 5. Acceptable, but the judge suggested improvements and we may act on them.
    if input.suggestions > 0
        && cfg.refine_suggestions_on_success
        && input.suggestion_replans_done < cfg.max_suggestion_replans
    {
        return decision(
            Replan,
            5,
            format!(
                "quality acceptable (score {score}); replanning on {} suggestion(s)",
                input.suggestions
            ),
        );
    }
    // 6. Acceptable.
    decision(Accept, 6, format!("quality acceptable (score {score})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use RefinementVerdict::{Accept, Reject, Replan};

    fn input() -> RefinementInput {
        RefinementInput {
            attempt: 0,
            max_attempts: 2,
            score: Some(80.0),
            previous_score: None,
            is_acceptable: true,
            suggestions: 0,
            suggestion_replans_done: 0,
        }
    }

    fn decide(i: RefinementInput) -> (RefinementVerdict, u8) {
        let cfg = RefinementConfig {
            refine_suggestions_on_success: true,
            ..Default::default()
        };
        let d = make_refinement_decision(&i, &cfg);
        (d.verdict, d.priority)
    }

    #[test]
    fn priority_1_max_attempts() {
        let i = RefinementInput {
            attempt: 2,
            suggestions: 3,
            ..input()
        };
        assert_eq!(decide(i), (Accept, 1));
        let i = RefinementInput {
            attempt: 2,
            is_acceptable: false,
            score: None,
            ..input()
        };
        assert_eq!(decide(i), (Reject, 1));
    }

    #[test]
    fn priority_2_missing_score() {
        let i = RefinementInput {
            score: None,
            ..input()
        };
        assert_eq!(decide(i), (Accept, 2));
        let i = RefinementInput {
            score: None,
            is_acceptable: false,
            ..input()
        };
        assert_eq!(decide(i), (Reject, 2));
    }

    #[test]
    fn priority_3_stagnation() {
        let i = RefinementInput {
            attempt: 1,
            previous_score: Some(78.0),
            suggestions: 2,
            ..input()
        };
        assert_eq!(decide(i), (Accept, 3));
        let i = RefinementInput {
            attempt: 1,
            score: Some(52.0),
            previous_score: Some(50.0),
            is_acceptable: false,
            ..input()
        };
        assert_eq!(decide(i), (Replan, 3));
    }

    #[test]
    fn priority_4_not_acceptable() {
        let i = RefinementInput {
            score: Some(40.0),
            is_acceptable: false,
            ..input()
        };
        assert_eq!(decide(i), (Replan, 4));
        // Improved enough: not stagnated, still not acceptable.
        let i = RefinementInput {
            attempt: 1,
            score: Some(60.0),
            previous_score: Some(40.0),
            is_acceptable: false,
            ..input()
        };
        assert_eq!(decide(i), (Replan, 4));
    }

    #[test]
    fn priority_5_suggestions_on_success() {
        let i = RefinementInput {
            suggestions: 1,
            ..input()
        };
        assert_eq!(decide(i), (Replan, 5));
        let spent = RefinementInput {
            suggestions: 1,
            suggestion_replans_done: 1,
            ..input()
        };
        assert_eq!(decide(spent), (Accept, 6));
        let off = make_refinement_decision(
            &RefinementInput {
                suggestions: 1,
                ..input()
            },
            &RefinementConfig::default(),
        );
        assert_eq!(
            (off.verdict, off.priority),
            (Accept, 6),
            "refine_suggestions_on_success is off by default"
        );
    }

    #[test]
    fn priority_6_accept() {
        assert_eq!(decide(input()), (Accept, 6));
    }

    #[test]
    fn first_attempt_without_previous_score_is_not_stagnation() {
        let i = RefinementInput {
            score: Some(10.0),
            is_acceptable: false,
            ..input()
        };
        assert_eq!(decide(i), (Replan, 4));
    }

    #[test]
    fn stagnation_boundaries() {
        let cfg = RefinementConfig::default();
        // Exactly 5 points (10 %): not stagnated; just under: stagnated.
        assert!(!is_stagnated(50.0, 55.0, &cfg));
        assert!(is_stagnated(50.0, 54.9, &cfg));
        // Exactly 5 % (10 points): not stagnated; 4.5 % with 9 points: stagnated (OR).
        assert!(!is_stagnated(200.0, 210.0, &cfg));
        assert!(is_stagnated(200.0, 209.0, &cfg));
        // A drop is stagnation.
        assert!(is_stagnated(70.0, 60.0, &cfg));
        // From 0 only the absolute rule applies.
        assert!(!is_stagnated(0.0, 5.0, &cfg));
        assert!(is_stagnated(0.0, 4.0, &cfg));
    }

    #[test]
    fn quality_ok_needs_the_flag_and_the_pass_mark() {
        let cfg = RefinementConfig::default();
        assert!(quality_ok(true, Some(70.0), &cfg));
        assert!(!quality_ok(true, Some(69.9), &cfg));
        assert!(!quality_ok(false, Some(95.0), &cfg));
        assert!(quality_ok(true, None, &cfg));
    }
}
