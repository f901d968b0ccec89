//! Seed 000 §9.4 / §13.2 / §13.3 escalation as a small state machine.
//!
//! ```text
//! override (limit or loop) ──step 1──▶ AskAlternative { prompt }   (the model is told the limit)
//!                                         │ the model answers; the cycle assesses the answer
//!                                         ▼
//!         alternative runs / needs no replan / asks /approve ──▶ UseAlternative { assessment }
//!         alternative also cannot run ──step 2──▶ HumanNeeded { notice }            (wait)
//!                                              or ContinueOnAssumptions { notice }  (per config)
//! override (low confidence, disabled) ───────▶ KeepCurrentPlan
//! ```
//!
//! Step 1 happens once per override: an alternative that is itself refused goes straight to
//! step 2, which bounds the extra model calls to one.

use super::limits::{LimitBucket, ReplanCounters, limit_for};
use super::policy::{Assessment, OverrideReason};
use crate::config::ReplanningConfig;
use crate::plan::{Phase, ReplanDecision};
use serde::{Deserialize, Serialize};

/// The English text added to the next decision prompt in step 1. Placeholders: `{phase}`,
/// `{reason}`, `{previous_decision}`, `{remaining}`.
pub const ESCALATION_TEMPLATE: &str = include_str!("../../../prompts/escalation.md");

/// Step 2's choice (§9.4.4 "ユーザーの指示を待機または仮定で継続").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationPolicy {
    /// Continue the current plan on the stated assumptions instead of waiting for a person.
    pub continue_on_assumptions: bool,
}

impl EscalationPolicy {
    /// The seed has no escalation-specific switch; `goal_understanding.auto_assume_on_no_response`
    /// is its one "go on with assumptions when nobody answers" setting, so it decides here too.
    pub fn from_config(cfg: &ReplanningConfig) -> Self {
        Self {
            continue_on_assumptions: cfg.goal_understanding.auto_assume_on_no_response,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum EscalationStep {
    /// Step 1: ask the model again with `prompt` appended to the decision request.
    AskAlternative { prompt: String },
    /// The alternative is usable: act on its assessment (execute, ask approval, or go on).
    UseAlternative { assessment: Assessment },
    /// Step 2: notify the thread and stop until a person answers (`requires_human_intervention`).
    HumanNeeded { notice: String },
    /// Step 2: notify the thread and continue the current plan on the model's assumptions.
    ContinueOnAssumptions {
        notice: String,
        assumptions: Vec<String>,
    },
    /// Not an escalating override: keep the current plan, nothing to ask.
    KeepCurrentPlan,
}

/// An escalation in progress: the override that started it and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    pub reason: OverrideReason,
    pub phase: Phase,
}

impl Escalation {
    /// `None` for overrides that do not escalate (low confidence, replanning disabled).
    pub fn new(reason: OverrideReason, phase: Phase) -> Option<Self> {
        reason.escalates().then_some(Self { reason, phase })
    }

    /// Step 1: the text that tells the model why its replan was refused and what budget is left.
    /// `template` is the `escalation` prompt (built in, or the repository's override).
    pub fn first_step(
        &self,
        template: &str,
        decision: &ReplanDecision,
        counters: &ReplanCounters,
        cfg: &ReplanningConfig,
    ) -> EscalationStep {
        EscalationStep::AskAlternative {
            prompt: escalation_prompt(template, self.phase, &self.reason, decision, counters, cfg),
        }
    }

    /// After step 1: `alternative` is the assessment of the model's new decision.
    /// `alternative_decision` supplies the assumptions when the cycle continues without a person.
    pub fn on_alternative(
        &self,
        alternative: &Assessment,
        alternative_decision: &ReplanDecision,
        policy: EscalationPolicy,
    ) -> EscalationStep {
        match alternative {
            Assessment::NoReplan | Assessment::Execute { .. } | Assessment::AskApproval => {
                EscalationStep::UseAlternative {
                    assessment: alternative.clone(),
                }
            }
            // Refused again, or not trusted: the original problem has no way forward.
            Assessment::Override { .. } | Assessment::Skip { .. } => {
                let notice = format!(
                    "A replan in the {} phase is needed but cannot be executed: {}. \
                     No alternative was found within the remaining budget.",
                    self.phase.title(),
                    self.reason
                );
                if policy.continue_on_assumptions {
                    EscalationStep::ContinueOnAssumptions {
                        notice: format!(
                            "{notice} Continuing with the current plan on the stated assumptions; \
                             comment `/replan` or `/stop` to steer."
                        ),
                        assumptions: alternative_decision.assumptions_to_make.clone(),
                    }
                } else {
                    EscalationStep::HumanNeeded {
                        notice: format!(
                            "{notice} Waiting for instructions: comment `/replan [goal|tasks|actions] <reason>`, \
                             `/resume` or `/stop`."
                        ),
                    }
                }
            }
        }
    }
}

/// Fill the escalation template. The remaining budget lists every bucket with something left,
/// then the total, so the model can pick a replan that will be accepted.
pub fn escalation_prompt(
    template: &str,
    phase: Phase,
    reason: &OverrideReason,
    decision: &ReplanDecision,
    counters: &ReplanCounters,
    cfg: &ReplanningConfig,
) -> String {
    let mut remaining = String::new();
    for b in LimitBucket::ALL {
        let left = counters.remaining(b, cfg);
        if b != LimitBucket::Total && left == 0 {
            continue;
        }
        remaining.push_str(&format!("- {b}: {left} of {} left\n", limit_for(b, cfg)));
    }
    let previous = serde_json::to_string_pretty(decision).unwrap_or_default();
    template
        .replace("{phase}", phase.title())
        .replace("{reason}", &reason.to_string())
        .replace("{previous_decision}", &previous)
        .replace("{remaining}", remaining.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ReplanType;

    fn limit_override() -> OverrideReason {
        OverrideReason::LimitReached {
            bucket: LimitBucket::PartialReplans,
            limit: 2,
        }
    }

    fn decision() -> ReplanDecision {
        ReplanDecision {
            replan_needed: true,
            confidence: 0.9,
            replan_type: ReplanType::PartialReplan,
            issues_found: vec!["npm registry unreachable".into()],
            assumptions_to_make: vec!["tests can be skipped offline".into()],
            ..Default::default()
        }
    }

    #[test]
    fn only_limits_and_loops_escalate() {
        assert!(Escalation::new(limit_override(), Phase::Execution).is_some());
        assert!(
            Escalation::new(OverrideReason::LoopDetected { count: 3 }, Phase::Execution).is_some()
        );
        assert!(Escalation::new(OverrideReason::LowConfidence, Phase::Execution).is_none());
        assert!(Escalation::new(OverrideReason::ReplanningDisabled, Phase::Execution).is_none());
    }

    #[test]
    fn step_one_tells_the_model_the_limit_and_the_budget_left() {
        let cfg = ReplanningConfig::default();
        let counters = ReplanCounters {
            partial_replans: 2,
            action_retries: 3,
            total: 5,
            ..Default::default()
        };
        let e = Escalation::new(limit_override(), Phase::Execution).unwrap();
        let EscalationStep::AskAlternative { prompt } =
            e.first_step(ESCALATION_TEMPLATE, &decision(), &counters, &cfg)
        else {
            panic!("step 1 asks for an alternative")
        };
        assert!(
            prompt.contains("the limit of 2 execution replans has been reached"),
            "{prompt}"
        );
        assert!(
            prompt.contains("- replans in total: 5 of 10 left"),
            "{prompt}"
        );
        assert!(
            prompt.contains("- task redecompositions: 3 of 3 left"),
            "{prompt}"
        );
        assert!(
            !prompt.contains("action retries"),
            "used-up buckets are not offered: {prompt}"
        );
        assert!(prompt.contains("npm registry unreachable"), "{prompt}");
        assert!(prompt.contains("Execution phase"), "{prompt}");
        for placeholder in ["{phase}", "{reason}", "{previous_decision}", "{remaining}"] {
            assert!(
                !prompt.contains(placeholder),
                "{placeholder} left in {prompt}"
            );
        }
    }

    #[test]
    fn a_usable_alternative_is_used() {
        let e = Escalation::new(limit_override(), Phase::Execution).unwrap();
        let policy = EscalationPolicy {
            continue_on_assumptions: false,
        };
        for a in [
            Assessment::NoReplan,
            Assessment::Execute { warn: true },
            Assessment::AskApproval,
        ] {
            assert_eq!(
                e.on_alternative(&a, &decision(), policy),
                EscalationStep::UseAlternative { assessment: a }
            );
        }
    }

    #[test]
    fn a_refused_alternative_goes_to_the_user_or_on_assumptions() {
        let e = Escalation::new(limit_override(), Phase::Execution).unwrap();
        let refused = Assessment::Override {
            reason: OverrideReason::LimitReached {
                bucket: LimitBucket::Total,
                limit: 10,
            },
        };
        let wait = e.on_alternative(
            &refused,
            &decision(),
            EscalationPolicy {
                continue_on_assumptions: false,
            },
        );
        let EscalationStep::HumanNeeded { notice } = wait else {
            panic!("waits for a person: {wait:?}")
        };
        assert!(notice.contains("/resume"), "{notice}");
        let go_on = e.on_alternative(
            &Assessment::Skip {
                reason: "low".into(),
            },
            &decision(),
            EscalationPolicy::from_config(&ReplanningConfig::default()),
        );
        assert_eq!(
            go_on,
            EscalationStep::ContinueOnAssumptions {
                notice: "A replan in the Execution phase is needed but cannot be executed: the limit \
                         of 2 execution replans has been reached \
                         (`planning.replanning.execution.max_partial_replans`). No alternative was \
                         found within the remaining budget. Continuing with the current plan on the \
                         stated assumptions; comment `/replan` or `/stop` to steer."
                    .into(),
                assumptions: vec!["tests can be skipped offline".into()],
            }
        );
    }
}
