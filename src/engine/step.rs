//! The pure heart of the cycle: what to do next, decided from the replayed state alone. The
//! driver performs the step, appends its entries and asks again, so a cycle killed after any
//! entry continues from the file exactly where it stopped.

use crate::config::{Config, PlanningMode};
use crate::engine::EngineInput;
use crate::history::SessionState;
use crate::history::entry::{RefinementVerdict, RunStatus};
use crate::history::state::{Pending, PlanningWork};
use crate::plan::{Phase, Plan, Subtask, TaskState};
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Ask the planner for phases `first..=last` (all three in single-call mode).
    Draft { first: Phase, last: Phase },
    /// Re-ask the planner once with the validation problems of the draft.
    RedraftInvalid,
    /// The seed 000 replan decision on the draft; `ActionSequence` in single-call mode covers the
    /// whole plan.
    DecidePlanning(Phase),
    /// The plan is still invalid after the re-ask and the decision did not replan it.
    InvalidPlan,
    /// Seed 002 quality judge on the draft.
    QualityJudge,
    /// Seed 002 feedback-based replan of the draft.
    Refine,
    /// Make the draft the current plan (`plan` or `revision` entry plus carried progress).
    CommitPlan,
    /// One attempt at a subtask: tool-calling loop, execution decisions, task judge.
    Execute(String),
    /// Seed 000 §8: the monitoring decision once every task is finished.
    FinalReview,
    /// Completion summary (seed 001).
    Complete,
    /// Planning disabled (`planning.enabled: false`): one plain tool-calling loop.
    Legacy,
    /// End the run with this status (waiting, blocked, done, human needed).
    Finish(RunStatus),
    /// `planning.approval`: ask a person to approve the current plan before a subtask runs.
    AwaitPlanApproval,
}

pub fn next_step(state: &SessionState, input: &EngineInput, cfg: &Config) -> Step {
    match &state.pending {
        Some(Pending::Question { .. }) => return Step::Finish(RunStatus::WaitingForAnswer),
        Some(Pending::Approval { .. }) => return Step::Finish(RunStatus::WaitingForApproval),
        None => {}
    }
    if !cfg.planning.enabled && state.plan.is_none() && state.planning.is_none() {
        return match &state.completion {
            Some(_) => Step::Finish(RunStatus::Completed),
            None => Step::Legacy,
        };
    }
    if let Some(work) = &state.planning {
        return planning_step(work, cfg);
    }
    if let Some(completion) = &state.completion {
        // `requires_human_intervention`, `unverified`, `no_changes`: the end the completion
        // recorded; a summary without one completed.
        let status = completion
            .status
            .as_deref()
            .and_then(|s| serde_json::from_value(serde_json::Value::from(s)).ok())
            .unwrap_or(RunStatus::Completed);
        return Step::Finish(status);
    }
    let Some(plan) = &state.plan else {
        return match input {
            EngineInput::Start { .. } | EngineInput::Replan { .. } | EngineInput::Answer { .. } => {
                planning_step(&PlanningWork::default(), cfg)
            }
            _ => Step::Finish(state.last_status.unwrap_or(RunStatus::Stopped)),
        };
    };
    if let Some(id) = next_runnable(plan, state) {
        if super::plan_gate::approval_needed(state, cfg.planning.approval).is_some() {
            return Step::AwaitPlanApproval;
        }
        return Step::Execute(id);
    }
    let unfinished = plan
        .subtask_ids()
        .any(|id| !state.task_state(id).is_terminal());
    if unfinished {
        return Step::Finish(RunStatus::Blocked);
    }
    if !state.final_review_done {
        return Step::FinalReview;
    }
    Step::Complete
}

fn planning_step(w: &PlanningWork, cfg: &Config) -> Step {
    let phases = [
        (Phase::GoalUnderstanding, w.goal.is_some()),
        (Phase::TaskDecomposition, w.decomposition.is_some()),
        (Phase::ActionSequence, w.actions.is_some()),
    ];
    match cfg.planning.mode {
        PlanningMode::SingleCall => {
            if let Some((first, _)) = phases.iter().find(|(_, present)| !present) {
                return Step::Draft {
                    first: *first,
                    last: Phase::ActionSequence,
                };
            }
        }
        PlanningMode::PerPhase => {
            for (phase, present) in phases {
                if !present {
                    return Step::Draft {
                        first: phase,
                        last: phase,
                    };
                }
                if !w.decided.contains(&phase) && phase != Phase::ActionSequence {
                    return Step::DecidePlanning(phase);
                }
            }
        }
    }
    if !w.problems.is_empty() && w.refinement.is_empty() {
        if w.validation_retries == 0 {
            return Step::RedraftInvalid;
        }
        if !w.decided.contains(&Phase::ActionSequence) {
            return Step::DecidePlanning(Phase::ActionSequence);
        }
        return Step::InvalidPlan;
    }
    if !w.decided.contains(&Phase::ActionSequence) {
        return Step::DecidePlanning(Phase::ActionSequence);
    }
    if cfg.refinement.enabled {
        let replans_asked = w
            .refinement
            .iter()
            .filter(|r| r.verdict == RefinementVerdict::Replan)
            .count();
        return match w.refinement.last().map(|r| r.verdict) {
            None => Step::QualityJudge,
            Some(RefinementVerdict::Accept) => Step::CommitPlan,
            Some(RefinementVerdict::Reject) => Step::Finish(RunStatus::RequiresHumanIntervention),
            Some(RefinementVerdict::Replan) if (w.refinement_drafts as usize) < replans_asked => {
                Step::Refine
            }
            Some(RefinementVerdict::Replan) => Step::QualityJudge,
        };
    }
    Step::CommitPlan
}

/// What the driver performs now: `next_step`, or, when that is a subtask and
/// `execution.max_parallel` allows more, the subtasks that can run now and are not `busy`
/// (started beside others and not yet appended), in plan order, at most `max_parallel`. Empty
/// when subtasks are busy and no other may start.
pub fn steps_now(
    state: &SessionState,
    input: &EngineInput,
    cfg: &Config,
    busy: &[String],
) -> Vec<Step> {
    let step = next_step(state, input, cfg);
    let (Step::Execute(_), Some(plan)) = (&step, &state.plan) else {
        return if busy.is_empty() { vec![step] } else { vec![] };
    };
    runnable(plan, state)
        .into_iter()
        .filter(|id| !busy.contains(id))
        .take(cfg.execution.max_parallel.max(1) as usize)
        .map(Step::Execute)
        .collect()
}

/// The first subtask in dependency order that can run now.
pub fn next_runnable(plan: &Plan, state: &SessionState) -> Option<String> {
    runnable(plan, state).into_iter().next()
}

/// Every subtask that can run now (its dependencies done), in dependency order.
pub fn runnable(plan: &Plan, state: &SessionState) -> Vec<String> {
    let ordered = ordered_subtasks(plan);
    let known: HashSet<&str> = ordered.iter().map(|t| t.id.as_str()).collect();
    ordered
        .iter()
        .filter(|t| {
            matches!(
                state.task_state(&t.id),
                TaskState::Ready | TaskState::Running | TaskState::NeedsContinuation
            ) && t.dependencies.iter().all(|d| {
                matches!(state.task_state(d), TaskState::Done | TaskState::Cancelled)
                    || !known.contains(d.as_str())
            })
        })
        .map(|t| t.id.clone())
        .collect()
}

/// The plan's execution order, then any subtask it forgot, so nothing is silently skipped.
pub fn execution_order(plan: &Plan) -> Vec<String> {
    ordered_subtasks(plan)
        .into_iter()
        .map(|t| t.id.clone())
        .collect()
}

/// The subtasks in [`execution_order`]; an id the plan holds twice is its first subtask, as
/// [`Plan::subtask`] finds it. Linear in the plan's size: the driver asks on every step, and
/// nested lookups made it a visible share of a long cycle's overhead.
pub fn ordered_subtasks(plan: &Plan) -> Vec<&Subtask> {
    let subtasks = &plan.task_decomposition.subtasks;
    let mut by_id: HashMap<&str, &Subtask> = HashMap::with_capacity(subtasks.len());
    for t in subtasks {
        by_id.entry(t.id.as_str()).or_insert(t);
    }
    let mut placed: HashSet<&str> = HashSet::with_capacity(subtasks.len());
    let mut order = Vec::with_capacity(by_id.len());
    let listed = plan.action_plan.execution_order.iter().map(String::as_str);
    for id in listed.chain(subtasks.iter().map(|t| t.id.as_str())) {
        if let Some(t) = by_id.get(id)
            && placed.insert(id)
        {
            order.push(*t);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan_of as plan;

    fn with_states(states: &[(&str, TaskState)]) -> SessionState {
        SessionState::default().with_task_states(states)
    }

    #[test]
    fn the_order_lists_each_subtask_once_and_appends_the_forgotten_ones() {
        // `t4` is listed but not a subtask, `t2` listed twice, `t3` and `t5` never listed.
        let p = plan(
            &[("t1", &[]), ("t2", &[]), ("t3", &[]), ("t5", &[])],
            &["t2", "t4", "t1", "t2"],
        );
        assert_eq!(execution_order(&p), ["t2", "t1", "t3", "t5"]);
    }

    #[test]
    fn an_id_held_twice_is_its_first_subtask() {
        let mut p = plan(&[("t1", &[]), ("t1", &["t0"])], &["t1"]);
        p.task_decomposition.subtasks[0].description = "first".into();
        let ordered = ordered_subtasks(&p);
        assert_eq!(ordered.len(), 1);
        assert_eq!(ordered[0].description, "first");
    }

    #[test]
    fn runnable_subtasks_have_their_known_dependencies_done_or_cancelled() {
        let p = plan(
            &[
                ("a", &[]),
                ("b", &["a"]),
                ("c", &["gone"]),
                ("d", &["a", "e"]),
                ("e", &[]),
            ],
            &["e", "d", "c", "b", "a"],
        );
        let state = with_states(&[("a", TaskState::Done), ("e", TaskState::Cancelled)]);
        // An unknown dependency (`gone`) does not hold `c` back; finished tasks do not run again.
        assert_eq!(runnable(&p, &state), ["d", "c", "b"]);
        let state = with_states(&[("a", TaskState::Running)]);
        assert_eq!(runnable(&p, &state), ["e", "c", "a"]);
        assert_eq!(next_runnable(&p, &state).as_deref(), Some("e"));
    }
}
