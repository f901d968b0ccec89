//! How much of the cycle one process runs. A CI fan-out (`replan run --stage …`) splits the
//! cycle over jobs: the plan job stops where a subtask would start, each subtask job runs only its
//! own subtask, and the join job runs the rest. The driver asks [`Scope::limit`] once per step.

use super::step::{Step, runnable};
use crate::history::SessionState;
use crate::history::entry::RunStatus;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// The whole cycle (a plain run).
    #[default]
    Whole,
    /// Plan, decide and refine; stop before the first subtask would execute.
    UntilExecution,
    /// Attempts at this one subtask (its decisions, judge and retries); stop at anything else.
    Subtask(String),
}

impl Scope {
    /// The step to perform within this scope: `step` itself, the scope's own subtask in place of
    /// another one, or a stop ([`RunStatus::FannedOut`]) where other jobs take over.
    pub fn limit(&self, step: Step, state: &SessionState) -> Step {
        match (self, step) {
            (Scope::Whole, step) | (_, step @ Step::Finish(_)) => step,
            (Scope::UntilExecution, Step::Execute(_)) => Step::Finish(RunStatus::FannedOut),
            (Scope::UntilExecution, step) => step,
            (Scope::Subtask(id), Step::Execute(_)) => {
                let runnable = state
                    .plan
                    .as_ref()
                    .is_some_and(|plan| runnable(plan, state).contains(id));
                if runnable {
                    Step::Execute(id.clone())
                } else {
                    Step::Finish(RunStatus::FannedOut)
                }
            }
            (Scope::Subtask(_), _) => Step::Finish(RunStatus::FannedOut),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Phase;
    use crate::plan::{Plan, Subtask, TaskDecomposition, TaskState};

    /// task_1 and task_2 independent, task_3 after both; task_1 already done.
    fn state() -> SessionState {
        let subtask = |id: &str, deps: &[&str]| Subtask {
            id: id.into(),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            ..Default::default()
        };
        let mut state = SessionState {
            plan: Some(std::sync::Arc::new(Plan {
                task_decomposition: TaskDecomposition {
                    reasoning: String::new(),
                    subtasks: vec![
                        subtask("task_1", &[]),
                        subtask("task_2", &[]),
                        subtask("task_3", &["task_1", "task_2"]),
                    ],
                },
                ..Default::default()
            })),
            ..SessionState::default()
        };
        state.tasks.entry("task_1".into()).or_default().state = TaskState::Done;
        state
    }

    #[test]
    fn the_plan_stage_stops_before_any_subtask_and_plans_as_usual() {
        let until = Scope::UntilExecution;
        let s = state();
        assert_eq!(
            until.limit(Step::Execute("task_2".into()), &s),
            Step::Finish(RunStatus::FannedOut)
        );
        assert_eq!(until.limit(Step::QualityJudge, &s), Step::QualityJudge);
        assert_eq!(until.limit(Step::Complete, &s), Step::Complete);
        let draft = Step::Draft {
            first: Phase::GoalUnderstanding,
            last: Phase::ActionSequence,
        };
        assert_eq!(Scope::Whole.limit(draft.clone(), &s), draft);
    }

    #[test]
    fn a_subtask_stage_runs_its_own_subtask_and_nothing_else() {
        let s = state();
        let own = Scope::Subtask("task_2".into());
        // The driver would pick the first ready subtask; the job runs its own.
        assert_eq!(
            own.limit(Step::Execute("task_1".into()), &s),
            Step::Execute("task_2".into())
        );
        assert_eq!(
            own.limit(Step::FinalReview, &s),
            Step::Finish(RunStatus::FannedOut)
        );
        let waiting = Scope::Subtask("task_3".into());
        assert_eq!(
            waiting.limit(Step::Execute("task_2".into()), &s),
            Step::Finish(RunStatus::FannedOut)
        );
        assert_eq!(
            own.limit(Step::Finish(RunStatus::Blocked), &s),
            Step::Finish(RunStatus::Blocked)
        );
    }
}
