//! `history` — where the JSONL history lives (SPEC F4).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Orphan branch holding the history files.
    pub branch: String,
    /// `history prune` archives threads idle for longer than this.
    pub retention_days: u32,
    pub directory: String,
    /// History entries buffered between two commits to the history branch during a run (1 =
    /// commit after every step). Phase ends (plan, revision, completion), a question or a pending
    /// approval, the end of the run and SIGTERM always commit. A full batch that records a
    /// finished task whose work the work branch does not hold yet waits for the branch's next
    /// save (at most 10 s) rather than forcing one.
    pub commit_every: u32,
    /// How long one append to the history branch keeps retrying while other runs move the branch
    /// (jittered exponential backoff); the entries are printed to the job log if it runs out.
    pub append_timeout_seconds: u64,
}

impl HistoryConfig {
    pub fn append_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.append_timeout_seconds)
    }
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            branch: "replan-history".to_owned(),
            retention_days: 90,
            directory: "planning_history".to_owned(),
            commit_every: 20,
            append_timeout_seconds: 120,
        }
    }
}
