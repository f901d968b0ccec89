//! `triggers` and `gate` — which forge events start a run, and how Replan answers people who may
//! not steer it (SPEC F1, F2).

use serde::{Deserialize, Serialize};

/// An issue or pull/merge request event that can start a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadEvent {
    /// GitHub `opened`, GitLab `open`.
    Opened,
    /// GitHub `reopened`, GitLab `reopen`.
    Reopened,
    /// The trigger label was added (GitHub `labeled`, GitLab `update` adding the label).
    Labeled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TriggersConfig {
    /// Issue events that start a cycle (`opened`, `reopened`, `labeled`); an event not listed is
    /// ignored. `opened`/`reopened` start every such issue, `labeled` only for the trigger label.
    pub issues: Vec<ThreadEvent>,
    /// Pull/merge request events that start a cycle when the request carries the trigger label
    /// or mentions the handle (`labeled`: when the trigger label is added).
    pub pull_requests: Vec<ThreadEvent>,
    /// Comments addressed to Replan (a mention or a `/command`), and answers to its questions.
    pub comments: bool,
}

impl Default for TriggersConfig {
    fn default() -> Self {
        let all = vec![
            ThreadEvent::Opened,
            ThreadEvent::Labeled,
            ThreadEvent::Reopened,
        ];
        Self {
            issues: all.clone(),
            pull_requests: all,
            comments: true,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// Whether someone without the needed access who addresses Replan gets one short reply
    /// saying so (false: the refusal is only logged, nothing is posted).
    pub reply_to_outsiders: bool,
}
