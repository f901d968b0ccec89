//! The review round a bundle may answer, computed by the publish job itself from its own review
//! event and the forge, with the run's own code (`app::review::threads_of_review`): on GitHub the
//! threads of the event's review, on GitLab the batch of open discussions opened by people the
//! gate accepts that no stored round took. The bundle is model-writable, so its `review` entry
//! is never read as the round: a reply, a resolve and the entry itself may name only threads of
//! the computed round. A publish job run again after its history was stored finds the round in
//! that stored history (written by a publish job, after this same vetting).

use super::Write;
use super::trusted::Trusted;
use crate::app::review::{ReviewTarget, in_round, threads_of_review};
use crate::forge::Forge;
use crate::history::HistoryBackend;
use crate::history::entry::EntryBody;
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

/// `Ok` when `review_thread` is a thread of the round of this job's review.
pub(super) fn names(review_thread: &str, trusted: &Trusted) -> Result<(), String> {
    let Some(round) = &trusted.review_round else {
        return Err(format!(
            "review thread {review_thread}: this publish job's own event is no review of a pull request Replan opened"
        ));
    };
    if round.iter().any(|id| id == review_thread) {
        Ok(())
    } else {
        Err(format!(
            "review thread {review_thread}: the review round of this publish job's own event does not name it ({})",
            if round.is_empty() {
                "it names no thread".to_owned()
            } else {
                format!("it names {}", round.join(", "))
            }
        ))
    }
}

/// A `review` history entry records the round of this job's own review, and names only its
/// threads: later runs answer, resolve and skip what it names.
pub(super) fn entries_name_the_round(writes: &[Write], trusted: &Trusted) -> Result<(), String> {
    let rounds = writes.iter().flat_map(|w| match w {
        Write::History { entries, .. } => entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Review { round } => Some((e.seq, round)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    });
    for (seq, round) in rounds {
        let (Some(target), crate::trigger::Request::Review(event)) =
            (trusted.review, &trusted.request)
        else {
            return Err(format!(
                "history entry {seq} records a review round, but this publish job's own event is no review of a pull request Replan opened"
            ));
        };
        if round.review_id != event.review_id || round.pull_request != target.pull_request.number {
            return Err(format!(
                "history entry {seq} records review {} of #{}; this publish job's own event is review {} of {}",
                round.review_id, round.pull_request, event.review_id, target.pull_request
            ));
        }
        for thread in &round.threads {
            names(&thread.id, trusted).map_err(|rule| format!("history entry {seq}: {rule}"))?;
        }
    }
    Ok(())
}
