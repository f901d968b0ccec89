//! The seeds' JSON formats as serde types. They read and write exactly the shapes the seeds show.

mod action_plan;
mod completion;
mod decision;
mod decomposition;
mod goal;
mod phase;
#[allow(clippy::module_inception)]
mod plan;
pub(crate) mod ranged;
mod reflection;
mod task_state;

pub use action_plan::{ActionPlan, PlannedAction};
pub use completion::{Completion, CompletionSummary, ReviewAnswer};
pub use decision::{
    ErrorClassification, EvaluationResult, ReplanDecision, ReplanDecisionResponse, ReplanTrigger,
    ReplanType, RevisionScope,
};
pub use decomposition::{Complexity, Subtask, TaskDecomposition};
pub use goal::{CriterionProof, GoalUnderstanding};
pub use phase::Phase;
pub use plan::{ExecutionResponse, FunctionCall, Plan, PlanningError, PlanningResponse};
pub use reflection::{
    PlanRevision, Reflection, ReflectionResponse, ReflectionStatus, RevisionChange,
};
pub use task_state::{ReplanningInfo, TaskState};
