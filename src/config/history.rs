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
    /// save (at most `save_work_every_seconds`) rather than forcing one.
    pub commit_every: u32,
    /// Between history commits, the working tree is saved to the work branch
    /// (`replan/work/<thread>`) after a task finishes at most this often, counted from the start
    /// of the run; a commit that records a finished task and the end of the run always save.
    /// Each save is a commit and a `git push`. 0 saves after every finished task.
    pub save_work_every_seconds: u64,
    /// How long one append to the history branch keeps retrying while other runs move the branch
    /// (jittered exponential backoff); the entries are printed to the job log if it runs out.
    pub append_timeout_seconds: u64,
}

impl HistoryConfig {
    pub fn append_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.append_timeout_seconds)
    }

    pub fn save_work_every(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.save_work_every_seconds)
    }
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            branch: "replan-history".to_owned(),
            retention_days: 90,
            directory: "planning_history".to_owned(),
            commit_every: 20,
            save_work_every_seconds: 10,
            append_timeout_seconds: 120,
        }
    }
}
