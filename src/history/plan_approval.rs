//! A person's approval of a plan (issue 39, `planning.approval`): an `approval` entry whose
//! subject is `{"kind": "plan", "version": N, "hash": "<sha-256>"}`. Replay honours it only for
//! the plan it names: the version and hash must be those of the plan current when the entry
//! applies, so an approval of any other plan (stale, forged, or of a plan written after it)
//! approves nothing. Where such an entry may come from is the command handler's and the bundle
//! vet's rule: only a gated `/approve` comment.

use crate::plan::Plan;
use crate::plan::hash::plan_hash;
use crate::plan::scope::ScopeDiff;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;

pub const SUBJECT_KIND: &str = "plan";

/// The plan a person approved, and who and when.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovedPlan {
    pub version: u32,
    pub hash: String,
    pub author: String,
    pub at: DateTime<Utc>,
    /// The plan itself: the scope a later replan is compared with.
    #[serde(skip)]
    pub plan: Arc<Plan>,
}

/// The subject of a plan's approval request (and of its answer).
pub fn subject(version: u32, hash: &str, scope: Option<&ScopeDiff>) -> Value {
    let mut subject = json!({"kind": SUBJECT_KIND, "version": version, "hash": hash});
    if let Some(diff) = scope {
        subject["scope_diff"] = serde_json::to_value(diff).expect("a diff serializes");
    }
    subject
}

/// `(version, hash)` when `subject` is a plan's.
pub fn named_plan(subject: &Value) -> Option<(u32, &str)> {
    if subject.get("kind").and_then(Value::as_str) != Some(SUBJECT_KIND) {
        return None;
    }
    let version = subject.get("version").and_then(Value::as_u64)?;
    let hash = subject.get("hash").and_then(Value::as_str)?;
    Some((u32::try_from(version).ok()?, hash))
}

/// Replay of an approved plan subject: the approval, when it names `plan` (the current plan,
/// at `version`) by version and hash; `None` for any other plan.
pub fn approval_of(
    plan: &Arc<Plan>,
    version: u32,
    subject: &Value,
    author: Option<&str>,
    at: DateTime<Utc>,
) -> Option<ApprovedPlan> {
    let (named_version, hash) = named_plan(subject)?;
    if named_version != version || hash != plan_hash(plan) {
        return None;
    }
    Some(ApprovedPlan {
        version,
        hash: hash.to_owned(),
        author: author.unwrap_or_default().to_owned(),
        at,
        plan: plan.clone(),
    })
}
