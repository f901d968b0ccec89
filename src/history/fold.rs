//! Replaying a whole history file as it is read: each entry is applied by value and dropped, so
//! only the state is in memory, not the file's entries as well (at 100k entries those were
//! 130 MiB, and most of the time went into touching that memory).

use super::entry::Entry;
use super::jsonl::{self, Scan};
use super::state::{SessionState, apply_owned};

/// The session state a history file replays to, with what reading it found. The same state as
/// [`super::replay`] over [`jsonl::parse`]'s entries, without holding them.
pub fn replay_text(text: &str) -> (SessionState, Scan) {
    replay_text_seeing(text, |_| {})
}

/// [`replay_text`], showing `see` each entry before it is applied (what a run needs from the
/// entries besides the state).
pub fn replay_text_seeing(text: &str, mut see: impl FnMut(&Entry)) -> (SessionState, Scan) {
    let mut state = SessionState::default();
    let scan = jsonl::for_each_entry(text, |e| {
        see(&e);
        apply_owned(&mut state, e);
    });
    (state, scan)
}
