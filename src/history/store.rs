//! The engine's view of a thread's history (seed 001 §7.4.2 `PlanningHistoryStore`): load and
//! replay, query past plans, revisions, reflections and runs, and append entries that are flushed
//! to the backend every `commit_every` entries and at the end, so a killed run loses at most the
//! unflushed tail.

use super::backend::{AppendOutcome, HistoryBackend, HistoryError};
use super::entry::{Entry, EntryBody, RunRequest, RunStatus, SCHEMA_VERSION};
use super::jsonl::{self, CorruptLine};
use super::state::{SessionState, apply, replay};
use crate::plan::{Completion, Plan, Reflection};
use crate::trigger::ThreadRef;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// A thread as read: entries in file order, the lines that were skipped, and the replayed state.
#[derive(Debug, Clone, Default)]
pub struct LoadedThread {
    pub entries: Vec<Entry>,
    pub corrupt: Vec<CorruptLine>,
    pub state: SessionState,
    /// Highest `seq` in the file (corrupt lines with a readable `seq` included).
    pub max_seq: u64,
}

pub async fn load(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
) -> Result<LoadedThread, HistoryError> {
    let loaded = backend.load(thread).await?;
    let parsed = jsonl::parse(&loaded.text);
    let state = replay(&parsed.entries);
    Ok(LoadedThread {
        entries: parsed.entries,
        corrupt: parsed.corrupt,
        state,
        max_seq: parsed.max_seq,
    })
}

/// One earlier run on the thread, for goal-understanding continuity (seed 001 §2.1).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PastExecution {
    pub run_id: String,
    pub request: Option<RunRequest>,
    pub started_at: DateTime<Utc>,
    pub status: Option<RunStatus>,
    /// Plan versions this run created (first plan or revisions).
    pub plan_versions: Vec<u32>,
    pub decisions: usize,
    pub actions: usize,
    pub failed_actions: usize,
    pub questions: Vec<String>,
    pub answers: Vec<String>,
    pub completion: Option<Completion>,
}

pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct HistoryStore {
    backend: Arc<dyn HistoryBackend>,
    thread: ThreadRef,
    run_id: String,
    commit_every: usize,
    clock: Clock,
    entries: Vec<Entry>,
    corrupt: Vec<CorruptLine>,
    state: SessionState,
    next_seq: u64,
    /// The last `unflushed` entries of `entries` are not in the backend yet.
    unflushed: usize,
    last_outcome: Option<AppendOutcome>,
}

impl HistoryStore {
    /// Load the thread and prepare to append for `run_id`. `commit_every` 0 is treated as 1.
    pub async fn open(
        backend: Arc<dyn HistoryBackend>,
        thread: ThreadRef,
        run_id: impl Into<String>,
        commit_every: usize,
    ) -> Result<Self, HistoryError> {
        let loaded = load(backend.as_ref(), &thread).await?;
        Ok(HistoryStore {
            backend,
            thread,
            run_id: run_id.into(),
            commit_every: commit_every.max(1),
            clock: Arc::new(Utc::now),
            next_seq: loaded.max_seq.saturating_add(1),
            entries: loaded.entries,
            corrupt: loaded.corrupt,
            state: loaded.state,
            unflushed: 0,
            last_outcome: None,
        })
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn thread(&self) -> &ThreadRef {
        &self.thread
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn corrupt(&self) -> &[CorruptLine] {
        &self.corrupt
    }

    pub fn state(&self) -> &SessionState {
        &self.state
    }

    pub fn has_plan(&self) -> bool {
        self.state.has_plan()
    }

    /// The current plan and its version (the newest `plan` or `revision`).
    pub fn get_latest_plan(&self) -> Option<(u32, &Plan)> {
        self.state
            .plan
            .as_ref()
            .map(|p| (self.state.plan_version, p))
    }

    /// Every `revision` entry, oldest first.
    pub fn get_revision_history(&self) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.body, EntryBody::Revision { .. }))
            .collect()
    }

    pub fn get_all_reflections(&self) -> Vec<&Reflection> {
        self.state.reflections.iter().collect()
    }

    /// Earlier runs on this thread with what they were asked and how they ended, oldest first.
    /// The current run is not included.
    pub fn get_past_executions(&self) -> Vec<PastExecution> {
        let mut runs: Vec<PastExecution> = Vec::new();
        for e in &self.entries {
            if e.run_id == self.run_id {
                continue;
            }
            let run = match runs.iter().position(|r| r.run_id == e.run_id) {
                Some(i) => &mut runs[i],
                None => {
                    runs.push(PastExecution {
                        run_id: e.run_id.clone(),
                        request: None,
                        started_at: e.ts,
                        status: None,
                        plan_versions: Vec::new(),
                        decisions: 0,
                        actions: 0,
                        failed_actions: 0,
                        questions: Vec::new(),
                        answers: Vec::new(),
                        completion: None,
                    });
                    runs.last_mut().expect("just pushed")
                }
            };
            match &e.body {
                EntryBody::RunStarted { request } => run.request = Some(request.clone()),
                EntryBody::Plan { version, .. } | EntryBody::Revision { version, .. } => {
                    run.plan_versions.push(*version)
                }
                EntryBody::ReplanDecision(_) => run.decisions += 1,
                EntryBody::Action { outcome, .. } => {
                    run.actions += 1;
                    if *outcome != super::entry::ActionOutcome::Ok {
                        run.failed_actions += 1;
                    }
                }
                EntryBody::Question { questions, .. } => {
                    run.questions.extend(questions.iter().cloned())
                }
                EntryBody::Answer { text, .. } => run.answers.push(text.clone()),
                EntryBody::Completion { completion } => {
                    run.completion = Some((**completion).clone())
                }
                EntryBody::RunFinished { status, .. } => run.status = Some(*status),
                _ => {}
            }
        }
        runs
    }

    /// Record an entry: it gets this run's id, the next `seq`, the time and the schema version,
    /// is applied to the state, and is flushed once `commit_every` entries are waiting.
    pub async fn append(&mut self, body: EntryBody) -> Result<&Entry, HistoryError> {
        let entry = Entry {
            v: SCHEMA_VERSION,
            seq: self.next_seq,
            ts: (self.clock)(),
            run_id: self.run_id.clone(),
            body,
        };
        self.next_seq = self.next_seq.saturating_add(1);
        apply(&mut self.state, &entry);
        self.entries.push(entry);
        self.unflushed += 1;
        if self.unflushed >= self.commit_every {
            self.flush().await?;
        }
        Ok(self.entries.last().expect("just pushed"))
    }

    pub fn unflushed(&self) -> usize {
        self.unflushed
    }

    pub fn last_outcome(&self) -> Option<&AppendOutcome> {
        self.last_outcome.as_ref()
    }

    /// Write the waiting entries. On failure they stay waiting and the next flush tries again.
    pub async fn flush(&mut self) -> Result<Option<&AppendOutcome>, HistoryError> {
        if self.unflushed == 0 {
            return Ok(self.last_outcome.as_ref());
        }
        let start = self.entries.len() - self.unflushed;
        let outcome = self
            .backend
            .append(&self.thread, &self.entries[start..])
            .await?;
        // A concurrent writer may have forced a renumbering: keep our copy equal to the file.
        for (i, e) in self.entries[start..].iter_mut().enumerate() {
            e.seq = outcome.first_seq.saturating_add(i as u64);
        }
        self.next_seq = outcome.first_seq.saturating_add(self.unflushed as u64);
        self.state.last_seq = self.state.last_seq.max(self.next_seq - 1);
        self.unflushed = 0;
        self.last_outcome = Some(outcome);
        Ok(self.last_outcome.as_ref())
    }
}
