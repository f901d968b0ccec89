//! What a forge says about a finished CI run: which jobs failed, with the end of their logs.

/// One failed job (GitHub: a workflow job or a check run; GitLab: a pipeline job).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiFailure {
    pub job: String,
    pub url: Option<String>,
    /// The end of the job's log (or the check run's output), as read: not yet redacted.
    pub log_tail: String,
}

/// Bytes of a job's log kept from its end: the failing step's output is at the end, and the
/// model's context is not the place for a whole build log.
pub const LOG_TAIL_BYTES: usize = 6 * 1024;

/// Failed jobs read per run; the rest are named in the count only.
pub const MAX_FAILED_JOBS: usize = 3;
