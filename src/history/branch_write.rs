//! The two writes a history branch makes (GitHub, GitLab, local `git`), both through the one
//! compare-and-swap loop ([`cas::commit`]) and with the same commit messages: appending a run's
//! entries, and replacing a whole file (prune and archive).

use super::backend::{AppendOutcome, HistoryResult};
use super::cas::{self, BranchFile, Change, Retry};
use super::entry::Entry;
use super::rebase::PendingAppend;

/// Append `entries` to the file at `path`, renumbered after the last `seq` found there.
pub async fn append<S: BranchFile + ?Sized>(
    store: &S,
    path: &str,
    entries: &[Entry],
    retry: Retry,
) -> HistoryResult<AppendOutcome> {
    let noun = if entries.len() == 1 {
        "entry"
    } else {
        "entries"
    };
    let message = format!("replan: {} {noun} to {path}", entries.len());
    let mut pending = PendingAppend::new(path, entries);
    cas::commit(store, path, &message, retry, |old| pending.onto(old)).await
}

/// Replace the whole file at `path` (prune and archive only).
pub async fn rewrite<S: BranchFile + ?Sized>(
    store: &S,
    path: &str,
    text: &str,
    retry: Retry,
) -> HistoryResult<AppendOutcome> {
    let message = format!("replan: rewrite {path}");
    cas::commit(store, path, &message, retry, |_| {
        Ok(Change::replacing(text))
    })
    .await
}
