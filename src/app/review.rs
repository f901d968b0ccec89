//! The review loop (issue 38): a review on the pull request Replan opened for a thread continues
//! that thread, and after the cycle each review thread gets its answer.
//!
//! "Replan's pull request" is decided from two things Replan wrote, never from the event alone:
//! the head branch is in the repository itself and names a thread (`replan/issue-5…`), and that
//! thread's history records pushing that very branch for its pull request.

use crate::forge::{Forge, ReviewThreadRef, marker};
use crate::history::HistoryBackend;
use crate::history::SessionState;
use crate::history::review::ReviewState;
use crate::trigger::review::thread_of_branch;
use crate::trigger::{
    ForgeKind, GatePolicy, Request, ReviewEvent, ReviewThread, StartRules, ThreadKind, ThreadRef,
    Trigger, classify_comment,
};
use chrono::{DateTime, Utc};
use std::path::Path;

/// The hidden marker of a review reply: the gate takes a comment carrying it as Replan's own.
const REPLY_MARKER: &str = "<!-- replan:review-reply -->";

/// Where a review event leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewTarget {
    /// The pull / merge request that was reviewed (replies before the cycle go there).
    pub pull_request: ThreadRef,
    /// The thread whose pull request it is.
    pub owner: ThreadRef,
}

/// For a review event: the thread it continues when the pull request is Replan's; otherwise the
/// request becomes what it was before the review loop (a review comment's text read as a
/// comment; a whole review: nothing).
pub async fn resolve(
    trigger: &mut Trigger,
    backend: &dyn HistoryBackend,
    rules: &StartRules,
) -> Option<ReviewTarget> {
    let Request::Review(review) = &trigger.request else {
        return None;
    };
    let pull_request = ThreadRef {
        kind: match trigger.forge {
            crate::trigger::ForgeKind::GitLab => ThreadKind::MergeRequest,
            _ => ThreadKind::PullRequest,
        },
        number: review.pull_request,
    };
    let owner = thread_of_branch(&review.head_branch);
    let state = match owner {
        Some(owner) => match crate::history::store::load(backend, &owner).await {
            Ok(loaded) => Some(loaded.state),
            Err(e) => {
                tracing::warn!("could not read the history of {owner}: {e}");
                None
            }
        },
        None => None,
    };
    let ours = state
        .as_ref()
        .and_then(|s| s.pull_request_branch.as_deref())
        == Some(review.head_branch.as_str());
    match (owner, ours) {
        (Some(owner), true) => Some(ReviewTarget {
            pull_request,
            owner,
        }),
        _ => {
            trigger.request = match &review.comment {
                Some(body) => classify_comment(body, rules),
                None => Request::Ignore {
                    reason: format!(
                        "a review of {pull_request}, which Replan did not open for a thread"
                    ),
                },
            };
            None
        }
    }
}

/// The review's threads, read from the forge into the request (the event does not carry them).
pub async fn collect(
    trigger: &mut Trigger,
    forge: &dyn Forge,
    state: &SessionState,
    policy: &GatePolicy,
    now: DateTime<Utc>,
) -> Result<(), String> {
    let kind = trigger.forge;
    let Request::Review(review) = &mut trigger.request else {
        return Ok(());
    };
    review.threads = threads_of_review(kind, review, forge, state, policy, now).await?;
    Ok(())
}

/// The pull request's review threads as the round of `review` reads them (the run's cycle and
/// the publish job's vetting alike): on GitHub every thread, the round's marked by the review's
/// comments; on GitLab, which has no review object, the batch of open discussions
/// `review_batch::take` picks. [`in_round`] tells the round's threads.
pub async fn threads_of_review(
    kind: ForgeKind,
    review: &ReviewEvent,
    forge: &dyn Forge,
    state: &SessionState,
    policy: &GatePolicy,
    now: DateTime<Utc>,
) -> Result<Vec<ReviewThread>, String> {
    let threads = forge
        .review_threads(review.pull_request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(if kind == ForgeKind::GitLab {
        super::review_batch::take(threads, &review.review_id, state, forge, policy, now).await
    } else {
        threads
    })
}

/// A thread of the round of review `review_id`: still open, and holding that review's comments.
pub fn in_round(thread: &ReviewThread, review_id: &str) -> bool {
    !thread.resolved && thread.belongs_to(review_id)
}

/// The round's answers, once its cycle completed: a reply in every thread, and the addressed
/// ones resolved. A failed write is logged; the others still go out.
pub async fn answer(forge: &dyn Forge, state: &SessionState, review_id: &str, workspace: &Path) {
    let Some(review) = state.review(review_id) else {
        return;
    };
    if review.answers.is_none() {
        return;
    }
    let commit = state
        .pull_request_branch
        .as_deref()
        .and_then(|branch| branch_tip(workspace, branch));
    for thread in &review.round.threads {
        let at = ReviewThreadRef {
            pull_request: review.round.pull_request,
            thread: &thread.id,
            reply_to: &thread.reply_to,
        };
        let (body, resolve) = reply(review, &thread.id, commit.as_deref());
        // The same round's reply in the same thread is the same write: a retried run or publish
        // finds it by its key instead of posting it twice.
        let key = marker::key_for(&[
            "review_reply",
            &review.round.pull_request.to_string(),
            &review.round.review_id,
            &thread.id,
        ]);
        let body = marker::with_marker(&body, &key);
        if let Err(e) = marker::reply_once(forge, at, &body).await {
            tracing::warn!("could not reply in review thread {}: {e}", thread.id);
            continue;
        }
        if resolve && let Err(e) = forge.resolve_review_thread(at).await {
            tracing::warn!("could not resolve review thread {}: {e}", thread.id);
        }
    }
}

/// The reply for one thread and whether the thread is resolved.
fn reply(review: &ReviewState, thread: &str, commit: Option<&str>) -> (String, bool) {
    let answer = review.answer(thread);
    let text = answer
        .map(|a| a.reply.trim())
        .filter(|r| !r.is_empty())
        .unwrap_or("");
    match answer {
        Some(a) if a.addressed => {
            let commit = commit.map(|c| format!(" in {c}")).unwrap_or_default();
            let what = if text.is_empty() { "Done." } else { text };
            (format!("{REPLY_MARKER}\nAddressed{commit}: {what}"), true)
        }
        Some(a) => {
            let why = match a.reason.as_deref() {
                Some("question") => "a question for you",
                Some("out_of_scope") => "out of scope for this change",
                Some("disagreed") => "not changed, with reasons",
                _ => "not changed",
            };
            (
                format!("{REPLY_MARKER}\nNot addressed ({why}): {text}"),
                false,
            )
        }
        None => (
            format!(
                "{REPLY_MARKER}\nNot addressed: this review round's changes do not cover this thread."
            ),
            false,
        ),
    }
}

/// The branch's commit in the checkout, short.
fn branch_tip(workspace: &Path, branch: &str) -> Option<String> {
    crate::tools::git::git(
        workspace,
        &["rev-parse", "--short=12", &format!("refs/heads/{branch}")],
        &[],
    )
    .ok()
    .map(|c| c.trim().to_owned())
    .filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::review::{ReviewRound, ReviewThreadInput};
    use crate::plan::ReviewAnswer;

    fn review(answers: Vec<ReviewAnswer>) -> ReviewState {
        let thread = |id: &str| ReviewThreadInput {
            id: id.into(),
            reply_to: "1".into(),
            path: "a".into(),
            start_line: None,
            line: Some(1),
            diff_hunk: String::new(),
            text: "t".into(),
        };
        ReviewState {
            round: ReviewRound {
                pull_request: 2,
                review_id: "9".into(),
                reviewer: "alice".into(),
                round: 1,
                threads: vec![thread("A"), thread("B"), thread("C")],
            },
            answers: Some(answers),
        }
    }

    #[test]
    fn addressed_threads_are_resolved_and_the_others_say_why() {
        let r = review(vec![
            ReviewAnswer {
                thread: "A".into(),
                addressed: true,
                reply: "Renamed it.".into(),
                reason: None,
            },
            ReviewAnswer {
                thread: "B".into(),
                addressed: false,
                reply: "Which one do you mean?".into(),
                reason: Some("question".into()),
            },
        ]);
        let (a, resolve_a) = reply(&r, "A", Some("abc123"));
        assert!(
            resolve_a && a.contains("Addressed in abc123: Renamed it."),
            "{a}"
        );
        let (b, resolve_b) = reply(&r, "B", Some("abc123"));
        assert!(!resolve_b && b.contains("a question for you"), "{b}");
        let (c, resolve_c) = reply(&r, "C", None);
        assert!(!resolve_c && c.contains("Not addressed"), "{c}");
        assert_eq!(r.line(), "Review #1 by @alice: 1 of 3 threads addressed");
    }
}
