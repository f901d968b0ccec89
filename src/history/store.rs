//! A thread's history as read: load and replay (seed 001 §7.4.2 `PlanningHistoryStore`'s read
//! side). The engine appends through `app::history_sink::HistorySink`, the one journal.

use super::backend::{HistoryBackend, HistoryError};
use super::effects::{self, Intent};
use super::jsonl::CorruptLine;
use super::state::SessionState;
use crate::trigger::ThreadRef;
use std::collections::BTreeMap;

/// A thread as read: the replayed state, the lines that were skipped, and what else a run needs
/// from the entries (which are not kept: replaying holds only the state).
#[derive(Debug, Clone, Default)]
pub struct LoadedThread {
    /// Entries read.
    pub entries: usize,
    pub corrupt: Vec<CorruptLine>,
    pub state: SessionState,
    /// The forge writes recorded, the last intent per key.
    pub intents: BTreeMap<String, Intent>,
}

pub async fn load(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
) -> Result<LoadedThread, HistoryError> {
    let loaded = backend.load(thread).await?;
    let mut intents = BTreeMap::new();
    let (state, scan) = super::fold::replay_text_seeing(&loaded.text, |e| {
        if let Some(intent) = effects::intent_of(e) {
            intents.insert(intent.key.clone(), intent);
        }
    });
    Ok(LoadedThread {
        entries: scan.entries,
        corrupt: scan.corrupt,
        state,
        intents,
    })
}
