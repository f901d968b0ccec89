//! A thread's history as read: load and replay (seed 001 §7.4.2 `PlanningHistoryStore`'s read
//! side). The engine appends through `app::history_sink::HistorySink`, the one journal.

use super::backend::{HistoryBackend, HistoryError};
use super::entry::Entry;
use super::jsonl::{self, CorruptLine};
use super::state::{SessionState, replay};
use crate::trigger::ThreadRef;

/// A thread as read: entries in file order, the lines that were skipped, and the replayed state.
#[derive(Debug, Clone, Default)]
pub struct LoadedThread {
    pub entries: Vec<Entry>,
    pub corrupt: Vec<CorruptLine>,
    pub state: SessionState,
}

pub async fn load(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
) -> Result<LoadedThread, HistoryError> {
    let loaded = backend.load(thread).await?;
    let parsed = jsonl::parse(&loaded.text);
    let state = replay(&parsed.entries);
    Ok(LoadedThread {
        entries: parsed.entries,
        corrupt: parsed.corrupt,
        state,
    })
}
