//! How much of the cycle one process runs. A CI fan-out (`replan run --stage …`) splits the
//! cycle over jobs: the plan job stops where a subtask would start, each subtask job runs only its
//! own subtask, and the join job runs the rest. The driver asks [`Scope::limit`] once per step.

use super::step::{Step, next_runnable_all};
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
                    .is_some_and(|plan| next_runnable_all(plan, state).contains(id));
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
