//! Pull request reviews: review threads with GraphQL node ids and a resolution state, listed by
//! the GraphQL `reviewThreads` connection, resolved by the `resolveReviewThread` mutation, and
//! answered through `POST /pulls/{n}/comments/{id}/replies`. Auth is the fake's, as for every
//! route; the write routes also need the pull request and the comment to exist, as GitHub's do.

use serde_json::{Value, json};

use super::State;
use super::json::{self as shapes, error, not_found};
use crate::support::server::{FakeRequest, FakeResponse};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// GraphQL node id (`PRRT_…`).
    pub id: String,
    pub pull_number: u64,
    pub path: String,
    pub line: u64,
    pub start_line: Option<u64>,
    pub diff_hunk: String,
    pub resolved: bool,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    pub comments: Vec<ReviewComment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    /// The review it was submitted with (a reply is a review of its own).
    pub review_id: u64,
    pub user: String,
    pub body: String,
}

/// One comment of a review being seeded: where it points and what it says.
pub struct SeedComment<'a> {
    pub path: &'a str,
    pub start_line: Option<u64>,
    pub line: u64,
    pub body: &'a str,
}

impl State {
    /// A submitted review: one new thread per comment. Returns the review id and, per comment,
    /// (thread node id, comment id).
    pub(super) fn seed_review(
        &mut self,
        pull_number: u64,
        reviewer: &str,
        comments: &[SeedComment<'_>],
    ) -> (u64, Vec<(String, u64)>) {
        let review_id = self.next_id();
        let mut ids = Vec::new();
        for seed in comments {
            let comment_id = self.next_id();
            // Opaque on GitHub; numbered here so a scripted model can name them.
            let thread_id = format!("PRRT_kwFake{}", self.review_threads.len() + 1);
            self.review_threads.push(ReviewThread {
                id: thread_id.clone(),
                pull_number,
                path: seed.path.to_owned(),
                line: seed.line,
                start_line: seed.start_line,
                diff_hunk: format!("@@ -1,3 +1,3 @@\n context of {}", seed.path),
                resolved: false,
                resolved_by: None,
                comments: vec![ReviewComment {
                    id: comment_id,
                    review_id,
                    user: reviewer.to_owned(),
                    body: seed.body.to_owned(),
                }],
            });
            ids.push((thread_id, comment_id));
        }
        (review_id, ids)
    }
}

fn thread_node(thread: &ReviewThread) -> Value {
    let comments: Vec<Value> = thread
        .comments
        .iter()
        .map(|c| {
            json!({
                "databaseId": c.id,
                "body": c.body,
                "diffHunk": thread.diff_hunk,
                "author": { "login": c.user },
                "pullRequestReview": { "databaseId": c.review_id },
            })
        })
        .collect();
    json!({
        "id": thread.id,
        "isResolved": thread.resolved,
        "path": thread.path,
        "line": thread.line,
        "startLine": thread.start_line,
        "comments": { "nodes": comments },
    })
}

fn graphql_error(kind: &str, message: &str) -> FakeResponse {
    FakeResponse::json(
        200,
        &json!({ "data": null, "errors": [{ "type": kind, "message": message }] }),
    )
}

/// The `reviewThreads` query (one page: the fake's reviews are small) and the
/// `resolveReviewThread` mutation; `None` for other GraphQL documents.
pub(super) fn graphql(state: &mut State, query: &str, variables: &Value) -> Option<FakeResponse> {
    if query.contains("resolveReviewThread") {
        let id = variables.get("threadId").and_then(Value::as_str)?;
        let actor = state.actor.clone();
        let Some(thread) = state.review_threads.iter_mut().find(|t| t.id == id) else {
            return Some(graphql_error(
                "NOT_FOUND",
                &format!("Could not resolve to a node with the global id of '{id}'."),
            ));
        };
        thread.resolved = true;
        thread.resolved_by = Some(actor);
        return Some(FakeResponse::json(
            200,
            &json!({ "data": { "resolveReviewThread": { "thread": { "id": id, "isResolved": true } } } }),
        ));
    }
    if query.contains("reviewThreads") {
        let owner = variables.get("owner").and_then(Value::as_str)?;
        let name = variables.get("name").and_then(Value::as_str)?;
        let number = variables.get("number").and_then(Value::as_u64)?;
        if !owner.eq_ignore_ascii_case(&state.owner) || !name.eq_ignore_ascii_case(&state.name) {
            return Some(graphql_error(
                "NOT_FOUND",
                &format!("Could not resolve to a Repository with the name '{owner}/{name}'."),
            ));
        }
        if !state.pulls.iter().any(|p| p.number == number) {
            return Some(graphql_error(
                "NOT_FOUND",
                &format!("Could not resolve to a PullRequest with the number of {number}."),
            ));
        }
        let nodes: Vec<Value> = state
            .review_threads
            .iter()
            .filter(|t| t.pull_number == number)
            .map(thread_node)
            .collect();
        return Some(FakeResponse::json(
            200,
            &json!({ "data": { "repository": { "pullRequest": { "reviewThreads": {
                "pageInfo": { "hasNextPage": false, "endCursor": null },
                "nodes": nodes,
            } } } } }),
        ));
    }
    None
}

/// `POST /repos/{o}/{r}/pulls/{number}/comments/{comment_id}/replies`.
pub(super) fn reply(
    state: &mut State,
    request: &FakeRequest,
    number: &str,
    comment_id: &str,
) -> FakeResponse {
    let (Ok(number), Ok(comment_id)) = (number.parse::<u64>(), comment_id.parse::<u64>()) else {
        return not_found();
    };
    let Ok(body) = request.json() else {
        return error(400, "Problems parsing JSON");
    };
    let Some(text) = body.get("body").and_then(Value::as_str).map(str::to_owned) else {
        return error(422, "body is missing");
    };
    let review_id = state.next_id();
    let id = state.next_id();
    let actor = state.actor.clone();
    let Some(thread) = state.review_threads.iter_mut().find(|t| {
        t.pull_number == number && t.comments.first().is_some_and(|c| c.id == comment_id)
    }) else {
        return not_found();
    };
    thread.comments.push(ReviewComment {
        id,
        review_id,
        user: actor.clone(),
        body: text.clone(),
    });
    let path = thread.path.clone();
    FakeResponse::json(
        201,
        &json!({
            "id": id,
            "pull_request_review_id": review_id,
            "in_reply_to_id": comment_id,
            "path": path,
            "body": text,
            "user": shapes::user(&actor),
        }),
    )
}
