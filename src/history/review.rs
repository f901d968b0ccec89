//! A review round: a person's review of the pull request Replan opened for a thread, taken as
//! the input of one cycle (`review` entry), and what the cycle answered (the completion's
//! `review_threads`).

use crate::plan::ReviewAnswer;
use serde::{Deserialize, Serialize};

/// One review, recorded when its cycle starts: later events of the same review find it and stay
/// silent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRound {
    /// The pull / merge request's number.
    pub pull_request: u64,
    pub review_id: String,
    pub reviewer: String,
    /// 1 for the first review of the thread's pull request.
    pub round: u32,
    pub threads: Vec<ReviewThreadInput>,
}

/// One review thread as the model sees it: where it points and what the reviewer wrote
/// (sanitised; data, not instructions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewThreadInput {
    pub id: String,
    /// The comment a reply goes to (GitHub: the thread's first comment).
    pub reply_to: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default)]
    pub diff_hunk: String,
    pub text: String,
}

impl ReviewThreadInput {
    /// `src/a.rs:3-5`, `src/a.rs:4`, `src/a.rs`.
    pub fn location(&self) -> String {
        match (self.start_line, self.line) {
            (Some(start), Some(end)) if start != end => format!("{}:{start}-{end}", self.path),
            (_, Some(line)) | (Some(line), None) => format!("{}:{line}", self.path),
            (None, None) => self.path.clone(),
        }
    }
}

/// A round as the replay knows it: its input and, once the cycle completed, the answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewState {
    pub round: ReviewRound,
    /// `None` while the round's cycle has not completed.
    pub answers: Option<Vec<ReviewAnswer>>,
}

impl ReviewState {
    /// The answer for `thread`, when the model gave one.
    pub fn answer(&self, thread: &str) -> Option<&ReviewAnswer> {
        self.answers.as_ref()?.iter().find(|a| a.thread == thread)
    }

    /// Threads of the round the cycle addressed (answers for unknown threads do not count).
    pub fn addressed(&self) -> usize {
        self.round
            .threads
            .iter()
            .filter(|t| self.answer(&t.id).is_some_and(|a| a.addressed))
            .count()
    }

    /// "Review #2 by @alice: 3 of 4 threads addressed" (or "in progress").
    pub fn line(&self) -> String {
        let head = format!("Review #{} by @{}", self.round.round, self.round.reviewer);
        match self.answers {
            Some(_) => format!(
                "{head}: {} of {} threads addressed",
                self.addressed(),
                self.round.threads.len()
            ),
            None => format!("{head}: {} threads in progress", self.round.threads.len()),
        }
    }
}
