//! The idempotency journal of forge writes: before a tool writes to the forge it appends an
//! `effect` entry with the write's key to the thread's history, at once (not with the step's
//! other entries). A run that resumes after a kill, or a CI re-run, finds the key and looks the
//! effect up — by the hidden marker in the comment or pull request body, or by the branch name —
//! instead of making it twice.

use super::entry::{EffectKind, Entry, EntryBody};
use super::{HistoryBackend, SCHEMA_VERSION};
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A recorded intent: this key's write was about to be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    pub key: String,
    pub effect: EffectKind,
    pub target: Option<String>,
}

#[async_trait]
pub trait EffectJournal: Send + Sync {
    /// The last intent recorded under `key`, by this run or an earlier one.
    fn recorded(&self, key: &str) -> Option<Intent>;
    /// Append the intent to the history before the write; an error means: do not write.
    async fn record(&self, intent: Intent) -> Result<(), String>;
}

/// The run's journal of history entries, which batches them before committing.
#[async_trait]
pub trait Journal: Send + Sync {
    fn thread(&self) -> ThreadRef;
    /// Commit `entries` now: with the entries waiting to be committed, after them, when that
    /// needs no wait; otherwise alone.
    async fn commit_with(&self, entries: &[Entry]) -> Result<(), super::HistoryError>;
}

/// Where effect entries go once the run's journal exists: into it, so an intent is committed
/// with the run's entries that wait there when it can be (one history commit, not two). Before
/// that, and for another thread, straight to the backend.
#[derive(Default)]
pub struct EffectRoute(Mutex<Option<std::sync::Weak<dyn Journal>>>);

impl EffectRoute {
    /// Route through `journal` from now on (a sweep binds each thread's in turn).
    pub fn bind(&self, journal: std::sync::Weak<dyn Journal>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(journal);
    }

    fn journal_for(&self, thread: &ThreadRef) -> Option<Arc<dyn Journal>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
            .filter(|journal| journal.thread() == *thread)
    }
}

/// The journal over the thread's history backend, seeded with the intents already there.
pub struct HistoryEffects {
    backend: Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    run_id: String,
    known: Mutex<BTreeMap<String, Intent>>,
    route: Arc<EffectRoute>,
}

impl HistoryEffects {
    pub fn new(
        backend: Arc<dyn HistoryBackend>,
        thread: ThreadRef,
        run_id: &str,
        known: BTreeMap<String, Intent>,
    ) -> Self {
        HistoryEffects {
            backend,
            thread,
            run_id: run_id.to_owned(),
            known: Mutex::new(known),
            route: Arc::default(),
        }
    }

    /// Record through the run's journal once `route` is bound to it.
    pub fn routed(mut self, route: Arc<EffectRoute>) -> Self {
        self.route = route;
        self
    }
}

/// The intent an `effect` entry records.
pub fn intent_of(e: &Entry) -> Option<Intent> {
    match &e.body {
        EntryBody::Effect {
            key,
            effect,
            target,
        } => Some(Intent {
            key: key.clone(),
            effect: *effect,
            target: target.clone(),
        }),
        _ => None,
    }
}

#[async_trait]
impl EffectJournal for HistoryEffects {
    fn recorded(&self, key: &str) -> Option<Intent> {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    async fn record(&self, intent: Intent) -> Result<(), String> {
        let entry = Entry {
            v: SCHEMA_VERSION,
            // The backend numbers appended entries after the last line of the file.
            seq: 0,
            ts: chrono::Utc::now(),
            run_id: self.run_id.clone(),
            body: EntryBody::Effect {
                key: intent.key.clone(),
                effect: intent.effect,
                target: intent.target.clone(),
            },
        };
        let committed = match self.route.journal_for(&self.thread) {
            Some(journal) => journal.commit_with(&[entry]).await,
            None => self.backend.append(&self.thread, &[entry]).await.map(drop),
        };
        committed.map_err(|e| format!("could not record the write in the history first: {e}"))?;
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(intent.key.clone(), intent);
        Ok(())
    }
}
