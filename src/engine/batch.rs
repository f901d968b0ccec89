//! The entries of one step, applied to a scratch copy of the state as they are made so the step
//! sees its own effects, and appended together at the end of the step.

use crate::history::entry::{Entry, EntryBody, UsageTotals};
use crate::history::{SCHEMA_VERSION, SessionState, apply};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// When an entry happened; injected so tests and replays control time.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct Batch {
    pub state: SessionState,
    pub entries: Vec<Entry>,
    run_id: String,
    clock: Clock,
}

impl Batch {
    /// Entries are stamped by `clock` when they are pushed — when the thing they record happened,
    /// not when the step started.
    pub fn new(state: &SessionState, run_id: &str, clock: Clock) -> Self {
        Batch {
            state: state.clone(),
            entries: Vec::new(),
            run_id: run_id.to_string(),
            clock,
        }
    }

    pub fn push(&mut self, body: EntryBody) {
        let entry = Entry {
            v: SCHEMA_VERSION,
            // Saturates at u64::MAX: the history writer then refuses the append with a clear
            // error (no two lines may share a `seq`), instead of a panic or a wrapped number.
            seq: self.state.last_seq.saturating_add(1),
            ts: (self.clock)(),
            run_id: self.run_id.clone(),
            body,
        };
        apply(&mut self.state, &entry);
        self.entries.push(entry);
    }

    /// An entry made in another batch (a subtask that ran beside others), renumbered to follow
    /// this batch's entries; its time stamp stays when it happened.
    pub fn adopt(&mut self, mut entry: Entry) {
        entry.seq = self.state.last_seq.saturating_add(1);
        entry.run_id = self.run_id.clone();
        apply(&mut self.state, &entry);
        self.entries.push(entry);
    }

    /// Every LLM call's usage is recorded (SPEC F12 accounting), every HTTP attempt counted.
    pub fn usage(&mut self, usage: UsageTotals) {
        if usage.calls == 0 {
            return;
        }
        self.push(EntryBody::Usage { usage, model: None });
    }

    /// The usage of a reply of `model`, recorded with the model that answered.
    pub fn usage_of(&mut self, model: &str, usage: UsageTotals) {
        if usage.calls == 0 {
            return;
        }
        let model = (!model.is_empty()).then(|| model.to_string());
        self.push(EntryBody::Usage { usage, model });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    #[test]
    fn entries_are_stamped_when_pushed_not_when_the_step_started() {
        let ticks = Arc::new(AtomicI64::new(0));
        let seen = ticks.clone();
        let start = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let clock: Clock =
            Arc::new(move || start + Duration::seconds(seen.fetch_add(10, Ordering::SeqCst)));
        let mut batch = Batch::new(&SessionState::default(), "run-1", clock);
        batch.usage(UsageTotals {
            calls: 1,
            ..UsageTotals::default()
        });
        batch.usage(UsageTotals {
            calls: 2,
            ..UsageTotals::default()
        });
        let stamps: Vec<_> = batch.entries.iter().map(|e| e.ts).collect();
        assert_eq!(stamps, [start, start + Duration::seconds(10)]);
    }
}
