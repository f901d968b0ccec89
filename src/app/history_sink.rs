//! The run's writer to the history backend: entries are batched (`history.commit_every`; a full
//! batch commits beside the run's next model call, see [`HistorySink::shared`]) and
//! always flushed at the points that matter — the end of a planning phase, before a forge write
//! (with its effect entry, unless they would wait for a save of the work), before the run waits
//! for a person, at the end of the run and on SIGTERM. Entries that could not be
//! committed by the end of the run are printed to the job log and the step summary as JSONL, so
//! nothing is lost silently.

use crate::engine::journal::EntrySink;
use crate::history::entry::DecisionResult;
use crate::history::spool::Spool;
use crate::history::{Entry, EntryBody, HistoryBackend, HistoryError, jsonl};
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub struct HistorySink {
    backend: Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    commit_every: usize,
    /// Entries accepted from the engine and not committed yet; held across a commit so a flush
    /// on SIGTERM waits for the one under way.
    pending: tokio::sync::Mutex<Vec<Entry>>,
    last_commit: Mutex<Option<String>>,
    /// Pending entries on local disk too, so a SIGKILL does not lose them (see `history::spool`).
    spool: Mutex<Option<Spool>>,
    before_commit: Option<Arc<dyn BeforeCommit>>,
    /// When the latest pending entry that marks a task done was accepted (None: no such entry
    /// is pending). A save of the work that started later holds that task's files.
    done_at: Mutex<Option<Instant>>,
    /// This sink, once shared ([`HistorySink::shared`]): a full batch is then committed by a
    /// task of its own, beside the run's next model call.
    me: std::sync::OnceLock<std::sync::Weak<HistorySink>>,
}

/// Called before a flush commits entries that mark a task done: the work those entries claim
/// must be saved first (the work branch), or a re-run on a fresh checkout would find the task
/// done without its files.
#[async_trait]
pub trait BeforeCommit: Send + Sync {
    /// `done_at`: when the latest finished task the flush records was accepted; a save whose
    /// snapshot is younger holds its work.
    async fn before_commit(&self, done_at: Option<Instant>);

    /// When the last save that succeeded took its snapshot: tasks marked done before then have
    /// their work saved, and a flush that records only those needs no save of its own.
    fn saved_at(&self) -> Option<Instant> {
        None
    }

    /// A save now would come sooner than the saves' interval allows: a batch that reached
    /// `history.commit_every` and records a finished task whose work is not saved yet waits
    /// (in memory and in the spool) for the next save or flush point instead of forcing one.
    fn saved_recently(&self) -> bool {
        false
    }
}

fn finishes_a_task(entries: &[Entry]) -> bool {
    entries.iter().any(|e| {
        matches!(
            &e.body,
            EntryBody::TaskState {
                state: crate::plan::TaskState::Done,
                ..
            }
        )
    })
}

impl HistorySink {
    pub fn new(backend: Arc<dyn HistoryBackend>, thread: ThreadRef, commit_every: u32) -> Self {
        HistorySink {
            backend,
            thread,
            commit_every: usize::try_from(commit_every).unwrap_or(usize::MAX).max(1),
            pending: tokio::sync::Mutex::new(Vec::new()),
            last_commit: Mutex::new(None),
            spool: Mutex::new(None),
            before_commit: None,
            done_at: Mutex::new(None),
            me: std::sync::OnceLock::new(),
        }
    }

    /// The sink as the run holds it. A full batch (`history.commit_every`) is then committed in
    /// the background: the entries are in memory and in the spool already, and the step that
    /// filled the batch need not wait for the commit (nor for the save of the work it may need)
    /// before the next model call. The next append, flush or effect waits for it (one lock), so
    /// the order of commits is the order of entries.
    pub fn shared(self) -> Arc<Self> {
        let sink = Arc::new(self);
        let _ = sink.me.set(Arc::downgrade(&sink));
        sink
    }

    /// Run `hook` before every flush that commits a finished task.
    pub fn with_before_commit(mut self, hook: Arc<dyn BeforeCommit>) -> Self {
        self.before_commit = Some(hook);
        self
    }

    /// Spool pending entries to `<dir>/<run id>.jsonl` until they are committed. Without a spool
    /// (it could not be created: logged) batching works as before.
    pub fn with_spool(self, dir: &Path, run_id: &str) -> Self {
        match Spool::create(dir, run_id) {
            Ok(spool) => *self.spool.lock().unwrap_or_else(|e| e.into_inner()) = Some(spool),
            Err(e) => tracing::warn!(
                "history: no spool for batched entries in {} ({e}); a killed run loses its uncommitted entries",
                dir.display()
            ),
        }
        self
    }

    /// Apply `f` to the spool, if there is one; a spool that fails is dropped (and logged).
    fn spooled(&self, f: impl FnOnce(&mut Spool) -> std::io::Result<()>) {
        let mut spool = self.spool.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = spool.as_mut()
            && let Err(e) = f(s)
        {
            tracing::warn!(
                "history: spool {} failed ({e}); not used further",
                s.path().display()
            );
            *spool = None;
        }
    }

    /// Every pending entry that marks a task done was accepted before the last save's snapshot.
    fn work_saved(&self, hook: &dyn BeforeCommit) -> bool {
        match *self.done_at.lock().unwrap_or_else(|e| e.into_inner()) {
            None => true,
            Some(done) => hook.saved_at().is_some_and(|saved| saved >= done),
        }
    }

    /// A batch that reached `commit_every` waits when committing it would force a save of the
    /// work sooner than the saves' interval (see [`BeforeCommit::saved_recently`]).
    fn waits_for_a_save(&self) -> bool {
        self.before_commit
            .as_ref()
            .is_some_and(|hook| !self.work_saved(hook.as_ref()) && hook.saved_recently())
    }

    /// The commit of the last successful flush (the `history_commit` output).
    pub fn last_commit(&self) -> Option<String> {
        self.last_commit
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Commit every pending entry. On failure they stay pending.
    pub async fn flush(&self) -> Result<(), HistoryError> {
        let mut pending = self.pending.lock().await;
        self.commit_pending(&mut pending).await
    }

    async fn commit_pending(&self, pending: &mut Vec<Entry>) -> Result<(), HistoryError> {
        if pending.is_empty() {
            return Ok(());
        }
        if let Some(hook) = &self.before_commit
            && !self.work_saved(hook.as_ref())
        {
            let done_at = *self.done_at.lock().unwrap_or_else(|e| e.into_inner());
            hook.before_commit(done_at).await;
        }
        let started = Instant::now();
        let outcome = self.backend.append(&self.thread, pending).await?;
        tracing::debug!(
            "history: {} entries committed in {} ms (the last: {})",
            pending.len(),
            started.elapsed().as_millis(),
            pending.last().map_or("none", |e| e.body.type_name())
        );
        pending.clear();
        *self.done_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.spooled(Spool::clear);
        if outcome.conflicts > 0 {
            tracing::info!(
                "history: other runs wrote to the history meanwhile; {} appended after their lines ({} re-tries)",
                self.thread,
                outcome.conflicts
            );
        }
        if let Some(commit) = outcome.commit {
            *self.last_commit.lock().unwrap_or_else(|e| e.into_inner()) = Some(commit);
        }
        Ok(())
    }

    /// The last flush of the run: what still cannot be committed goes to the job log and the
    /// step summary as JSONL. Returns the error when entries were left over.
    pub async fn close(&self, env: &BTreeMap<String, String>) -> Result<(), String> {
        let Err(e) = self.flush().await else {
            return Ok(());
        };
        let pending = self.pending.lock().await;
        let lines = jsonl::to_lines(&pending);
        let message = format!(
            "error: {} history entries of {} could not be committed ({e}); they follow as JSONL, to be appended to the thread's history file by hand",
            pending.len(),
            self.thread
        );
        eprintln!("{message}\n{lines}");
        if let Some(path) = env.get("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
            let markdown =
                format!("### History entries not committed\n\n{message}\n\n```jsonl\n{lines}```\n");
            if let Err(err) = crate::actions::summary::append(Path::new(path), &markdown) {
                tracing::warn!("could not write the step summary: {err}");
            }
        }
        Err(message)
    }

    /// Flush and leave when the job is cancelled (SIGTERM): the runner kills the process soon
    /// after, and entries still in memory would be lost.
    pub fn flush_on_sigterm(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let sink = self.clone();
        // The handler is installed here, not when the task first runs: a busy runtime may not
        // poll it before the run asks the model, and a SIGTERM in between would kill the
        // process with the entries still in memory.
        #[cfg(unix)]
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        tokio::spawn(async move {
            #[cfg(unix)]
            {
                let Ok(mut term) = term else {
                    return;
                };
                if term.recv().await.is_some() {
                    let code = match sink.flush().await {
                        Ok(()) => 143,
                        Err(e) => {
                            let pending = sink.pending.lock().await;
                            eprintln!(
                                "error: terminated; {} history entries could not be committed ({e}):\n{}",
                                pending.len(),
                                jsonl::to_lines(&pending)
                            );
                            143
                        }
                    };
                    std::process::exit(code);
                }
            }
            #[cfg(not(unix))]
            drop(sink);
        })
    }
}

/// Where the thread's spool lives, so that the next run on the same machine finds it: under the
/// local directory for local runs (`<local dir>/spool/issues/7`); for CI runs beside the checkout
/// (`<workspace>/../.replan-spool/<checkout name>/issues/7`), which a self-hosted runner keeps
/// between jobs and `actions/checkout`'s clean does not touch. None when the checkout has no
/// parent directory.
pub fn spool_dir(
    local_dir: Option<&Path>,
    workspace: &Path,
    thread: &ThreadRef,
) -> Option<PathBuf> {
    let root = match local_dir {
        Some(dir) => dir.join("spool"),
        None => {
            let name = workspace.file_name()?;
            workspace.parent()?.join(".replan-spool").join(name)
        }
    };
    Some(crate::history::spool::thread_dir(&root, thread))
}

/// Entries after which the history must be on the branch at once.
fn is_flush_point(entry: &Entry) -> bool {
    match &entry.body {
        // A phase ends: the plan is made or revised, the run ends. (The work's completion is
        // committed with the completion notice's effect entry right after it, or, while the last
        // save of the work pushes, with run_finished: one commit fewer at the end of every run.)
        EntryBody::Plan { .. }
        | EntryBody::Revision { .. }
        | EntryBody::RunFinished { .. }
        // The run waits for a person.
        | EntryBody::Question { .. } => true,
        EntryBody::ReplanDecision(decision) => decision.result == DecisionResult::Pending,
        _ => false,
    }
}

/// Effect entries (a forge write's intent) join the pending entries and commit with them.
#[async_trait]
impl crate::history::effects::Journal for HistorySink {
    fn thread(&self) -> ThreadRef {
        self.thread
    }

    /// With the pending entries when committing them waits for no save of the work; alone, ahead
    /// of them, otherwise (they wait for the save), so a comment a tool posts after a finished
    /// task forces no push of the work branch, and the completion notice goes out while the
    /// last save is still pushing (the completion entries then commit with run_finished).
    async fn commit_with(&self, entries: &[Entry]) -> Result<(), HistoryError> {
        let mut pending = self.pending.lock().await;
        let joins = self
            .before_commit
            .as_ref()
            .is_none_or(|hook| self.work_saved(hook.as_ref()));
        if !joins {
            return self.backend.append(&self.thread, entries).await.map(drop);
        }
        self.spooled(|s| s.write(entries));
        pending.extend_from_slice(entries);
        self.commit_pending(&mut pending).await
    }
}

impl HistorySink {
    /// Take `entries`; commit now at a flush point, or (`batching`) when a full batch need not
    /// wait for a save.
    async fn accept(&self, entries: &[Entry], batching: bool) -> Result<(), HistoryError> {
        if entries.is_empty() {
            return Ok(());
        }
        let (flush_point, full) = {
            let mut pending = self.pending.lock().await;
            self.spooled(|s| s.write(entries));
            pending.extend_from_slice(entries);
            if finishes_a_task(entries) {
                *self.done_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            }
            (
                entries.iter().any(is_flush_point),
                batching && pending.len() >= self.commit_every && !self.waits_for_a_save(),
            )
        };
        if flush_point {
            return self.flush().await;
        }
        if full {
            return self.commit_batch().await;
        }
        Ok(())
    }

    /// Commit a full batch: in a task of its own when the sink is shared and a runtime runs it;
    /// a failure there leaves the entries pending (and spooled) for the next flush, which
    /// reports it if it persists.
    async fn commit_batch(&self) -> Result<(), HistoryError> {
        let me = self.me.get().and_then(std::sync::Weak::upgrade);
        let (Some(me), Ok(runtime)) = (me, tokio::runtime::Handle::try_current()) else {
            return self.flush().await;
        };
        runtime.spawn(async move {
            if let Err(e) = me.flush().await {
                tracing::warn!(
                    "history: a batch of entries could not be committed yet ({e}); they stay pending for the next commit"
                );
            }
        });
        Ok(())
    }
}

#[async_trait]
impl EntrySink for HistorySink {
    async fn append(&self, entries: &[Entry]) -> Result<(), HistoryError> {
        self.accept(entries, true).await
    }

    /// A full batch is not committed here: the notice's effect entry follows and commits it (or,
    /// when that would wait for a save of the work, the next flush point does).
    async fn append_before_notices(&self, entries: &[Entry]) -> Result<(), HistoryError> {
        self.accept(entries, false).await
    }
}
