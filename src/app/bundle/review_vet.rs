//! Review writes and `review` entries of a bundle vetted against the round publish computed
//! (`review_round.rs`) from its own event: the bundle's own word on the round counts for nothing.

use super::Write;
use super::trusted::Trusted;
use crate::history::entry::EntryBody;

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
