//! The review round a bundle may answer, computed by the publish job itself from its own review
//! event and the forge, with the run's own code (`app::review::threads_of_review`): on GitHub the
//! threads of the event's review, on GitLab the batch of open discussions opened by people the
//! gate accepts that no stored round took. The bundle is model-writable, so its `review` entry
//! is never read as the round: a reply, a resolve and the entry itself may name only threads of
//! the computed round. A publish job run again after its history was stored finds the round in
//! that stored history (written by a publish job, after this same vetting).

use crate::app::review::{ReviewTarget, in_round, threads_of_review};
use crate::forge::Forge;
use crate::history::HistoryBackend;
use crate::trigger::{ForgeKind, GatePolicy, ReviewEvent};
use chrono::Utc;

/// The thread ids of the round of this job's review event.
pub(super) async fn of_this_event(
    kind: ForgeKind,
    target: &ReviewTarget,
    event: &ReviewEvent,
    forge: &dyn Forge,
    history: &dyn HistoryBackend,
    policy: &GatePolicy,
) -> Result<Vec<String>, String> {
    let owner = target.owner;
    let state = crate::history::store::load(history, &owner)
        .await
        .map_err(|e| format!("cannot read the history of {owner}: {e}"))?
        .state;
    if let Some(stored) = state.review(&event.review_id) {
        return Ok(stored.round.threads.iter().map(|t| t.id.clone()).collect());
    }
    let threads = threads_of_review(kind, event, forge, &state, policy, Utc::now())
        .await
        .map_err(|e| {
            format!(
                "cannot read the review threads of {}: {e}",
                target.pull_request
            )
        })?;
    Ok(threads
        .iter()
        .filter(|t| in_round(t, &event.review_id))
        .map(|t| t.id.clone())
        .collect())
}
