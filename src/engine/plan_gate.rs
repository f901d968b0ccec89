//! `planning.approval` (issue 39): whether the current plan may run or waits for a person.
//! `plan`: every plan runs only once a person approved exactly it (its hash). `scope`: a plan
//! runs unless it widens the scope of the plan approved last (the thread's first plan when
//! nobody approved one yet). Pure: decided from the replayed state and the mode alone.

use crate::config::ApprovalMode;
use crate::history::SessionState;
use crate::plan::hash::plan_hash;
use crate::plan::scope::{PlanScope, ScopeDiff};

/// The plan a person is asked to approve.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanApprovalRequest {
    pub version: u32,
    pub hash: String,
    /// The scope against the plan approved last (or the first plan), when there is one.
    pub scope: Option<ScopeDiff>,
}

/// `Some` when the current plan must wait for `/approve` before a subtask runs.
pub fn approval_needed(state: &SessionState, mode: ApprovalMode) -> Option<PlanApprovalRequest> {
    if mode == ApprovalMode::Never {
        return None;
    }
    let plan = state.plan.as_ref()?;
    let hash = plan_hash(plan);
    let approved = state.approved_plan.as_ref();
    if approved.is_some_and(|a| a.hash == hash) {
        return None;
    }
    let baseline = approved
        .map(|a| a.plan.clone())
        .or_else(|| state.plan_history.first().map(|p| p.plan.clone()));
    let scope = baseline
        .filter(|base| !std::sync::Arc::ptr_eq(base, plan) && **base != **plan)
        .map(|base| PlanScope::of(&base).diff(&PlanScope::of(plan)));
    let ask = match mode {
        ApprovalMode::Never => false,
        ApprovalMode::Plan => true,
        ApprovalMode::Scope => scope.as_ref().is_some_and(ScopeDiff::widens),
    };
    ask.then_some(PlanApprovalRequest {
        version: state.plan_version,
        hash,
        scope,
    })
}
