//! The thread's append-only JSONL history and the session state replayed from it.

pub(crate) mod backend;
mod body_twin;
pub(crate) mod branch_write;
pub mod cas;
pub mod check;
pub(crate) mod effects;
pub use effects::Journal;
pub mod entry;
mod entry_de;
pub mod evidence;
pub mod export;
pub mod final_proof;
pub mod fold;
pub mod git_branch;
pub mod jsonl;
pub mod ledger;
pub mod local;
pub mod object_id;
pub mod outcome;
pub mod plan_approval;
pub mod prune;
pub mod rebase;
pub mod review;
pub mod spool;
pub(crate) mod state;
pub mod stats;
pub(crate) mod store;
mod timestamp;

pub use backend::{
    AppendOutcome, BlockingBackend, HistoryBackend, HistoryError, HistoryResult, LoadedHistory,
};
pub use entry::{Entry, EntryBody, SCHEMA_VERSION};
pub use fold::replay_text;
pub use git_branch::GitBranchHistory;
pub use jsonl::{CorruptLine, ParsedHistory};
pub use local::LocalHistory;
pub use state::{SessionState, apply, apply_owned, replay};
