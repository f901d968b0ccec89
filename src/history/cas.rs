//! The one compare-and-swap loop of every history branch (GitHub contents and git data APIs,
//! GitLab commits API, local `git`): read the thread's file at the head, apply the change, write it
//! against that head (or, on GitHub, against the file's blob); when another run moved the branch
//! or changed the file first, read again and re-apply on the new head.
//!
//! The loop never gives up while the branch merely moves: it waits a jittered, doubling pause and
//! tries again until [`Retry::timeout`] has passed (20 concurrent runs make hundreds of
//! conflicts; an attempt count would drop entries). Only a real error (auth, 404, a history that
//! cannot take more lines) stops it at once.

use super::backend::{AppendOutcome, HistoryError};
use async_trait::async_trait;
use std::time::{Duration, Instant};

/// The file as found at the branch head, and what a write must name as its expected head.
pub struct Snapshot<B> {
    /// The exact bytes: lines that are not valid UTF-8 must survive an append.
    pub bytes: Vec<u8>,
    pub base: B,
}

/// How one write attempt ended.
pub enum Written {
    /// The branch now holds the change (the commit, when the store has one).
    Committed(Option<String>),
    /// Another writer moved the branch first; nothing of ours landed.
    Moved(String),
    /// The write failed in a way that may or may not have landed (a 5xx, a dropped connection):
    /// the next attempt reads the head and finds out.
    Uncertain(String),
}

/// A branch that holds history files, with a compare-and-swap write.
#[async_trait]
pub trait BranchFile: Send + Sync {
    type Base: Send + Sync;

    /// The file at the branch head (empty when it or the branch does not exist). May answer from
    /// a cache of the store's own last write; [`BranchFile::forget`] drops it.
    async fn read(&self, path: &str) -> Result<Snapshot<Self::Base>, HistoryError>;

    /// Write `bytes` (None deletes the file) on top of `base`, never forcing.
    async fn write(
        &self,
        path: &str,
        base: &Self::Base,
        bytes: Option<&[u8]>,
        message: &str,
    ) -> Result<Written, HistoryError>;

    /// The branch moved underneath: the next read must ask the forge.
    fn forget(&self) {}

    /// Wait between two attempts (stores that run on a blocking thread sleep it).
    async fn pause(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// What a change makes of the file as read.
pub enum Change {
    /// New content (None deletes the file); the `seq` of our first line.
    Write(Option<Vec<u8>>, u64),
    /// The file already holds the change (an earlier attempt landed after all).
    Nothing(u64),
}

impl Change {
    /// The whole file replaced by `text` (prune and archive); an empty text deletes it.
    pub fn replacing(text: &str) -> Self {
        Change::Write(
            (!text.is_empty()).then(|| text.as_bytes().to_vec()),
            super::jsonl::max_seq(text),
        )
    }
}

/// How long to keep trying while the branch moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub timeout: Duration,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            timeout: Duration::from_secs(120),
            first_delay: Duration::from_millis(20),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl Retry {
    pub fn with_timeout(timeout: Duration) -> Self {
        Retry {
            timeout,
            ..Retry::default()
        }
    }
}

/// Run a write through [`commit`] for a store whose every step is synchronous (the local `git`
/// branch, on a blocking thread), without a runtime: each of its futures is ready when first polled.
pub fn run_ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

/// Apply `change` to the file at `path` until it lands, the time is up or a real error occurs.
pub async fn commit<S: BranchFile + ?Sized>(
    store: &S,
    path: &str,
    message: &str,
    retry: Retry,
    mut change: impl FnMut(&[u8]) -> Result<Change, HistoryError> + Send,
) -> Result<AppendOutcome, HistoryError> {
    let started = Instant::now();
    let mut delay = retry.first_delay;
    let mut conflicts = 0u32;
    loop {
        let snapshot = store.read(path).await?;
        let (bytes, first_seq) = match change(&snapshot.bytes)? {
            Change::Nothing(first_seq) => {
                return Ok(AppendOutcome {
                    commit: None,
                    conflicts,
                    first_seq,
                });
            }
            Change::Write(bytes, first_seq) => (bytes, first_seq),
        };
        let why = match store
            .write(path, &snapshot.base, bytes.as_deref(), message)
            .await?
        {
            Written::Committed(commit) => {
                return Ok(AppendOutcome {
                    commit,
                    conflicts,
                    first_seq,
                });
            }
            Written::Moved(why) | Written::Uncertain(why) => why,
        };
        store.forget();
        conflicts = conflicts.saturating_add(1);
        let elapsed = started.elapsed();
        if elapsed >= retry.timeout {
            return Err(HistoryError::ConflictRetriesExhausted {
                path: path.to_owned(),
                attempts: conflicts,
                seconds: retry.timeout.as_secs(),
            });
        }
        tracing::info!("history: {path}: {why}; reading it again (attempt {conflicts})");
        // Full jitter: runs that collided must not collide again in lockstep.
        let pause = Duration::from_micros(fastrand::u64(0..=delay.as_micros() as u64))
            .min(retry.timeout - elapsed);
        store.pause(pause).await;
        delay = (delay * 2).min(retry.max_delay);
    }
}
