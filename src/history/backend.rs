//! Where a thread's history file lives: a local directory, a branch through the GitHub or GitLab
//! API, or a branch through the `git` CLI. All of them append with compare-and-swap semantics.

use super::Entry;
use crate::trigger::ThreadRef;
use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history I/O failed for {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("history backend error: {0}")]
    Backend(String),
    #[error(
        "could not append to {path}: the history branch kept moving for {seconds} s ({attempts} attempts); raise history.append_timeout_seconds if many runs share the branch"
    )]
    ConflictRetriesExhausted {
        path: String,
        attempts: u32,
        seconds: u64,
    },
    /// The history cannot take the change (e.g. its `seq` is exhausted): retrying cannot help.
    #[error("{0}")]
    Invalid(String),
}

/// The raw file as stored, with an opaque version token for compare-and-swap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedHistory {
    pub text: String,
    /// Commit sha / file revision the text was read at; None when the file does not exist yet.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppendOutcome {
    /// The commit (or local revision) that now holds the lines.
    pub commit: Option<String>,
    /// How many times a concurrent writer forced a re-read and re-append.
    pub conflicts: u32,
    /// The `seq` the first appended entry received (entries are renumbered after a conflict so
    /// sequence numbers stay unique and increasing in the file).
    pub first_seq: u64,
}

#[async_trait]
pub trait HistoryBackend: Send + Sync {
    async fn load(&self, thread: &ThreadRef) -> Result<LoadedHistory, HistoryError>;

    /// Append entries to the thread's file, one JSON line each. Implementations re-read and
    /// re-append on a concurrent change, renumbering `seq` after the last line they find: no line
    /// of either writer may be lost, and corrupt lines already in the file are kept as they are.
    async fn append(&self, thread: &ThreadRef, entries: &[Entry]) -> HistoryResult<AppendOutcome>;

    /// Every thread that has a history file (for the scheduled sweep and pruning).
    async fn threads(&self) -> Result<Vec<ThreadRef>, HistoryError>;

    /// Replace a whole file (prune/archive only; never used during a run).
    async fn rewrite(&self, thread: &ThreadRef, text: &str) -> Result<AppendOutcome, HistoryError>;
}

pub type HistoryResult<T> = Result<T, HistoryError>;

/// A backend whose work blocks (a local file, the `git` CLI). It says what each operation does;
/// the one [`HistoryBackend`] impl below runs it off the async runtime.
pub trait BlockingBackend: Clone + Send + Sync + 'static {
    fn load_blocking(&self, thread: &ThreadRef) -> HistoryResult<LoadedHistory>;
    fn append_blocking(
        &self,
        thread: &ThreadRef,
        entries: &[Entry],
    ) -> HistoryResult<AppendOutcome>;
    fn threads_blocking(&self) -> HistoryResult<Vec<ThreadRef>>;
    fn rewrite_blocking(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome>;
}

#[async_trait]
impl<B: BlockingBackend> HistoryBackend for B {
    async fn load(&self, thread: &ThreadRef) -> HistoryResult<LoadedHistory> {
        let (me, thread) = (self.clone(), *thread);
        blocking(move || me.load_blocking(&thread)).await
    }

    async fn append(&self, thread: &ThreadRef, entries: &[Entry]) -> HistoryResult<AppendOutcome> {
        let (me, thread, entries) = (self.clone(), *thread, entries.to_vec());
        blocking(move || me.append_blocking(&thread, &entries)).await
    }

    async fn threads(&self) -> HistoryResult<Vec<ThreadRef>> {
        let me = self.clone();
        blocking(move || me.threads_blocking()).await
    }

    async fn rewrite(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome> {
        let (me, thread, text) = (self.clone(), *thread, text.to_string());
        blocking(move || me.rewrite_blocking(&thread, &text)).await
    }
}

/// Run a file or `git` backend's blocking work off the async runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, HistoryError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HistoryError::Backend(format!("history task failed: {e}")))?
}
