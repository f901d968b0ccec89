//! The evidence one check run leaves in the history (issue 37): what ran, how it ended, on which
//! tree, and the tail of its output (redacted, capped).

use serde::{Deserialize, Serialize};

/// How a check run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Failed,
    TimedOut,
    /// It could not start (program missing, sandbox refused).
    NotRun,
}

impl CheckStatus {
    pub fn passed(self) -> bool {
        self == CheckStatus::Passed
    }

    pub fn describe(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::TimedOut => "timed out",
            CheckStatus::NotRun => "could not run",
        }
    }
}

/// One run of a configured or detected check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub name: String,
    pub argv: Vec<String>,
    pub status: CheckStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The git tree id of the work tree it ran on (absent without git): the evidence counts for
    /// this tree only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// The subtask whose attempt it checked; `None` for the final verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The tree the subtask started on, to tell whether it changed files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_tree: Option<String>,
    /// The last lines of its output, redacted and capped.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
}

impl CheckRecord {
    pub fn passed(&self) -> bool {
        self.status.passed()
    }

    /// `abc1234`: the tree id as people read it.
    pub fn short_tree(&self) -> String {
        self.tree
            .as_deref()
            .map(|t| t.chars().take(7).collect())
            .unwrap_or_else(|| "no git tree".to_owned())
    }

    /// `2.1 s`
    pub fn seconds(&self) -> String {
        format!("{:.1} s", self.duration_ms as f64 / 1000.0)
    }
}

/// Lines and characters of output a check entry keeps.
pub const TAIL_LINES: usize = 20;
pub const TAIL_CHARS: usize = 2000;

/// The last `TAIL_LINES` lines of `output`, at most `TAIL_CHARS` characters, redacted.
pub fn output_tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    let tail = lines[start..].join("\n");
    let chars: Vec<char> = tail.chars().collect();
    let cut: String = chars[chars.len().saturating_sub(TAIL_CHARS)..]
        .iter()
        .collect();
    crate::outbound::redact(&cut)
}

/// One success criterion of the goal and what proves it (issue 37): a check by name, or nothing
/// but a person (`manual`, with the planner's reason).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionEvidence {
    pub criterion: String,
    /// The check that proves it; `None` for a manual criterion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_reason: Option<String>,
    /// The check's status on the final tree (absent for a manual criterion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
}

impl CriterionEvidence {
    /// `check `cargo test` passed on abc1234` or `manual — not verified (reason)`.
    pub fn describe(&self) -> String {
        match (&self.check, self.status) {
            (Some(check), Some(status)) => format!(
                "`{check}` {} on `{}`",
                status.describe(),
                self.tree
                    .as_deref()
                    .map(|t| t.chars().take(7).collect::<String>())
                    .unwrap_or_else(|| "no git tree".into())
            ),
            (Some(check), None) => format!("`{check}` did not run"),
            (None, _) => format!(
                "manual — not verified{}",
                self.manual_reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        }
    }
}
