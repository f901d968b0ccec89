//! Seed 000 §11.4.3: which task progress survives a replan, and the "Previous Progress" numbers of
//! the revised checklist.
//!
//! | replan type                                   | done tasks            |
//! |-----------------------------------------------|-----------------------|
//! | partial_replan, action_regeneration           | kept (seed table)     |
//! | retry, plan_revision, none                    | kept (same tasks)     |
//! | task_redecomposition, goal_revision,          | cleared (new plan)    |
//! | full_replan, clarification_request            |                       |
//!
//! Only `DONE` is carried, and only for a task whose id is still in the new plan; every other task
//! of the new plan starts `READY` (unchecked). A task that was running, blocked or waiting for
//! continuation starts again under the new plan.

use crate::history::SessionState;
use crate::plan::{Plan, ReplanType, TaskState};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarryOver {
    /// The state of every subtask of the new plan, in no particular order: `Done` or `Ready`.
    pub tasks: BTreeMap<String, TaskState>,
    /// "Previous Progress: done/total" of the old plan. Tasks replaced by a split count through
    /// their replacements only, so they are in neither number.
    pub previous_done: usize,
    pub previous_total: usize,
}

impl CarryOver {
    /// Tasks of the new plan that start checked.
    pub fn kept_done(&self) -> impl Iterator<Item = &str> {
        self.tasks
            .iter()
            .filter(|(_, s)| **s == TaskState::Done)
            .map(|(id, _)| id.as_str())
    }
}

/// Carry progress from `old_plan` (task states given by `state_of`) to `new_plan`.
pub fn carry_over(
    old_plan: &Plan,
    state_of: impl Fn(&str) -> TaskState,
    new_plan: &Plan,
    replan_type: ReplanType,
) -> CarryOver {
    let mut previous_done = 0;
    let mut previous_total = 0;
    for id in old_plan.subtask_ids() {
        match state_of(id) {
            TaskState::ReplacedByReplan => {}
            TaskState::Done => {
                previous_done += 1;
                previous_total += 1;
            }
            _ => previous_total += 1,
        }
    }
    let keep = replan_type.keeps_progress();
    let tasks = new_plan
        .subtask_ids()
        .map(|id| {
            let carried = keep && old_plan.subtask(id).is_some() && state_of(id) == TaskState::Done;
            let state = if carried {
                TaskState::Done
            } else {
                TaskState::Ready
            };
            (id.to_string(), state)
        })
        .collect();
    CarryOver {
        tasks,
        previous_done,
        previous_total,
    }
}

/// [`carry_over`] from the session's current plan and task states. An empty old plan when the
/// session has none.
pub fn carry_over_from_state(
    state: &SessionState,
    new_plan: &Plan,
    replan_type: ReplanType,
) -> CarryOver {
    let empty = Plan::default();
    let old = state.plan.as_deref().unwrap_or(&empty);
    carry_over(old, |id| state.task_state(id), new_plan, replan_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Subtask;

    fn plan(ids: &[&str]) -> Plan {
        let mut p = Plan::default();
        p.task_decomposition.subtasks = ids
            .iter()
            .map(|id| Subtask {
                id: id.to_string(),
                description: format!("do {id}"),
                ..Default::default()
            })
            .collect();
        p
    }

    fn state(old: &Plan, states: &[(&str, TaskState)]) -> SessionState {
        SessionState {
            plan: Some(std::sync::Arc::new(old.clone())),
            ..Default::default()
        }
        .with_task_states(states)
    }

    #[test]
    fn partial_replan_keeps_done_tasks_that_still_exist() {
        let old = plan(&["task_1", "task_2", "task_3", "task_4"]);
        let s = state(
            &old,
            &[
                ("task_1", TaskState::Done),
                ("task_2", TaskState::Done),
                ("task_3", TaskState::Blocked),
            ],
        );
        let new = plan(&["task_1", "task_2", "task_3_revised", "task_4_new"]);
        for t in [ReplanType::PartialReplan, ReplanType::ActionRegeneration] {
            let c = carry_over_from_state(&s, &new, t);
            assert_eq!(c.kept_done().collect::<Vec<_>>(), vec!["task_1", "task_2"]);
            assert_eq!(c.tasks["task_3_revised"], TaskState::Ready);
            assert_eq!(c.tasks["task_4_new"], TaskState::Ready);
            assert_eq!((c.previous_done, c.previous_total), (2, 4));
        }
    }

    #[test]
    fn a_blocked_task_kept_by_id_starts_again() {
        let old = plan(&["a", "b"]);
        let s = state(&old, &[("a", TaskState::Done), ("b", TaskState::Blocked)]);
        let c = carry_over_from_state(&s, &old, ReplanType::PartialReplan);
        assert_eq!(c.tasks["a"], TaskState::Done);
        assert_eq!(c.tasks["b"], TaskState::Ready);
    }

    #[test]
    fn redecomposition_goal_revision_and_full_replan_clear_progress() {
        let old = plan(&["task_1", "task_2"]);
        let s = state(&old, &[("task_1", TaskState::Done)]);
        for t in [
            ReplanType::TaskRedecomposition,
            ReplanType::GoalRevision,
            ReplanType::FullReplan,
        ] {
            let c = carry_over_from_state(&s, &old, t);
            assert_eq!(c.kept_done().count(), 0, "{t:?}");
            assert_eq!((c.previous_done, c.previous_total), (1, 2));
        }
    }

    #[test]
    fn replaced_tasks_are_not_counted_in_previous_progress() {
        let old = plan(&["a", "a_r1_1", "a_r1_2", "a_r1_3"]);
        let s = state(
            &old,
            &[
                ("a", TaskState::ReplacedByReplan),
                ("a_r1_1", TaskState::Done),
            ],
        );
        let c = carry_over_from_state(&s, &old, ReplanType::PlanRevision);
        assert_eq!((c.previous_done, c.previous_total), (1, 3));
    }

    #[test]
    fn no_previous_plan_means_zero_of_zero() {
        let c = carry_over_from_state(
            &SessionState::default(),
            &plan(&["x"]),
            ReplanType::PartialReplan,
        );
        assert_eq!((c.previous_done, c.previous_total), (0, 0));
        assert_eq!(c.tasks["x"], TaskState::Ready);
    }
}
