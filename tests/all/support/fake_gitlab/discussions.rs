//! Merge request diff discussions: listed (`GET …/discussions`), answered (`POST
//! …/discussions/:id/notes`) and resolved (`PUT …/discussions/:id?resolved=true`), behind the
//! fake's auth like every route; unknown discussions are GitLab's 404.

use serde_json::{Value, json};

use super::State;
use super::json as shapes;
use crate::support::server::{FakeRequest, FakeResponse};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discussion {
    /// GitLab's 40-hex discussion id.
    pub id: String,
    pub merge_request: u64,
    pub path: String,
    pub line: u64,
    pub resolved: bool,
    pub resolved_by: Option<String>,
    pub notes: Vec<DiscussionNote>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscussionNote {
    pub id: u64,
    pub author: String,
    pub body: String,
}

impl State {
    /// A diff discussion opened by `author` on `path:line`; returns its id.
    pub(super) fn seed_discussion(
        &mut self,
        merge_request: u64,
        author: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> String {
        let note = self.next_id();
        let id = format!("{:040x}", self.discussions.len() + 1);
        self.discussions.push(Discussion {
            id: id.clone(),
            merge_request,
            path: path.to_owned(),
            line,
            resolved: false,
            resolved_by: None,
            notes: vec![DiscussionNote {
                id: note,
                author: author.to_owned(),
                body: body.to_owned(),
            }],
        });
        id
    }
}

fn discussion_json(state: &State, d: &Discussion) -> Value {
    let notes: Vec<Value> = d
        .notes
        .iter()
        .map(|n| {
            json!({
                "id": n.id,
                "type": "DiffNote",
                "body": n.body,
                "author": shapes::user(state, &n.author),
                "system": false,
                "resolvable": true,
                "resolved": d.resolved,
                "resolved_by": d.resolved_by.as_ref().map(|u| shapes::user(state, u)),
                "position": {
                    "position_type": "text",
                    "new_path": d.path, "old_path": d.path,
                    "new_line": d.line, "old_line": null,
                },
            })
        })
        .collect();
    json!({ "id": d.id, "individual_note": false, "notes": notes })
}

/// The routes under `merge_requests/:iid/discussions`.
pub(super) fn route(
    state: &mut State,
    request: &FakeRequest,
    merge_request: u64,
    tail: &[&str],
) -> FakeResponse {
    let method = request.method.as_str();
    if let ("GET", []) = (method, tail) {
        let items: Vec<Value> = state
            .discussions
            .iter()
            .filter(|d| d.merge_request == merge_request)
            .map(|d| discussion_json(state, d))
            .collect();
        return FakeResponse::json(200, &Value::Array(items));
    }
    let [id, rest @ ..] = tail else {
        return FakeResponse::json(404, &json!({"message": "404 Not Found"}));
    };
    let Some(index) = state
        .discussions
        .iter()
        .position(|d| d.id == *id && d.merge_request == merge_request)
    else {
        return FakeResponse::json(404, &json!({"message": "404 Discussion Not Found"}));
    };
    match (method, rest) {
        ("POST", ["notes"]) => {
            let body = request
                .json()
                .ok()
                .and_then(|b: Value| b.get("body").and_then(Value::as_str).map(str::to_owned));
            let Some(body) = body.filter(|b| !b.trim().is_empty()) else {
                return FakeResponse::json(
                    400,
                    &json!({"message": "400 Bad request - body is missing"}),
                );
            };
            let note = state.next_id();
            let author = state.actor.clone();
            state.discussions[index].notes.push(DiscussionNote {
                id: note,
                author: author.clone(),
                body: body.clone(),
            });
            FakeResponse::json(
                201,
                &json!({"id": note, "type": "DiffNote", "body": body, "author": shapes::user(state, &author)}),
            )
        }
        ("PUT", []) => {
            let resolved = request.query_param("resolved").or_else(|| {
                request.json().ok().and_then(|b: Value| {
                    b.get("resolved")
                        .map(|v| v.to_string().trim_matches('"').to_owned())
                })
            });
            match resolved.as_deref() {
                Some("true") => {
                    let actor = state.actor.clone();
                    state.discussions[index].resolved = true;
                    state.discussions[index].resolved_by = Some(actor);
                }
                Some("false") => {
                    state.discussions[index].resolved = false;
                    state.discussions[index].resolved_by = None;
                }
                _ => {
                    return FakeResponse::json(400, &json!({"error": "resolved is missing"}));
                }
            }
            let d = state.discussions[index].clone();
            FakeResponse::json(200, &discussion_json(state, &d))
        }
        _ => FakeResponse::json(404, &json!({"message": "404 Not Found"})),
    }
}
