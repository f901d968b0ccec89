//! The thread's history, read while the gate asks the forge. The read needs nothing the gate
//! decides, and the run needs it right after: one forge round trip less before the first model
//! call. The history backend may depend on the whole config, which is read only after the gate
//! (with the actor's remote layer), so the early read counts only when that config names the
//! same history; otherwise, and when it failed, the history is read again as before.

use super::context::{Ctx, HistoryFor, load_thread, recorded_history};
use crate::app::exit::CliError;
use crate::app::history_sink::spool_dir;
use crate::config::{Config, HistoryConfig};
use crate::history::HistoryBackend;
use crate::history::store::LoadedThread;
use crate::trigger::ThreadRef;
use std::sync::Arc;

/// A history read with the config before the gate.
pub(super) struct EarlyHistory {
    config: HistoryConfig,
    backend: Arc<dyn HistoryBackend>,
    loaded: Result<LoadedThread, CliError>,
}

/// Reads `thread`'s history with the config as it is before the gate; None when there is no
/// thread, or when spooled entries of a killed run must be committed first (a write, which only
/// a run past the gate makes).
pub(super) async fn read(
    ctx: &Ctx,
    thread: Option<ThreadRef>,
    backend_for: &HistoryFor,
) -> Option<EarlyHistory> {
    let thread = thread?;
    let spool = spool_dir(ctx.local_dir.as_deref(), &ctx.workspace, &thread);
    if spool
        .as_deref()
        .is_some_and(crate::history::spool::has_spool_files)
    {
        return None;
    }
    let backend = recorded_history(ctx, backend_for(&ctx.config));
    let loaded = load_thread(backend.as_ref(), &thread).await;
    Some(EarlyHistory {
        config: ctx.config.history.clone(),
        backend,
        loaded,
    })
}

impl EarlyHistory {
    /// The backend and history read early, when `config` (the whole one, after the gate) names
    /// the same history: the backend is kept, with what it holds of the branch.
    pub(super) fn for_config(
        self,
        config: &Config,
    ) -> Option<(Arc<dyn HistoryBackend>, LoadedThread)> {
        match self.loaded {
            Ok(loaded) if self.config == config.history => Some((self.backend, loaded)),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(
                    "reading the history beside the gate failed ({}); reading it again",
                    e.message
                );
                None
            }
        }
    }
}
