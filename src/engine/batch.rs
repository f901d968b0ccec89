//! The entries of one step, applied to a scratch copy of the state as they are made so the step
//! sees its own effects, and appended together at the end of the step.

use crate::history::entry::{Entry, EntryBody, UsageTotals};
use crate::history::{SCHEMA_VERSION, SessionState, apply};
use crate::llm::TokenUsage;
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
            // Saturates at u64::MAX: the history writer then refuses the append with a clear
            // error (no two lines may share a `seq`), instead of a panic or a wrapped number.
            seq: self.state.last_seq.saturating_add(1),
            ts: self.now,
            run_id: self.run_id.clone(),
            body,
        };
        apply(&mut self.state, &entry);
        self.entries.push(entry);
    }

    /// Every LLM call's usage is recorded (SPEC F12 accounting).
    pub fn usage(&mut self, calls: u32, usage: TokenUsage, cost_usd: f64) {
        if calls == 0 {
            return;
        }
        self.push(EntryBody::Usage {
            usage: UsageTotals {
                calls: u64::from(calls),
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cached_tokens: usage.cached_tokens,
                cost_usd,
            },
        });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
