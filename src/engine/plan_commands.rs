//! `/approve [hash]` and `/reject [reason]` while a plan waits for approval (issue 39). The
//! approval entry is written here and only here, from the gated command of a person: it names
//! the version and hash of the plan the request named, so exactly that plan runs.

use super::batch::Batch;
use super::cx::StepEffects;
use crate::history::entry::{ApprovalDecision, EntryBody, RunStatus};
use crate::history::plan_approval::named_plan;
use crate::history::state::Pending;
use crate::plan::hash::{names, short};
use crate::report::Notice;

/// The pending plan approval: its request id, subject, version and full hash.
pub struct PendingPlan {
    pub request_id: String,
    pub subject: serde_json::Value,
    pub version: u32,
    pub hash: String,
}

pub fn pending_plan(batch: &Batch) -> Option<PendingPlan> {
    let Some(Pending::Approval {
        request_id,
        subject,
        ..
    }) = &batch.state.pending
    else {
        return None;
    };
    let (version, hash) = named_plan(subject)?;
    Some(PendingPlan {
        request_id: request_id.clone(),
        subject: subject.clone(),
        version,
        hash: hash.to_owned(),
    })
}

/// `/approve [hash]` on a waiting plan. A hash that does not name it gets one reply naming the
/// current hash and changes nothing.
pub fn approve(
    batch: &mut Batch,
    plan: PendingPlan,
    author: &str,
    hash: Option<&str>,
) -> StepEffects {
    let current = short(&plan.hash).to_owned();
    if let Some(given) = hash
        && !names(given, &plan.hash)
    {
        return StepEffects {
            notices: vec![Notice::Info {
                text: format!(
                    "`/approve {given}` does not name the plan waiting for approval: plan v{} is `{current}`. Nothing was approved; read it in the checklist and reply `/approve {current}`.",
                    plan.version
                ),
            }],
            end: Some(RunStatus::WaitingForApproval),
        };
    }
    batch.push(EntryBody::Approval {
        request_id: plan.request_id,
        decision: Some(ApprovalDecision::Approved),
        author: Some(author.to_owned()),
        reason: None,
        subject: plan.subject,
    });
    StepEffects::default()
}

/// `/reject [reason]` on a waiting plan: the rejection, then a replan with the reason.
pub fn reject(batch: &mut Batch, plan: PendingPlan, author: &str, reason: Option<&str>) {
    batch.push(EntryBody::Approval {
        request_id: plan.request_id,
        decision: Some(ApprovalDecision::Rejected),
        author: Some(author.to_owned()),
        reason: reason.map(str::to_owned),
        subject: plan.subject,
    });
}

/// `/approve <hash>` when what waits is not a plan (or nothing waits): a hash names a plan, so
/// nothing is approved.
pub fn hash_without_plan(given: &str) -> StepEffects {
    StepEffects::default().notice(Notice::Info {
        text: format!(
            "`/approve {given}` names a plan, but no plan is waiting for approval. Nothing was approved."
        ),
    })
}
