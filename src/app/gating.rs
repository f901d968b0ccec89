//! Whether a CI trigger is acted on, before any writing request (issue 17): a comment not
//! addressed to Replan, an edited comment, a refused author, a closed thread or a command with no
//! plan to act on. Each check makes read requests only; what is posted is at most one short reply.

use crate::forge::{CommentRef, Forge, ForgeError};
use crate::history::SessionState;
use crate::history::state::Pending;
use crate::report::markers::notice_marker;
use crate::trigger::{Command, GateDecision, Request, StartRules, ThreadRef, Trigger};

/// The most a reply to a trigger that is not acted on may hold, marker included.
pub const MAX_REPLY_CHARS: usize = 400;

/// What to do with the trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Go,
    /// Do nothing and post nothing; the reason is the one log line.
    Silent(String),
    /// Do nothing but post this one reply (already marked and at most [`MAX_REPLY_CHARS`]).
    Reply {
        reason: String,
        body: String,
    },
}

impl Verdict {
    fn reply(reason: impl Into<String>, kind: &str, text: &str) -> Self {
        let mut body = format!("{}\n{text}", notice_marker(kind));
        if body.chars().count() > MAX_REPLY_CHARS {
            body = body.chars().take(MAX_REPLY_CHARS - 1).collect::<String>() + "…";
        }
        Verdict::Reply {
            reason: reason.into(),
            body,
        }
    }
}

/// Whether the trigger asks Replan for something: a command, a mention, a start. A plain
/// comment is not; it counts only as the answer to a pending question.
pub fn addressed(request: &Request) -> bool {
    !matches!(request, Request::Answer { .. })
}

/// A plain comment is an answer while a question waits and nothing otherwise.
pub fn plain_comment(
    trigger: &Trigger,
    state: Option<&SessionState>,
    rules: &StartRules,
) -> Verdict {
    if addressed(&trigger.request) {
        return Verdict::Go;
    }
    if state.is_some_and(|s| matches!(s.pending, Some(Pending::Question { .. }))) {
        return Verdict::Go;
    }
    Verdict::Silent(format!(
        "the comment by {} neither mentions @{} nor starts a line with a /command, and no question is pending",
        trigger.actor.login,
        rules.handle.trim_start_matches('@')
    ))
}

/// Reads the comment again and acts on what is there now: the request is taken from the fetched
/// text, and a comment edited since the event (text changed or `updated_at` later) or deleted is
/// not acted on. A failed look-up keeps the event's copy (the author's permission is checked
/// either way).
pub async fn current_comment(
    trigger: &mut Trigger,
    forge: &dyn Forge,
    rules: &StartRules,
    refetch: bool,
) -> Verdict {
    let (Some(thread), Some(event_copy)) = (trigger.thread, trigger.comment.clone()) else {
        return Verdict::Go;
    };
    if !refetch {
        return Verdict::Go;
    }
    let at = CommentRef {
        thread: &thread,
        id: &event_copy.id,
    };
    let current = match forge.comment(at).await {
        Ok(Some(current)) => current,
        Ok(None) => {
            return Verdict::Silent(format!(
                "comment {} was deleted before the run started",
                event_copy.id
            ));
        }
        Err(e) => {
            tracing::warn!("could not fetch the comment again ({e}); using the event's copy");
            return Verdict::Go;
        }
    };
    let newer = event_copy
        .updated_at
        .is_some_and(|event_time| current.updated_at > event_time);
    if current.body != event_copy.body || newer {
        return Verdict::Silent(format!(
            "comment {} was edited after the event (updated {}); not acting on an edited comment: post the request as a new comment",
            event_copy.id,
            current.updated_at.to_rfc3339()
        ));
    }
    trigger.request = crate::trigger::classify_comment(&current.body, rules);
    Verdict::Go
}

/// A refusal by the gate: a reply only to someone who addressed Replan, and only when
/// `gate.reply_to_outsiders` allows it.
pub fn refused(decision: GateDecision, request: &Request, reply_to_outsiders: bool) -> Verdict {
    match decision {
        GateDecision::Allow => Verdict::Go,
        GateDecision::Refuse {
            reason,
            reply: Some(text),
        } if reply_to_outsiders && addressed(request) => Verdict::reply(reason, "refusal", &text),
        GateDecision::Refuse { reason, .. } => Verdict::Silent(reason),
    }
}

/// Whether the thread is closed: from the event when it said, else from the forge (which also
/// fills in the title and body of a start that did not carry them, so they are read once).
pub async fn is_closed(
    trigger: &mut Trigger,
    thread: &ThreadRef,
    forge: &dyn Forge,
) -> Result<bool, ForgeError> {
    if let Some(closed) = trigger.closed {
        return Ok(closed);
    }
    let current = forge.thread(thread).await?;
    if let Request::Start { title, body } = &mut trigger.request
        && title.trim().is_empty()
        && body.trim().is_empty()
    {
        *title = current.title;
        *body = current.body;
    }
    trigger.closed = Some(current.closed);
    Ok(current.closed)
}

/// Closed threads are not planned: a command that would plan or run gets one reply saying so,
/// anything else is only logged. `/status` and `/stop` still work.
pub fn closed_thread(request: &Request, thread: &ThreadRef) -> Verdict {
    let noun = thread.kind.noun();
    match request {
        Request::Command(Command::Status | Command::Stop | Command::Budget { amount: None }) => {
            Verdict::Go
        }
        Request::Command(command) => Verdict::reply(
            format!("{thread} is closed; /{} is not acted on", command.name()),
            "closed",
            &format!(
                "This {noun} is closed, so I did not act on `/{}`. Reopen it and ask again to plan it.",
                command.name()
            ),
        ),
        _ => Verdict::Silent(format!(
            "{thread} is closed; closed threads are not planned"
        )),
    }
}

/// Commands that act on a plan, on a thread without one: one reply with the real state, and no
/// change (no checklist, no history, no outputs). `/replan` starts planning instead.
pub fn no_plan(request: &Request, state: &SessionState) -> Verdict {
    let Request::Command(command) = request else {
        return Verdict::Go;
    };
    // A draft waiting for `/approve` or an answer is something to act on, without a plan yet.
    // A budget may be set before the first plan, and shown at any time.
    if state.has_plan()
        || state.pending.is_some()
        || matches!(command, Command::Replan { .. } | Command::Budget { .. })
    {
        return Verdict::Go;
    }
    Verdict::reply(
        format!("/{} on a thread without a plan", command.name()),
        "no-plan",
        &format!(
            "There is no plan yet for this thread, so `/{}` has nothing to act on. Comment `/replan` to start planning.",
            command.name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_marked_and_short() {
        let long = "x".repeat(1000);
        match Verdict::reply("r", "refusal", &long) {
            Verdict::Reply { body, .. } => {
                assert!(body.starts_with("<!-- replan:notice:refusal -->"));
                assert_eq!(body.chars().count(), MAX_REPLY_CHARS);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn outsiders_get_a_reply_only_when_allowed_and_only_when_they_addressed_replan() {
        let refusal = || GateDecision::Refuse {
            reason: "mallory has read access".into(),
            reply: Some("@mallory, no.".into()),
        };
        let command = Request::Command(Command::Status);
        let plain = Request::Answer { text: "hi".into() };
        assert!(matches!(
            refused(refusal(), &command, false),
            Verdict::Silent(_)
        ));
        assert!(matches!(
            refused(refusal(), &command, true),
            Verdict::Reply { .. }
        ));
        assert!(matches!(
            refused(refusal(), &plain, true),
            Verdict::Silent(_)
        ));
    }

    #[test]
    fn commands_on_a_closed_thread() {
        let issue = ThreadRef::issue(3);
        let resume = Request::Command(Command::Resume);
        match closed_thread(&resume, &issue) {
            Verdict::Reply { body, .. } => assert!(body.contains("closed"), "{body}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            closed_thread(&Request::Command(Command::Status), &issue),
            Verdict::Go
        );
        let start = Request::Start {
            title: String::new(),
            body: String::new(),
        };
        assert!(matches!(closed_thread(&start, &issue), Verdict::Silent(_)));
    }

    #[test]
    fn commands_without_a_plan_say_so_except_replan() {
        let empty = SessionState::default();
        match no_plan(&Request::Command(Command::Approve { hash: None }), &empty) {
            Verdict::Reply { body, .. } => {
                assert!(body.contains("no plan yet for this thread"), "{body}")
            }
            other => panic!("{other:?}"),
        }
        let replan = Request::Command(Command::Replan {
            phase: None,
            reason: None,
        });
        assert_eq!(no_plan(&replan, &empty), Verdict::Go);
    }
}
