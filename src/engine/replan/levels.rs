//! Where a replan sends the cycle back to: seed 000 §7.4 levels, the §2.6 type table, and the rule
//! that resolves one target phase from a decision whose fields may disagree.

use crate::plan::{Phase, ReplanDecision, ReplanType};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Seed 000 §7.4 replan levels, 1 (cheapest) to 5 (most drastic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplanLevel {
    /// 1: retry the same action (transient error).
    Retry = 1,
    /// 2: re-plan the actions of the remaining tasks (action-specific problem).
    PartialReplan = 2,
    /// 3: regenerate the whole action sequence (tool unavailable).
    ActionRegeneration = 3,
    /// 4: decompose the tasks again (preconditions collapsed).
    TaskRedecomposition = 4,
    /// 5: understand the goal again (requirements were misread).
    GoalRecheck = 5,
}

impl ReplanLevel {
    pub const ALL: [ReplanLevel; 5] = [
        ReplanLevel::Retry,
        ReplanLevel::PartialReplan,
        ReplanLevel::ActionRegeneration,
        ReplanLevel::TaskRedecomposition,
        ReplanLevel::GoalRecheck,
    ];

    /// `None` for anything outside 1..=5: the model's level is then ignored, not clamped.
    pub fn from_number(n: u8) -> Option<ReplanLevel> {
        ReplanLevel::ALL
            .get(usize::from(n).checked_sub(1)?)
            .copied()
    }

    pub fn number(self) -> u8 {
        self as u8
    }

    /// The phase the cycle re-enters for this level (§7.4). Level 1 stays in execution and runs
    /// the same action again; level 2 re-plans only the actions of the tasks not yet done.
    pub fn target_phase(self) -> Phase {
        match self {
            ReplanLevel::Retry => Phase::Execution,
            ReplanLevel::PartialReplan | ReplanLevel::ActionRegeneration => Phase::ActionSequence,
            ReplanLevel::TaskRedecomposition => Phase::TaskDecomposition,
            ReplanLevel::GoalRecheck => Phase::GoalUnderstanding,
        }
    }

    /// The replan type that matches the level.
    pub fn replan_type(self) -> ReplanType {
        match self {
            ReplanLevel::Retry => ReplanType::Retry,
            ReplanLevel::PartialReplan => ReplanType::PartialReplan,
            ReplanLevel::ActionRegeneration => ReplanType::ActionRegeneration,
            ReplanLevel::TaskRedecomposition => ReplanType::TaskRedecomposition,
            ReplanLevel::GoalRecheck => ReplanType::GoalRevision,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            ReplanLevel::Retry => "Retry",
            ReplanLevel::PartialReplan => "Partial replan",
            ReplanLevel::ActionRegeneration => "Action sequence regeneration",
            ReplanLevel::TaskRedecomposition => "Task redecomposition",
            ReplanLevel::GoalRecheck => "Goal re-check",
        }
    }
}

impl fmt::Display for ReplanLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level {} ({})", self.number(), self.title())
    }
}

/// The §2.6 table: the phase in which a replan type is decided ("対象フェーズ"). `None` for
/// `none`; `retry` is an execution decision (§7.5).
pub fn decided_in(t: ReplanType) -> Option<Phase> {
    match t {
        ReplanType::None => None,
        ReplanType::ClarificationRequest | ReplanType::GoalRevision => {
            Some(Phase::GoalUnderstanding)
        }
        ReplanType::TaskRedecomposition => Some(Phase::TaskDecomposition),
        ReplanType::ActionRegeneration => Some(Phase::ActionSequence),
        ReplanType::Retry | ReplanType::PartialReplan | ReplanType::FullReplan => {
            Some(Phase::Execution)
        }
        ReplanType::PlanRevision => Some(Phase::Reflection),
    }
}

/// The phase the cycle re-enters for a replan type.
///
/// - `partial_replan` re-plans the remaining actions (level 2 → action sequence).
/// - `full_replan` keeps the goal understanding (only `goal_revision` re-reads the goal) and
///   rebuilds the plan from task decomposition.
/// - `plan_revision` is written by the reflection phase itself (seed 001 §2.5), after which
///   execution resumes with the revised plan.
pub fn returns_to(t: ReplanType) -> Option<Phase> {
    match t {
        ReplanType::None => None,
        ReplanType::Retry => Some(Phase::Execution),
        ReplanType::ClarificationRequest | ReplanType::GoalRevision => {
            Some(Phase::GoalUnderstanding)
        }
        ReplanType::TaskRedecomposition | ReplanType::FullReplan => Some(Phase::TaskDecomposition),
        ReplanType::ActionRegeneration | ReplanType::PartialReplan => Some(Phase::ActionSequence),
        ReplanType::PlanRevision => Some(Phase::Reflection),
    }
}

/// Types whose target is fixed: an explicit `target_phase` that differs from it contradicts the
/// type. `partial_replan` and `full_replan` may reasonably restart from several phases (the
/// seed's own §2.4 example pairs `partial_replan` with `task_decomposition`).
fn fixed_target(t: ReplanType) -> Option<Phase> {
    match t {
        ReplanType::Retry => Some(Phase::Execution),
        ReplanType::ClarificationRequest | ReplanType::GoalRevision => {
            Some(Phase::GoalUnderstanding)
        }
        ReplanType::TaskRedecomposition => Some(Phase::TaskDecomposition),
        ReplanType::ActionRegeneration => Some(Phase::ActionSequence),
        ReplanType::None
        | ReplanType::PartialReplan
        | ReplanType::FullReplan
        | ReplanType::PlanRevision => None,
    }
}

/// The replan type the engine acts on. A decision that asks the user questions without naming a
/// type is a clarification request; a type of `none` with a valid level takes the level's type.
pub fn effective_type(d: &ReplanDecision) -> ReplanType {
    match d.replan_type {
        ReplanType::None if d.clarification_needed && !d.questions().is_empty() => {
            ReplanType::ClarificationRequest
        }
        ReplanType::None => d
            .replan_level
            .and_then(ReplanLevel::from_number)
            .map_or(ReplanType::None, ReplanLevel::replan_type),
        t => t,
    }
}

/// Which field of the decision decided the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    TargetPhase,
    Level,
    Type,
    /// Nothing usable: re-run the phase that was just judged.
    CurrentPhase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedTarget {
    pub phase: Phase,
    pub source: TargetSource,
    /// The decision's level when it was 1..=5.
    pub level: Option<ReplanLevel>,
}

fn order(p: Phase) -> usize {
    Phase::ALL.iter().position(|x| *x == p).unwrap_or(0)
}

/// Resolve the phase a decision made in `current` sends the cycle back to.
///
/// Rule, first match wins:
/// 1. `target_phase` when it is consistent: it does not lie after `current` (a replan only goes
///    back, except `plan_revision`, which the reflection phase writes itself) and it equals the
///    fixed target of the type when the type has one (retry, clarification, goal revision,
///    redecomposition, regeneration).
/// 2. `replan_level` when it is 1..=5 (§7.4 table);
/// 3. otherwise the type (§2.6, see [`returns_to`]), using [`effective_type`];
/// 4. the current phase, when neither gives a phase or the phase of step 2/3 lies after `current`
///    (a level-1 retry asked for during task decomposition re-runs task decomposition).
pub fn resolve_target(d: &ReplanDecision, current: Phase) -> ResolvedTarget {
    let level = d.replan_level.and_then(ReplanLevel::from_number);
    let t = effective_type(d);
    if let Some(p) = d.target_phase {
        let goes_back = order(p) <= order(current) || t == ReplanType::PlanRevision;
        let matches_type = fixed_target(t).is_none_or(|fixed| fixed == p);
        if goes_back && matches_type {
            return ResolvedTarget {
                phase: p,
                source: TargetSource::TargetPhase,
                level,
            };
        }
    }
    let candidate = level
        .map(|l| (l.target_phase(), TargetSource::Level))
        .or_else(|| returns_to(t).map(|p| (p, TargetSource::Type)));
    match candidate {
        Some((p, source)) if order(p) <= order(current) || t == ReplanType::PlanRevision => {
            ResolvedTarget {
                phase: p,
                source,
                level,
            }
        }
        _ => ResolvedTarget {
            phase: current,
            source: TargetSource::CurrentPhase,
            level,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(t: ReplanType, target: Option<Phase>, level: Option<u8>) -> ReplanDecision {
        ReplanDecision {
            replan_needed: true,
            confidence: 0.9,
            replan_type: t,
            target_phase: target,
            replan_level: level,
            ..Default::default()
        }
    }

    #[test]
    fn levels_map_to_the_seed_table_phases() {
        let phases: Vec<Phase> = ReplanLevel::ALL.iter().map(|l| l.target_phase()).collect();
        assert_eq!(
            phases,
            vec![
                Phase::Execution,
                Phase::ActionSequence,
                Phase::ActionSequence,
                Phase::TaskDecomposition,
                Phase::GoalUnderstanding
            ]
        );
        assert_eq!(ReplanLevel::from_number(0), None);
        assert_eq!(ReplanLevel::from_number(6), None);
        assert_eq!(
            ReplanLevel::from_number(4),
            Some(ReplanLevel::TaskRedecomposition)
        );
        assert_eq!(ReplanLevel::GoalRecheck.number(), 5);
    }

    #[test]
    fn type_table_of_section_2_6() {
        assert_eq!(
            decided_in(ReplanType::ClarificationRequest),
            Some(Phase::GoalUnderstanding)
        );
        assert_eq!(
            decided_in(ReplanType::GoalRevision),
            Some(Phase::GoalUnderstanding)
        );
        assert_eq!(
            decided_in(ReplanType::TaskRedecomposition),
            Some(Phase::TaskDecomposition)
        );
        assert_eq!(
            decided_in(ReplanType::ActionRegeneration),
            Some(Phase::ActionSequence)
        );
        assert_eq!(
            decided_in(ReplanType::PartialReplan),
            Some(Phase::Execution)
        );
        assert_eq!(decided_in(ReplanType::FullReplan), Some(Phase::Execution));
        assert_eq!(
            decided_in(ReplanType::PlanRevision),
            Some(Phase::Reflection)
        );
        assert_eq!(decided_in(ReplanType::None), None);
    }

    #[test]
    fn explicit_target_wins_when_consistent() {
        // The seed's own §2.4 example: partial_replan, task_decomposition, level 2.
        let d = decision(
            ReplanType::PartialReplan,
            Some(Phase::TaskDecomposition),
            Some(2),
        );
        let r = resolve_target(&d, Phase::Execution);
        assert_eq!(r.phase, Phase::TaskDecomposition);
        assert_eq!(r.source, TargetSource::TargetPhase);
        assert_eq!(r.level, Some(ReplanLevel::PartialReplan));
    }

    #[test]
    fn target_contradicting_a_fixed_type_falls_back_to_level() {
        let d = decision(
            ReplanType::TaskRedecomposition,
            Some(Phase::GoalUnderstanding),
            Some(4),
        );
        let r = resolve_target(&d, Phase::Execution);
        assert_eq!(r.phase, Phase::TaskDecomposition);
        assert_eq!(r.source, TargetSource::Level);
    }

    #[test]
    fn target_after_the_current_phase_is_ignored() {
        let d = decision(ReplanType::PartialReplan, Some(Phase::Execution), None);
        let r = resolve_target(&d, Phase::TaskDecomposition);
        assert_eq!(
            (r.phase, r.source),
            (Phase::TaskDecomposition, TargetSource::CurrentPhase)
        );
        let retry_while_planning = decision(ReplanType::None, None, Some(1));
        let r = resolve_target(&retry_while_planning, Phase::ActionSequence);
        assert_eq!(
            (r.phase, r.source),
            (Phase::ActionSequence, TargetSource::CurrentPhase)
        );
    }

    #[test]
    fn level_then_type_then_current_phase() {
        let by_level = decision(ReplanType::None, None, Some(3));
        assert_eq!(
            resolve_target(&by_level, Phase::Execution).phase,
            Phase::ActionSequence
        );
        let by_type = decision(ReplanType::GoalRevision, None, Some(9));
        let r = resolve_target(&by_type, Phase::Execution);
        assert_eq!(
            (r.phase, r.source),
            (Phase::GoalUnderstanding, TargetSource::Type)
        );
        let full = decision(ReplanType::FullReplan, None, None);
        assert_eq!(
            resolve_target(&full, Phase::Execution).phase,
            Phase::TaskDecomposition
        );
        let nothing = decision(ReplanType::None, None, None);
        let r = resolve_target(&nothing, Phase::ActionSequence);
        assert_eq!(
            (r.phase, r.source),
            (Phase::ActionSequence, TargetSource::CurrentPhase)
        );
    }

    #[test]
    fn questions_without_a_type_are_a_clarification_request() {
        let mut d = decision(ReplanType::None, None, None);
        d.clarification_needed = true;
        d.clarification_questions = vec!["Which branch?".into()];
        assert_eq!(effective_type(&d), ReplanType::ClarificationRequest);
        assert_eq!(
            resolve_target(&d, Phase::GoalUnderstanding).phase,
            Phase::GoalUnderstanding
        );
        d.clarification_questions.clear();
        assert_eq!(effective_type(&d), ReplanType::None);
        // A weak model's copy of the format's example question asks nothing (a SmolLM2 run
        // stopped to ask it right after planning).
        d.clarification_questions = vec!["Question for the user".into(), " ".into()];
        assert_eq!(effective_type(&d), ReplanType::None);
    }

    #[test]
    fn plan_revision_may_target_reflection_from_execution() {
        let d = decision(ReplanType::PlanRevision, Some(Phase::Reflection), None);
        let r = resolve_target(&d, Phase::Execution);
        assert_eq!(
            (r.phase, r.source),
            (Phase::Reflection, TargetSource::TargetPhase)
        );
    }
}
