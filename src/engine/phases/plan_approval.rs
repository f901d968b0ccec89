//! `planning.approval`: the current plan waits for a person. The request is an `approval` entry
//! naming the plan's version and hash; the checklist and a notice show both, and the scope diff
//! when a replan widened the approved scope.

use crate::engine::batch::Batch;
use crate::engine::cx::{Cx, StepEffects};
use crate::engine::plan_gate::approval_needed;
use crate::history::entry::{EntryBody, RunStatus};
use crate::history::plan_approval::subject;
use crate::plan::hash::short;
use crate::report::Notice;

pub fn request(cx: &Cx<'_>, batch: &mut Batch) -> StepEffects {
    let Some(request) = approval_needed(&batch.state, cx.cfg().planning.approval) else {
        return StepEffects::default();
    };
    let short_hash = short(&request.hash).to_owned();
    batch.push(EntryBody::Approval {
        request_id: format!("plan-v{}-{short_hash}", request.version),
        decision: None,
        author: None,
        reason: None,
        subject: subject(request.version, &request.hash, request.scope.as_ref()),
    });
    let scope_diff = request
        .scope
        .as_ref()
        .filter(|diff| diff.widens())
        .map(|diff| diff.markdown());
    StepEffects {
        notices: vec![Notice::PlanApproval {
            version: request.version,
            short_hash,
            scope_diff,
        }],
        end: Some(RunStatus::WaitingForApproval),
    }
}
