//! Seed 000 §9.1 replan limits: which budget a decision spends and how much of each budget the
//! thread's history has already used. Counters are derived from the recorded decisions, never
//! stored, so a resumed run sees exactly what the earlier runs spent.

use super::levels::effective_type;
use super::loop_detect::trigger_key;
use crate::config::ReplanningConfig;
use crate::history::SessionState;
use crate::history::entry::DecisionRecord;
use crate::plan::{Phase, ReplanDecision, ReplanTrigger, ReplanType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One row of the §9.1 table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitBucket {
    /// Goal understanding: clarification requests (default 2).
    ClarificationRequests,
    /// Task decomposition: redecompositions (default 3).
    Redecompositions,
    /// Action sequence: regenerations (default 3).
    Regenerations,
    /// Execution: action retries (default 3).
    ActionRetries,
    /// Execution: partial replans (default 2).
    PartialReplans,
    /// Monitoring and reflection: plan revisions (default 2).
    PlanRevisions,
    /// Every executed replan (default 10).
    Total,
}

impl LimitBucket {
    pub const ALL: [LimitBucket; 7] = [
        LimitBucket::ClarificationRequests,
        LimitBucket::Redecompositions,
        LimitBucket::Regenerations,
        LimitBucket::ActionRetries,
        LimitBucket::PartialReplans,
        LimitBucket::PlanRevisions,
        LimitBucket::Total,
    ];

    /// Plural noun used in notices and prompts ("partial replans").
    pub fn label(self) -> &'static str {
        match self {
            LimitBucket::ClarificationRequests => "clarification requests",
            LimitBucket::Redecompositions => "task redecompositions",
            LimitBucket::Regenerations => "action sequence regenerations",
            LimitBucket::ActionRetries => "action retries",
            LimitBucket::PartialReplans => "execution replans",
            LimitBucket::PlanRevisions => "plan revisions",
            LimitBucket::Total => "replans in total",
        }
    }

    /// The configuration key that sets this limit, so a notice can tell people what to raise.
    pub fn config_key(self) -> &'static str {
        match self {
            LimitBucket::ClarificationRequests => {
                "planning.replanning.goal_understanding.max_clarification_requests"
            }
            LimitBucket::Redecompositions => {
                "planning.replanning.task_decomposition.max_redecomposition_attempts"
            }
            LimitBucket::Regenerations => {
                "planning.replanning.action_sequence.max_regeneration_attempts"
            }
            LimitBucket::ActionRetries => "planning.replanning.execution.max_action_retries",
            LimitBucket::PartialReplans => "planning.replanning.execution.max_partial_replans",
            LimitBucket::PlanRevisions => "planning.replanning.reflection.max_plan_revisions",
            LimitBucket::Total => "planning.replanning.global.max_total_replans",
        }
    }
}

impl fmt::Display for LimitBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The per-phase budget a replan of type `t` decided in `phase` spends (besides [`LimitBucket::Total`],
/// which every executed replan spends).
///
/// The §9.1 table gives one budget per deciding phase, so the deciding phase chooses, with two
/// refinements: a clarification request spends the clarification budget wherever it is asked
/// (asking the user is the goal phase's action), and in execution a `retry` spends the retry
/// budget while every other execution replan (partial, full, or a level 3–5 return) spends the
/// partial-replan budget. A `goal_revision` decided in the goal phase is that phase's re-analysis
/// (§3.1 "明確化要求/再分析") and spends the clarification budget.
pub fn bucket_for(phase: Phase, t: ReplanType) -> LimitBucket {
    match (t, phase) {
        (ReplanType::ClarificationRequest, _) => LimitBucket::ClarificationRequests,
        (_, Phase::GoalUnderstanding) => LimitBucket::ClarificationRequests,
        (_, Phase::TaskDecomposition) => LimitBucket::Redecompositions,
        (_, Phase::ActionSequence) => LimitBucket::Regenerations,
        (ReplanType::Retry, Phase::Execution) => LimitBucket::ActionRetries,
        (_, Phase::Execution) => LimitBucket::PartialReplans,
        (_, Phase::Reflection) => LimitBucket::PlanRevisions,
    }
}

/// The configured limit of a bucket.
pub fn limit_for(bucket: LimitBucket, cfg: &ReplanningConfig) -> u32 {
    match bucket {
        LimitBucket::ClarificationRequests => cfg.goal_understanding.max_clarification_requests,
        LimitBucket::Redecompositions => cfg.task_decomposition.max_redecomposition_attempts,
        LimitBucket::Regenerations => cfg.action_sequence.max_regeneration_attempts,
        LimitBucket::ActionRetries => cfg.execution.max_action_retries,
        LimitBucket::PartialReplans => cfg.execution.max_partial_replans,
        LimitBucket::PlanRevisions => cfg.reflection.max_plan_revisions,
        LimitBucket::Total => cfg.global.max_total_replans,
    }
}

/// How much of each budget executed decisions have used, and how often each trigger key has led to
/// an executed replan (for loop detection).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplanCounters {
    pub clarification_requests: u32,
    pub redecompositions: u32,
    pub regenerations: u32,
    pub action_retries: u32,
    pub partial_replans: u32,
    pub plan_revisions: u32,
    pub total: u32,
    pub trigger_counts: BTreeMap<String, u32>,
}

impl ReplanCounters {
    /// Count every executed decision of the thread. Decisions that were overridden, skipped or are
    /// still waiting for `/approve` (`executed: false`) spend nothing, and neither do replans a
    /// person asked for (`trigger: human-request`): the limits stop the model from looping, not
    /// maintainers from steering.
    pub fn from_state(state: &SessionState) -> Self {
        Self::from_decisions(state.decisions.iter().map(|d| &**d))
    }

    /// Count a slice of decisions (e.g. only those since a person's `/resume`).
    pub fn from_decisions<'a>(decisions: impl IntoIterator<Item = &'a DecisionRecord>) -> Self {
        let mut c = Self::default();
        for d in decisions
            .into_iter()
            .filter(|d| d.executed && d.trigger != Some(ReplanTrigger::HumanRequest))
        {
            // Older records may lack the key; recompute it the same way the engine does.
            let key = if d.trigger_key.is_empty() {
                trigger_key(d.phase, &d.llm_decision)
            } else {
                d.trigger_key.clone()
            };
            c.record(d.phase, &d.llm_decision, &key);
        }
        c
    }

    /// Spend the budgets of one executed decision (keeps a running engine in step with history).
    pub fn record(&mut self, phase: Phase, decision: &ReplanDecision, trigger_key: &str) {
        let bucket = bucket_for(phase, effective_type(decision));
        *self.slot(bucket) += 1;
        self.total += 1;
        *self
            .trigger_counts
            .entry(trigger_key.to_string())
            .or_default() += 1;
    }

    pub fn used(&self, bucket: LimitBucket) -> u32 {
        match bucket {
            LimitBucket::ClarificationRequests => self.clarification_requests,
            LimitBucket::Redecompositions => self.redecompositions,
            LimitBucket::Regenerations => self.regenerations,
            LimitBucket::ActionRetries => self.action_retries,
            LimitBucket::PartialReplans => self.partial_replans,
            LimitBucket::PlanRevisions => self.plan_revisions,
            LimitBucket::Total => self.total,
        }
    }

    /// What is left of a bucket under `cfg` (0 when used up or over).
    pub fn remaining(&self, bucket: LimitBucket, cfg: &ReplanningConfig) -> u32 {
        limit_for(bucket, cfg).saturating_sub(self.used(bucket))
    }

    /// Executed replans caused by this trigger so far.
    pub fn trigger_count(&self, key: &str) -> u32 {
        self.trigger_counts.get(key).copied().unwrap_or(0)
    }

    fn slot(&mut self, bucket: LimitBucket) -> &mut u32 {
        match bucket {
            LimitBucket::ClarificationRequests => &mut self.clarification_requests,
            LimitBucket::Redecompositions => &mut self.redecompositions,
            LimitBucket::Regenerations => &mut self.regenerations,
            LimitBucket::ActionRetries => &mut self.action_retries,
            LimitBucket::PartialReplans => &mut self.partial_replans,
            LimitBucket::PlanRevisions => &mut self.plan_revisions,
            LimitBucket::Total => &mut self.total,
        }
    }
}

/// `Some(n)` when executing this replan would be the `n`-th for the same trigger and `n` exceeds
/// `same_trigger_max_count` (with the default 2: the third time). `None` when loop detection is
/// off or the trigger is still within its count.
pub fn loop_count(counters: &ReplanCounters, key: &str, cfg: &ReplanningConfig) -> Option<u32> {
    if !cfg.global.infinite_loop_detection {
        return None;
    }
    let next = counters.trigger_count(key) + 1;
    (next > cfg.global.same_trigger_max_count).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::DecisionResult;

    fn record(phase: Phase, t: ReplanType, executed: bool, key: &str) -> DecisionRecord {
        DecisionRecord {
            replan_id: "r".into(),
            phase,
            llm_decision: ReplanDecision {
                replan_needed: true,
                confidence: 0.9,
                replan_type: t,
                issues_found: vec!["tool missing".into()],
                ..Default::default()
            },
            confidence: 0.9,
            executed,
            override_reason: None,
            result: if executed {
                DecisionResult::Success
            } else {
                DecisionResult::Skipped
            },
            duration_ms: 1,
            restart_phase: None,
            trigger: None,
            trigger_key: key.into(),
            parse_error: None,
            raw_reply: None,
        }
    }

    #[test]
    fn default_limits_are_the_seed_table() {
        let cfg = ReplanningConfig::default();
        let limits: Vec<u32> = LimitBucket::ALL
            .iter()
            .map(|b| limit_for(*b, &cfg))
            .collect();
        assert_eq!(limits, vec![2, 3, 3, 3, 2, 2, 10]);
    }

    #[test]
    fn buckets_follow_the_deciding_phase() {
        use LimitBucket as B;
        for (phase, replan_type, bucket) in [
            (
                Phase::GoalUnderstanding,
                ReplanType::ClarificationRequest,
                B::ClarificationRequests,
            ),
            (
                Phase::GoalUnderstanding,
                ReplanType::GoalRevision,
                B::ClarificationRequests,
            ),
            (
                Phase::Execution,
                ReplanType::ClarificationRequest,
                B::ClarificationRequests,
            ),
            (
                Phase::TaskDecomposition,
                ReplanType::TaskRedecomposition,
                B::Redecompositions,
            ),
            (
                Phase::ActionSequence,
                ReplanType::ActionRegeneration,
                B::Regenerations,
            ),
            (Phase::Execution, ReplanType::Retry, B::ActionRetries),
            (
                Phase::Execution,
                ReplanType::PartialReplan,
                B::PartialReplans,
            ),
            (Phase::Execution, ReplanType::FullReplan, B::PartialReplans),
            (
                Phase::Execution,
                ReplanType::TaskRedecomposition,
                B::PartialReplans,
            ),
            (
                Phase::Reflection,
                ReplanType::PlanRevision,
                B::PlanRevisions,
            ),
        ] {
            assert_eq!(
                bucket_for(phase, replan_type),
                bucket,
                "{phase:?} {replan_type:?}"
            );
        }
    }

    #[test]
    fn counts_only_executed_decisions() {
        let state = SessionState {
            decisions: vec![
                record(Phase::Execution, ReplanType::Retry, true, "k1"),
                record(Phase::Execution, ReplanType::Retry, true, "k1"),
                record(Phase::Execution, ReplanType::PartialReplan, false, "k2"),
                record(
                    Phase::TaskDecomposition,
                    ReplanType::TaskRedecomposition,
                    true,
                    "k3",
                ),
                record(
                    Phase::GoalUnderstanding,
                    ReplanType::ClarificationRequest,
                    true,
                    "k4",
                ),
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
            ..Default::default()
        };
        let c = ReplanCounters::from_state(&state);
        assert_eq!(c.action_retries, 2);
        assert_eq!(c.partial_replans, 0);
        assert_eq!(c.redecompositions, 1);
        assert_eq!(c.clarification_requests, 1);
        assert_eq!(c.total, 4);
        assert_eq!(c.trigger_count("k1"), 2);
        assert_eq!(c.trigger_count("k2"), 0);
        let cfg = ReplanningConfig::default();
        assert_eq!(c.remaining(LimitBucket::ActionRetries, &cfg), 1);
        assert_eq!(c.remaining(LimitBucket::Total, &cfg), 6);
    }

    #[test]
    fn human_requested_replans_spend_no_budget() {
        let mut human = record(Phase::Execution, ReplanType::PartialReplan, true, "h");
        human.trigger = Some(ReplanTrigger::HumanRequest);
        let mut failed = record(Phase::Execution, ReplanType::PartialReplan, true, "f");
        failed.trigger = Some(ReplanTrigger::TaskFailed);
        let c = ReplanCounters::from_decisions([&human, &human, &failed]);
        assert_eq!((c.partial_replans, c.total), (1, 1));
        assert_eq!(c.trigger_count("h"), 0);
    }

    #[test]
    fn missing_trigger_keys_are_recomputed() {
        let r = record(Phase::Execution, ReplanType::Retry, true, "");
        let c = ReplanCounters::from_decisions([&r, &r]);
        let key = trigger_key(Phase::Execution, &r.llm_decision);
        assert_eq!(c.trigger_count(&key), 2);
    }

    #[test]
    fn third_time_exceeds_a_max_count_of_two() {
        let cfg = ReplanningConfig::default();
        let mut c = ReplanCounters::default();
        let d = ReplanDecision {
            replan_needed: true,
            confidence: 0.9,
            replan_type: ReplanType::PartialReplan,
            issues_found: vec!["tests fail".into()],
            ..Default::default()
        };
        let key = trigger_key(Phase::Execution, &d);
        assert_eq!(loop_count(&c, &key, &cfg), None);
        c.record(Phase::Execution, &d, &key);
        assert_eq!(loop_count(&c, &key, &cfg), None);
        c.record(Phase::Execution, &d, &key);
        assert_eq!(loop_count(&c, &key, &cfg), Some(3));
        let mut off = cfg.clone();
        off.global.infinite_loop_detection = false;
        assert_eq!(loop_count(&c, &key, &off), None);
    }
}
