//! What started the job: event payloads, comment commands, and the safety gate.
//!
//! Everything here is pure: forge look-ups (permissions, a comment fetched again) happen at the
//! edges and their results are passed in.

pub mod ci_run;
pub mod command;
pub(crate) mod error;
pub(crate) mod gate;
pub mod github_event;
pub mod gitlab_event;
mod markdown;
pub(crate) mod permission;
mod prose;
pub mod review;
pub mod sanitize;
pub(crate) mod thread;
mod timestamp;

pub use ci_run::{CiRun, CiVerdict, thread_of_branch};
pub use command::{BudgetAmount, Command, ReplanScope, mentions, parse_commands};
pub use error::TriggerError;
pub use gate::{GateDecision, GateInput, GatePolicy, MARKER_PREFIX, decide};
pub use github_event::{from_actions, from_actions_explained};
pub use gitlab_event::from_gitlab;
pub use permission::Permission;
pub use review::{ReviewComment, ReviewEvent, ReviewThread};
pub use sanitize::sanitize_untrusted;
pub use thread::{ForgeKind, ThreadKind, ThreadRef};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What started this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    pub forge: ForgeKind,
    /// `owner/name` on GitHub, the project path on GitLab. Empty when the event does not say
    /// (a GitHub `schedule` payload); fill it from `GITHUB_REPOSITORY` then.
    pub repo: String,
    /// `None` only for [`Request::Sweep`], which looks at every waiting thread.
    pub thread: Option<ThreadRef>,
    pub actor: Actor,
    pub request: Request,
    /// The comment that carried the request, when there was one.
    pub comment: Option<TriggerComment>,
    /// `<event>.<action>` as the forge named it, for log lines and history entries.
    pub event: String,
    /// GitLab: `CI_PROJECT_ID` (API calls address the project by id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// GitLab: `CI_API_V4_URL`. GitHub: `None` (the API URL comes from `GITHUB_API_URL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Whether the thread was closed when the event fired; `None` when the event did not say
    /// (a dispatch, pipeline variables): the run asks the forge then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<bool>,
}

/// Who asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub login: String,
    pub id: Option<u64>,
    pub is_bot: bool,
}

/// A comment as it was when the event fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerComment {
    pub id: String,
    pub body: String,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// What was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// Plan the thread from its title and body. Both are empty when the event did not carry
    /// them (`workflow_dispatch`, a GitLab pipeline started with `REPLAN_ISSUE_IID`): fetch the
    /// thread through the forge then.
    Start {
        title: String,
        body: String,
    },
    Command(Command),
    /// A plain comment (no command, no mention). The engine treats it as the answer when a
    /// question is pending and ignores it otherwise.
    Answer {
        text: String,
    },
    /// A comment that mentions the configured handle without a command.
    Mention {
        text: String,
    },
    /// Continue threads whose question waited past `auto_assume_timeout_minutes`.
    Sweep,
    /// A GitLab pipeline started with `REPLAN_NOTE_ID`: the note is not in the variables.
    /// Fetch it and call [`Trigger::resolve_comment`].
    FetchComment {
        id: String,
    },
    /// Nothing to do. The event parsers report ignored events as
    /// [`EventOutcome::Ignored`] instead; this variant is for callers that build a `Trigger`
    /// by hand (a local run) and want to record why nothing happens.
    Ignore {
        reason: String,
    },
    /// A CI run finished on a branch named like Replan's pull request branch of `thread`
    /// (whether it is one is checked against the thread's history before anything is written).
    CiResult(CiRun),
    /// A review (or one comment of it) on a pull / merge request: it continues the thread that
    /// opened the request when Replan opened it, else it reads as a comment does.
    Review(ReviewEvent),
}

/// What the event parsers decide about an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    Run(Box<Trigger>),
    /// An event we deliberately do not act on; `reason` is written for a log line.
    Ignored {
        reason: String,
    },
}

impl EventOutcome {
    pub fn into_trigger(self) -> Option<Trigger> {
        match self {
            EventOutcome::Run(trigger) => Some(*trigger),
            EventOutcome::Ignored { .. } => None,
        }
    }

    pub(crate) fn run(trigger: Trigger) -> Self {
        EventOutcome::Run(Box::new(trigger))
    }

    pub(crate) fn ignored(reason: impl Into<String>) -> Self {
        EventOutcome::Ignored {
            reason: reason.into(),
        }
    }
}

/// The configured start rules (SPEC F1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRules {
    /// Adding this label starts a cycle (compared case-insensitively).
    pub label: String,
    /// `@handle` in a comment addresses Replan (with or without the `@`).
    pub handle: String,
    /// Issue events that start a cycle (config `triggers.issues`).
    pub issues: EventSet,
    /// Pull/merge request events that start a cycle when the request carries the label or
    /// mentions the handle (config `triggers.pull_requests`).
    pub pull_requests: EventSet,
    /// Whether comments are read at all (config `triggers.comments`).
    pub comments: bool,
}

/// Which thread events start a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSet {
    pub opened: bool,
    pub reopened: bool,
    pub labeled: bool,
}

impl EventSet {
    pub const ALL: EventSet = EventSet {
        opened: true,
        reopened: true,
        labeled: true,
    };

    /// Whether the forge's action (`opened`/`open`, `reopened`/`reopen`, `labeled`) is listed.
    pub(crate) fn allows(&self, action: &str) -> bool {
        match action {
            "opened" | "open" => self.opened,
            "reopened" | "reopen" => self.reopened,
            "labeled" => self.labeled,
            _ => false,
        }
    }
}

impl Default for StartRules {
    fn default() -> Self {
        StartRules {
            label: "replan".into(),
            handle: "replan".into(),
            issues: EventSet::ALL,
            pull_requests: EventSet::ALL,
            comments: true,
        }
    }
}

impl StartRules {
    pub(crate) fn is_trigger_label(&self, name: &str) -> bool {
        name.trim().eq_ignore_ascii_case(self.label.trim())
    }

    pub(crate) fn events(&self, kind: ThreadKind) -> EventSet {
        match kind {
            ThreadKind::Issue => self.issues,
            _ => self.pull_requests,
        }
    }

    /// Why a thread event of `kind` does not start a cycle, if it does not: its type is not
    /// listed in the configuration, or the thread is closed.
    pub(crate) fn refuses_event(
        &self,
        kind: ThreadKind,
        action: &str,
        closed: bool,
    ) -> Option<String> {
        let key = match kind {
            ThreadKind::Issue => "triggers.issues",
            _ => "triggers.pull_requests",
        };
        if !self.events(kind).allows(action) {
            return Some(format!("`{action}` is not listed in `{key}`"));
        }
        closed.then(|| {
            format!(
                "the {} is closed; closed threads are not planned",
                kind.noun()
            )
        })
    }

    /// Whether a comment body is addressed to Replan: it mentions the handle or holds a command.
    pub fn addresses(&self, body: &str) -> bool {
        !matches!(classify_comment(body, self), Request::Answer { .. })
    }
}

/// How a comment body reads: the first command wins, then a mention, else a plain answer.
pub fn classify_comment(body: &str, rules: &StartRules) -> Request {
    if let Some(command) = parse_commands(body).into_iter().next() {
        Request::Command(command)
    } else if mentions(body, &rules.handle) {
        Request::Mention {
            text: body.to_owned(),
        }
    } else {
        Request::Answer {
            text: body.to_owned(),
        }
    }
}

impl Trigger {
    /// Completes a [`Request::FetchComment`] trigger once the note was fetched: the note's
    /// author becomes the actor (the pipeline user is only whoever owns the trigger token).
    pub fn resolve_comment(&mut self, comment: TriggerComment, author: Actor, rules: &StartRules) {
        self.request = classify_comment(&comment.body, rules);
        self.actor = author;
        self.comment = Some(comment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_classification_prefers_commands_then_mentions() {
        let rules = StartRules::default();
        assert_eq!(
            classify_comment("@replan\n/status\n/stop", &rules),
            Request::Command(Command::Status)
        );
        assert_eq!(
            classify_comment("@replan what now?", &rules),
            Request::Mention {
                text: "@replan what now?".into()
            }
        );
        assert_eq!(
            classify_comment("Use Postgres.", &rules),
            Request::Answer {
                text: "Use Postgres.".into()
            }
        );
    }

    #[test]
    fn resolving_a_fetched_note_sets_actor_request_and_comment() {
        let mut trigger = Trigger {
            forge: ForgeKind::GitLab,
            repo: "g/p".into(),
            thread: Some(ThreadRef::issue(3)),
            actor: Actor {
                login: "token-owner".into(),
                id: None,
                is_bot: false,
            },
            request: Request::FetchComment { id: "9".into() },
            comment: None,
            event: "pipeline.trigger".into(),
            project_id: None,
            api_url: None,
            closed: None,
        };
        let note = TriggerComment {
            id: "9".into(),
            body: "/approve".into(),
            created_at: None,
            updated_at: None,
        };
        let author = Actor {
            login: "alice".into(),
            id: Some(7),
            is_bot: false,
        };
        trigger.resolve_comment(note.clone(), author.clone(), &StartRules::default());
        assert_eq!(
            trigger.request,
            Request::Command(Command::Approve { hash: None })
        );
        assert_eq!(trigger.actor, author);
        assert_eq!(trigger.comment, Some(note));
    }
}
