//! Seed 000 §9.2 overrides and §9.3 confidence bands: may the replan a model asked for run?
//!
//! Checks, first match wins:
//! 1. no replan asked for → [`Assessment::NoReplan`];
//! 2. replanning disabled → override;
//! 3. confidence below `user_confirmation_threshold` → [`Assessment::Skip`]: the decision is not
//!    trusted (§13.4), so there is nothing to override or escalate; the current plan goes on;
//! 4. the deciding phase's budget, then the total budget, used up → override (limit);
//! 5. the same trigger already replanned `same_trigger_max_count` times → override (loop);
//! 6. confidence ≥ 0.8 → execute; ≥ `min_confidence_threshold` → execute with a warning;
//!    otherwise (between the two thresholds) → ask for `/approve` when
//!    `require_user_confirmation_on_low_confidence`, else override (low confidence, §9.2.2).
//!
//! The bands move with the configuration: with thresholds 0.6 / 0.2 the warning band is
//! 0.6–0.8, approval 0.2–0.6 and skip below 0.2. A minimum above 0.8 leaves no warning band.
//! Clarification requests go through the same checks with their own budget.

use super::levels::effective_type;
use super::limits::{LimitBucket, ReplanCounters, bucket_for, limit_for, loop_count};
use crate::config::ReplanningConfig;
pub use crate::plan::confidence::{ConfidenceBand, HIGH_CONFIDENCE, band};
use crate::plan::{Phase, ReplanDecision, ReplanType};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why the system did not do what the model asked (§9.2), recorded as `override_reason`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OverrideReason {
    LimitReached {
        bucket: LimitBucket,
        limit: u32,
    },
    LowConfidence,
    /// `count` is how many times this trigger would have replanned, this one included.
    LoopDetected {
        count: u32,
    },
    ReplanningDisabled,
}

impl OverrideReason {
    /// Limits and loops escalate (§9.4, §13.3): the model is told and asked for an alternative.
    pub fn escalates(&self) -> bool {
        matches!(
            self,
            OverrideReason::LimitReached { .. } | OverrideReason::LoopDetected { .. }
        )
    }
}

impl fmt::Display for OverrideReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverrideReason::LimitReached { bucket, limit } => write!(
                f,
                "the limit of {limit} {bucket} has been reached (`{}`)",
                bucket.config_key()
            ),
            OverrideReason::LowConfidence => f.write_str(
                "the confidence is below the minimum threshold and user confirmation is disabled",
            ),
            OverrideReason::LoopDetected { count } => write!(
                f,
                "the same trigger would cause a replan for the {} time (possible infinite loop)",
                ordinal(*count)
            ),
            OverrideReason::ReplanningDisabled => {
                f.write_str("replanning is disabled (`planning.replanning.enabled`)")
            }
        }
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What the engine does with a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Assessment {
    /// The model did not ask for a replan: go on to the next phase.
    NoReplan,
    /// Run the replan; `warn` in the 0.5–0.8 band (log and show a warning).
    Execute { warn: bool },
    /// 0.3–0.5: post an approval request and wait for `/approve`.
    AskApproval,
    /// Below 0.3: the decision is not trusted; keep the current plan and log it.
    Skip { reason: String },
    /// The system refuses the replan (§9.2).
    Override { reason: OverrideReason },
}

impl Assessment {
    /// The replan runs now.
    pub fn executes(&self) -> bool {
        matches!(self, Assessment::Execute { .. })
    }

    pub fn override_reason(&self) -> Option<&OverrideReason> {
        match self {
            Assessment::Override { reason } => Some(reason),
            _ => None,
        }
    }
}

impl fmt::Display for Assessment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assessment::NoReplan => f.write_str("no replan needed; continuing with the current plan"),
            Assessment::Execute { warn: false } => f.write_str("replanning (high confidence)"),
            Assessment::Execute { warn: true } => {
                f.write_str("replanning with a warning: the confidence is moderate")
            }
            Assessment::AskApproval => f.write_str(
                "the confidence is low: waiting for a maintainer to `/approve` or `/reject` the replan",
            ),
            Assessment::Skip { reason } => {
                write!(f, "replan skipped, continuing with the current plan: {reason}")
            }
            Assessment::Override { reason } => write!(f, "replan overridden: {reason}"),
        }
    }
}

/// A decision asks for a replan when it says so, or when it asks the user questions (a
/// clarification request that forgot `replan_needed`).
fn asks_for_replan(d: &ReplanDecision) -> bool {
    d.replan_needed || effective_type(d) == ReplanType::ClarificationRequest
}

/// Decide what to do with `decision`, made in `phase`, given what history has spent.
/// `trigger_key` is [`super::trigger_key`] of the same decision.
pub fn assess(
    decision: &ReplanDecision,
    phase: Phase,
    counters: &ReplanCounters,
    cfg: &ReplanningConfig,
    trigger_key: &str,
) -> Assessment {
    if !asks_for_replan(decision) {
        return Assessment::NoReplan;
    }
    if !cfg.enabled {
        return Assessment::Override {
            reason: OverrideReason::ReplanningDisabled,
        };
    }
    let band = band(decision.confidence, &cfg.llm_decision);
    if band == ConfidenceBand::Untrusted {
        return Assessment::Skip {
            reason: format!(
                "confidence {:.2} is below {:.2}",
                decision.confidence, cfg.llm_decision.user_confirmation_threshold
            ),
        };
    }
    let bucket = bucket_for(phase, effective_type(decision));
    for b in [bucket, LimitBucket::Total] {
        let limit = limit_for(b, cfg);
        if counters.used(b) >= limit {
            return Assessment::Override {
                reason: OverrideReason::LimitReached { bucket: b, limit },
            };
        }
    }
    if let Some(count) = loop_count(counters, trigger_key, cfg) {
        return Assessment::Override {
            reason: OverrideReason::LoopDetected { count },
        };
    }
    match band {
        ConfidenceBand::High => Assessment::Execute { warn: false },
        ConfidenceBand::Warn => Assessment::Execute { warn: true },
        ConfidenceBand::Low if cfg.llm_decision.require_user_confirmation_on_low_confidence => {
            Assessment::AskApproval
        }
        ConfidenceBand::Low | ConfidenceBand::Untrusted => Assessment::Override {
            reason: OverrideReason::LowConfidence,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::replan::trigger_key;

    fn decision(confidence: f64, t: ReplanType) -> ReplanDecision {
        ReplanDecision {
            replan_needed: true,
            confidence,
            replan_type: t,
            issues_found: vec!["tests fail".into()],
            ..Default::default()
        }
    }

    fn assess_at(confidence: f64) -> Assessment {
        let d = decision(confidence, ReplanType::PartialReplan);
        let key = trigger_key(Phase::Execution, &d);
        assess(
            &d,
            Phase::Execution,
            &ReplanCounters::default(),
            &ReplanningConfig::default(),
            &key,
        )
    }

    #[test]
    fn confidence_bands_of_section_9_3() {
        assert_eq!(assess_at(1.0), Assessment::Execute { warn: false });
        assert_eq!(assess_at(0.8), Assessment::Execute { warn: false });
        assert_eq!(assess_at(0.79), Assessment::Execute { warn: true });
        assert_eq!(assess_at(0.5), Assessment::Execute { warn: true });
        assert_eq!(assess_at(0.49), Assessment::AskApproval);
        assert_eq!(assess_at(0.3), Assessment::AskApproval);
        assert!(matches!(assess_at(0.29), Assessment::Skip { .. }));
        assert!(matches!(assess_at(0.0), Assessment::Skip { .. }));
        assert!(matches!(assess_at(f64::NAN), Assessment::Skip { .. }));
    }

    #[test]
    fn no_replan_when_not_asked() {
        let mut d = decision(0.95, ReplanType::None);
        d.replan_needed = false;
        let cfg = ReplanningConfig {
            enabled: false,
            ..Default::default()
        };
        assert_eq!(
            assess(&d, Phase::Execution, &ReplanCounters::default(), &cfg, "k"),
            Assessment::NoReplan
        );
    }

    #[test]
    fn low_band_without_confirmation_is_a_low_confidence_override() {
        let mut cfg = ReplanningConfig::default();
        cfg.llm_decision.require_user_confirmation_on_low_confidence = false;
        let d = decision(0.4, ReplanType::PartialReplan);
        assert_eq!(
            assess(&d, Phase::Execution, &ReplanCounters::default(), &cfg, "k"),
            Assessment::Override {
                reason: OverrideReason::LowConfidence
            }
        );
    }

    #[test]
    fn bands_move_with_the_thresholds() {
        let mut cfg = ReplanningConfig::default();
        cfg.llm_decision.min_confidence_threshold = 0.6;
        cfg.llm_decision.user_confirmation_threshold = 0.2;
        let at = |c: f64| {
            assess(
                &decision(c, ReplanType::PartialReplan),
                Phase::Execution,
                &ReplanCounters::default(),
                &cfg,
                "k",
            )
        };
        assert_eq!(at(0.6), Assessment::Execute { warn: true });
        assert_eq!(at(0.59), Assessment::AskApproval);
        assert_eq!(at(0.2), Assessment::AskApproval);
        assert!(matches!(at(0.19), Assessment::Skip { .. }));
        cfg.llm_decision.min_confidence_threshold = 0.9;
        assert_eq!(
            band(0.85, &cfg.llm_decision),
            ConfidenceBand::Low,
            "a minimum above 0.8 leaves no warning band"
        );
        assert_eq!(band(0.9, &cfg.llm_decision), ConfidenceBand::High);
    }

    #[test]
    fn disabled_replanning_overrides() {
        let cfg = ReplanningConfig {
            enabled: false,
            ..Default::default()
        };
        let d = decision(0.9, ReplanType::PartialReplan);
        assert_eq!(
            assess(&d, Phase::Execution, &ReplanCounters::default(), &cfg, "k"),
            Assessment::Override {
                reason: OverrideReason::ReplanningDisabled
            }
        );
    }

    #[test]
    fn limit_reached_overrides_even_at_full_confidence() {
        let cfg = ReplanningConfig::default();
        let counters = ReplanCounters {
            partial_replans: 2,
            total: 2,
            ..Default::default()
        };
        let d = decision(1.0, ReplanType::PartialReplan);
        assert_eq!(
            assess(&d, Phase::Execution, &counters, &cfg, "k"),
            Assessment::Override {
                reason: OverrideReason::LimitReached {
                    bucket: LimitBucket::PartialReplans,
                    limit: 2
                }
            }
        );
        // The retry budget is separate: a retry in the same phase still runs.
        let retry = decision(1.0, ReplanType::Retry);
        assert_eq!(
            assess(&retry, Phase::Execution, &counters, &cfg, "k"),
            Assessment::Execute { warn: false }
        );
    }

    #[test]
    fn total_limit_applies_to_every_phase() {
        let cfg = ReplanningConfig::default();
        let counters = ReplanCounters {
            total: 10,
            ..Default::default()
        };
        let d = decision(0.9, ReplanType::TaskRedecomposition);
        assert_eq!(
            assess(&d, Phase::TaskDecomposition, &counters, &cfg, "k"),
            Assessment::Override {
                reason: OverrideReason::LimitReached {
                    bucket: LimitBucket::Total,
                    limit: 10
                }
            }
        );
    }

    #[test]
    fn clarification_requests_have_their_own_limit() {
        let cfg = ReplanningConfig::default();
        let mut d = decision(0.9, ReplanType::None);
        d.replan_needed = false;
        d.clarification_needed = true;
        d.clarification_questions = vec!["Which database?".into()];
        let counters = ReplanCounters {
            clarification_requests: 1,
            total: 1,
            ..Default::default()
        };
        assert_eq!(
            assess(&d, Phase::GoalUnderstanding, &counters, &cfg, "k"),
            Assessment::Execute { warn: false }
        );
        let counters = ReplanCounters {
            clarification_requests: 2,
            total: 2,
            ..Default::default()
        };
        assert_eq!(
            assess(&d, Phase::GoalUnderstanding, &counters, &cfg, "k"),
            Assessment::Override {
                reason: OverrideReason::LimitReached {
                    bucket: LimitBucket::ClarificationRequests,
                    limit: 2
                }
            }
        );
    }

    #[test]
    fn same_trigger_a_third_time_is_a_loop() {
        let cfg = ReplanningConfig::default();
        let d = decision(0.95, ReplanType::Retry);
        let key = trigger_key(Phase::Execution, &d);
        let mut counters = ReplanCounters::default();
        for _ in 0..2 {
            assert!(assess(&d, Phase::Execution, &counters, &cfg, &key).executes());
            counters.record(Phase::Execution, &d, &key);
        }
        assert_eq!(
            assess(&d, Phase::Execution, &counters, &cfg, &key),
            Assessment::Override {
                reason: OverrideReason::LoopDetected { count: 3 }
            }
        );
    }

    #[test]
    fn display_names_the_limit_and_its_key() {
        let a = Assessment::Override {
            reason: OverrideReason::LimitReached {
                bucket: LimitBucket::Redecompositions,
                limit: 3,
            },
        };
        assert_eq!(
            a.to_string(),
            "replan overridden: the limit of 3 task redecompositions has been reached \
             (`planning.replanning.task_decomposition.max_redecomposition_attempts`)"
        );
        let l = OverrideReason::LoopDetected { count: 3 };
        assert!(l.to_string().contains("3rd time"), "{l}");
        assert!(
            Assessment::Execute { warn: true }
                .to_string()
                .contains("warning")
        );
    }
}
