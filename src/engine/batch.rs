//! The entries of one step, applied to a scratch copy of the state as they are made so the step
//! sees its own effects, and appended together at the end of the step.

use crate::history::entry::{Entry, EntryBody, UsageTotals};
use crate::history::{SCHEMA_VERSION, SessionState, apply};
use chrono::{DateTime, Utc};

pub struct Batch {
    pub state: SessionState,
    pub entries: Vec<Entry>,
    run_id: String,
    now: DateTime<Utc>,
}

impl Batch {
    pub fn new(state: &SessionState, run_id: &str, now: DateTime<Utc>) -> Self {
        Batch {
            state: state.clone(),
            entries: Vec::new(),
            run_id: run_id.to_string(),
            now,
        }
    }

    pub fn push(&mut self, body: EntryBody) {
        let entry = Entry {
            v: SCHEMA_VERSION,
            seq: self.state.last_seq + 1,
            ts: self.now,
            run_id: self.run_id.clone(),
            body,
        };
        apply(&mut self.state, &entry);
        self.entries.push(entry);
    }

    /// Every LLM call's usage is recorded (SPEC F12 accounting), every HTTP attempt counted.
    pub fn usage(&mut self, usage: UsageTotals) {
        if usage.calls == 0 {
            return;
        }
        self.push(EntryBody::Usage { usage });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
