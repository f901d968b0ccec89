//! The thread's append-only JSONL history and the session state replayed from it.

pub mod backend;
pub mod entry;
pub mod state;

pub use backend::{AppendOutcome, HistoryBackend, HistoryError, LoadedHistory};
pub use entry::{Entry, EntryBody, SCHEMA_VERSION};
pub use state::{SessionState, apply, replay};
