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

/// The journal over the thread's history backend, seeded with the intents already there.
pub struct HistoryEffects {
    backend: Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    run_id: String,
    known: Mutex<BTreeMap<String, Intent>>,
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
        }
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
        self.backend
            .append(&self.thread, &[entry])
            .await
            .map_err(|e| format!("could not record the write in the history first: {e}"))?;
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(intent.key.clone(), intent);
        Ok(())
    }
}
