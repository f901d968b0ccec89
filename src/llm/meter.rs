//! What the HTTP attempts of one call cost. Every attempt the server saw counts — retried,
//! timed-out and failed ones included — so usage and the budget tell the truth about a slow or
//! flaky model. The HTTP client reports attempts into a task-local meter the budget wrapper opens
//! around each call, so providers need not thread the numbers through their results.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

/// Attempts of one call (or of several, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempts {
    /// HTTP attempts the server saw.
    pub calls: u32,
    /// Wall time of all of them.
    pub wall_ms: u64,
    /// Attempts whose reply was thrown away (errors, time-outs, retries, cut-off replies).
    pub wasted_calls: u32,
    /// Wall time of the thrown-away attempts.
    pub wasted_ms: u64,
}

impl Attempts {
    pub fn add(&mut self, other: &Attempts) {
        self.calls = self.calls.saturating_add(other.calls);
        self.wall_ms = self.wall_ms.saturating_add(other.wall_ms);
        self.wasted_calls = self.wasted_calls.saturating_add(other.wasted_calls);
        self.wasted_ms = self.wasted_ms.saturating_add(other.wasted_ms);
    }

    /// All of these attempts were thrown away (the reply they ended in was unusable).
    pub fn all_wasted(mut self) -> Attempts {
        self.wasted_calls = self.calls;
        self.wasted_ms = self.wall_ms;
        self
    }

    fn record(&mut self, elapsed: Duration, wasted: bool) {
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.calls = self.calls.saturating_add(1);
        self.wall_ms = self.wall_ms.saturating_add(ms);
        if wasted {
            self.wasted_calls = self.wasted_calls.saturating_add(1);
            self.wasted_ms = self.wasted_ms.saturating_add(ms);
        }
    }
}

tokio::task_local! {
    static METER: Cell<Attempts>;
}

/// Runs `call` with a fresh meter and returns what its HTTP attempts cost.
pub async fn metered<F: Future>(call: F) -> (F::Output, Attempts) {
    METER
        .scope(Cell::new(Attempts::default()), async {
            let output = call.await;
            (output, METER.with(Cell::get))
        })
        .await
}

/// Records one HTTP attempt in the current call's meter (a no-op outside [`metered`]).
pub fn record_attempt(elapsed: Duration, wasted: bool) {
    let _ = METER.try_with(|cell| {
        let mut attempts = cell.get();
        attempts.record(elapsed, wasted);
        cell.set(attempts);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn attempts_are_counted_inside_the_scope_only() {
        record_attempt(Duration::from_millis(5), true);
        let ((), attempts) = metered(async {
            record_attempt(Duration::from_millis(30), true);
            record_attempt(Duration::from_millis(20), false);
        })
        .await;
        assert_eq!(
            attempts,
            Attempts {
                calls: 2,
                wall_ms: 50,
                wasted_calls: 1,
                wasted_ms: 30
            }
        );
        assert_eq!(attempts.all_wasted().wasted_ms, 50);
    }
}
