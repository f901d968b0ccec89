//! What the engine is asked to do, from the trigger's request and the thread's state. Untrusted
//! text is sanitised here, before it can reach a prompt.

use crate::engine::EngineInput;
use crate::history::SessionState;
use crate::history::review::{ReviewRound, ReviewThreadInput};
use crate::history::state::Pending;
use crate::plan::Phase;
use crate::trigger::{Command, ReplanScope, Request, ReviewEvent, sanitize_untrusted};

/// The engine's input, or why there is nothing to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    Run(EngineInput),
    Nothing(String),
}

fn phase_of(scope: ReplanScope) -> Phase {
    match scope {
        ReplanScope::Goal => Phase::GoalUnderstanding,
        ReplanScope::Tasks => Phase::TaskDecomposition,
        ReplanScope::Actions => Phase::ActionSequence,
    }
}

/// `title`/`body` are the thread's, used when the request does not carry them (a dispatch, a
/// mention that starts the thread).
pub fn decide(
    request: &Request,
    author: &str,
    state: &SessionState,
    thread_title: &str,
    thread_body: &str,
) -> Decided {
    let author = author.to_owned();
    let question_pending = matches!(state.pending, Some(Pending::Question { .. }));
    let start = |title: &str, body: &str| {
        let (title, body) = if title.trim().is_empty() && body.trim().is_empty() {
            (thread_title, thread_body)
        } else {
            (title, body)
        };
        Decided::Run(EngineInput::Start {
            title: sanitize_untrusted(title),
            body: sanitize_untrusted(body),
            author: author.clone(),
        })
    };
    match request {
        Request::Start { title, body } => start(title, body),
        Request::Command(command) => Decided::Run(match command {
            Command::Replan { phase, reason } => EngineInput::Replan {
                target: phase.map(phase_of),
                reason: reason.as_deref().map(sanitize_untrusted),
                author,
            },
            Command::Approve { hash } => EngineInput::Approve {
                author,
                hash: hash.clone(),
            },
            Command::Reject { reason } => EngineInput::Reject {
                reason: reason.as_deref().map(sanitize_untrusted),
                author,
            },
            Command::Stop => EngineInput::Stop { author },
            Command::Resume => EngineInput::Resume { author },
            Command::Status => EngineInput::Status { author },
            Command::Budget { amount } => EngineInput::Budget {
                amount: amount.clone(),
                author,
            },
        }),
        Request::Answer { text } | Request::Mention { text } if question_pending => {
            Decided::Run(EngineInput::Answer {
                text: sanitize_untrusted(text),
                author,
            })
        }
        Request::Answer { .. } => Decided::Nothing(
            "a plain comment while no question is pending: nothing to do".to_owned(),
        ),
        Request::Mention { .. } if state.has_plan() => Decided::Run(EngineInput::Status { author }),
        Request::Mention { .. } => start("", ""),
        Request::Sweep => Decided::Run(EngineInput::Sweep),
        Request::FetchComment { id } => Decided::Nothing(format!(
            "the note {id} was not fetched; the GitLab set-up resolves it before the engine runs"
        )),
        Request::Ignore { reason } => Decided::Nothing(reason.clone()),
        // A failure the run read through the API is the next cycle's input: the task list is
        // revised with it in view and the work goes on on the same branch.
        Request::CiResult(run) => match &run.report {
            Some(report) => Decided::Run(EngineInput::Replan {
                target: Some(Phase::TaskDecomposition),
                reason: Some(sanitize_untrusted(report)),
                author: "ci".to_owned(),
            }),
            None => Decided::Nothing(format!(
                "the CI run on `{}` ({}) leaves nothing to do",
                run.branch, run.conclusion
            )),
        },
        Request::Review(review) => review_round(review, &author, state),
    }
}

/// The review's open threads as the next round of the thread's reviews, sanitised: the
/// reviewer's comments of this review, with where they point.
fn review_round(review: &ReviewEvent, author: &str, state: &SessionState) -> Decided {
    if state.review(&review.review_id).is_some() {
        return Decided::Nothing(format!("review {} was taken up already", review.review_id));
    }
    let threads: Vec<ReviewThreadInput> = review
        .threads
        .iter()
        .filter(|t| crate::app::review::in_round(t, &review.review_id))
        .filter_map(|t| {
            let first = t.comments.first()?;
            let text = t
                .comments
                .iter()
                .map(|c| format!("@{}: {}", c.author, sanitize_untrusted(&c.body)))
                .collect::<Vec<_>>()
                .join("\n\n");
            Some(ReviewThreadInput {
                id: t.id.clone(),
                reply_to: first.id.clone(),
                path: sanitize_untrusted(&t.path),
                start_line: t.start_line,
                line: t.line,
                diff_hunk: sanitize_untrusted(&t.diff_hunk),
                text,
            })
        })
        .collect();
    if threads.is_empty() {
        return Decided::Nothing(format!(
            "review {} has no open review thread to work on",
            review.review_id
        ));
    }
    Decided::Run(EngineInput::Review {
        round: ReviewRound {
            pull_request: review.pull_request,
            review_id: review.review_id.clone(),
            reviewer: author.to_owned(),
            round: state.reviews.len() as u32 + 1,
            threads,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::Question;

    #[test]
    fn a_comment_is_an_answer_only_while_a_question_waits() {
        let request = Request::Answer {
            text: "Use Postgres.\u{202e}".into(),
        };
        let idle = SessionState::default();
        assert!(matches!(
            decide(&request, "alice", &idle, "", ""),
            Decided::Nothing(_)
        ));
        let waiting = SessionState {
            pending: Some(Pending::Question {
                asked: Question {
                    questions: vec!["Which DB?".into()],
                    context: String::new(),
                    assumptions: vec![],
                    phase: Phase::GoalUnderstanding,
                },
                asked_at: chrono::Utc::now(),
            }),
            ..SessionState::default()
        };
        assert_eq!(
            decide(&request, "alice", &waiting, "", ""),
            Decided::Run(EngineInput::Answer {
                text: "Use Postgres.".into(),
                author: "alice".into()
            })
        );
    }

    #[test]
    fn a_start_without_text_uses_the_thread() {
        let request = Request::Start {
            title: String::new(),
            body: String::new(),
        };
        assert_eq!(
            decide(
                &request,
                "bob",
                &SessionState::default(),
                "T",
                "B<!-- hidden -->"
            ),
            Decided::Run(EngineInput::Start {
                title: "T".into(),
                body: "B".into(),
                author: "bob".into()
            })
        );
    }
}
