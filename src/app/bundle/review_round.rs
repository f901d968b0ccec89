//! Review writes name the round they answer: a reply or a resolve goes only to a review thread
//! that the review round of this publish job's own review event names — in the stored history,
//! or in the history lines this bundle adds for that thread. A bundle cannot answer, or close, a
//! discussion the round never took (another person's, an older round's, one below Developer).

use super::Write;
use super::trusted::Trusted;
use crate::history::HistoryBackend;
use crate::history::entry::EntryBody;
use crate::history::review::ReviewRound;
use crate::trigger::Request;

/// `Ok` when `review_thread` is a thread of the round of this job's review.
pub(super) async fn named_by_the_round(
    review_thread: &str,
    trusted: &Trusted,
    writes: &[Write],
    history: &dyn HistoryBackend,
) -> Result<(), String> {
    let (Some(target), Request::Review(event)) = (trusted.review, &trusted.request) else {
        return Err(format!(
            "review thread {review_thread}: this publish job's own event is no review of a pull request Replan opened"
        ));
    };
    let owner = target.owner;
    let stored = crate::history::store::load(history, &owner)
        .await
        .map_err(|e| format!("cannot read the history of {owner}: {e}"))?
        .state
        .reviews
        .into_iter()
        .map(|r| r.round);
    let added = writes.iter().flat_map(|w| match w {
        Write::History { thread, entries } if *thread == owner => entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Review { round } => Some(round.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    });
    let takes = |round: &ReviewRound, id: &str| {
        round.review_id == id || round.threads.iter().any(|t| t.id == id)
    };
    let round = stored
        .chain(added)
        .filter(|r| r.pull_request == target.pull_request.number)
        .find(|r| takes(r, &event.review_id))
        .ok_or_else(|| {
            format!(
                "no review round of {owner} takes up review {} of {}",
                event.review_id, target.pull_request
            )
        })?;
    if round.threads.iter().any(|t| t.id == review_thread) {
        Ok(())
    } else {
        Err(format!(
            "review thread {review_thread}: review round #{} of {owner} does not name it",
            round.round
        ))
    }
}
