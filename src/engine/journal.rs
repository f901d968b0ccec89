//! Where the engine appends its entries. One `append` is one atomic unit: a step's entries land
//! together or not at all, which is what lets a killed cycle resume from the file alone.

use crate::history::{Entry, HistoryBackend, HistoryError};
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

#[async_trait]
pub trait EntrySink: Send + Sync {
    /// Append the entries of one step, all or nothing.
    async fn append(&self, entries: &[Entry]) -> Result<(), HistoryError>;

    /// [`EntrySink::append`] for a step whose notices go out right after: a batching sink holds
    /// the entries (flush points aside) for the first notice's effect entry, which commits them
    /// with it — one history commit where a full batch would have made two in a row.
    async fn append_before_notices(&self, entries: &[Entry]) -> Result<(), HistoryError> {
        self.append(entries).await
    }
}

/// Appends straight to a history backend (local directory, git branch, forge API).
pub struct BackendSink {
    pub backend: Arc<dyn HistoryBackend>,
    pub thread: ThreadRef,
}

#[async_trait]
impl EntrySink for BackendSink {
    async fn append(&self, entries: &[Entry]) -> Result<(), HistoryError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.backend.append(&self.thread, entries).await.map(|_| ())
    }
}

/// Entries kept in memory; `fail_after` simulates a job killed after that many entries were
/// stored (the batch that would cross the line is not stored at all).
#[derive(Default)]
pub struct MemorySink {
    entries: Mutex<Vec<Entry>>,
    fail_after: Option<usize>,
}

impl MemorySink {
    pub fn new(existing: Vec<Entry>) -> Self {
        MemorySink {
            entries: Mutex::new(existing),
            fail_after: None,
        }
    }

    /// Stop accepting entries once `limit` entries in total are stored.
    pub fn failing_after(existing: Vec<Entry>, limit: usize) -> Self {
        MemorySink {
            entries: Mutex::new(existing),
            fail_after: Some(limit),
        }
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl EntrySink for MemorySink {
    async fn append(&self, new: &[Entry]) -> Result<(), HistoryError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(limit) = self.fail_after
            && entries.len() + new.len() > limit
        {
            return Err(HistoryError::Backend(format!(
                "simulated kill: the sink stops after {limit} entries"
            )));
        }
        entries.extend_from_slice(new);
        Ok(())
    }
}
