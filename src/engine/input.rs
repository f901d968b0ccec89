//! What a person or the scheduler asks of a cycle, after the trigger has been parsed and gated.

use crate::plan::Phase;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EngineInput {
    /// Plan and execute from the thread's title and body (or continue the current plan).
    Start {
        title: String,
        body: String,
        author: String,
    },
    /// `/replan [goal|tasks|actions] [reason]`: a human-request replan; the reason is feedback.
    Replan {
        target: Option<Phase>,
        reason: Option<String>,
        author: String,
    },
    /// `/approve [hash]`; a hash must name the plan waiting for approval.
    Approve {
        author: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hash: Option<String>,
    },
    Reject {
        reason: Option<String>,
        author: String,
    },
    Stop {
        author: String,
    },
    /// `/resume`: retry blocked tasks.
    Resume {
        author: String,
    },
    Status {
        author: String,
    },
    /// A comment while a question is pending.
    Answer {
        text: String,
        author: String,
    },
    /// The scheduled sweep: continue on the stated assumptions when a question timed out.
    Sweep,
    /// `/budget [$N | N tokens]`: show the thread's spend, or set its cap and go on.
    Budget {
        amount: Option<crate::trigger::BudgetAmount>,
        author: String,
    },
    /// A review of the pull request Replan opened for this thread: a partial replan of the
    /// current plan with the review threads as feedback (issue 38).
    Review {
        round: crate::history::review::ReviewRound,
    },
}
