//! Routing and the issue, comment, reaction, permission and pull request endpoints.

use serde_json::{Value, json};

use super::json::{self as shapes, error, not_found, validation_failed};
use super::{Comment, Issue, PullRequest, Reaction, ReactionTarget, State, git_data};
use crate::support::server::{FakeRequest, FakeResponse};

pub const REACTIONS: [&str; 8] = [
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

pub fn route(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let segments = request.segments();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = request.method.as_str();
    if parts.as_slice() == ["graphql"] && method == "POST" {
        return graphql(state, request);
    }
    let ["repos", owner, name, rest @ ..] = parts.as_slice() else {
        return not_found();
    };
    if !owner.eq_ignore_ascii_case(&state.owner) || !name.eq_ignore_ascii_case(&state.name) {
        return not_found();
    }
    match (method, rest) {
        ("GET", []) => repository(state),
        ("GET", ["issues", "comments", id]) => with_comment(state, id, |state, index| {
            let comment = state.comments[index].clone();
            FakeResponse::json(200, &shapes::comment(state, &comment))
        }),
        ("PATCH", ["issues", "comments", id]) => update_comment(state, request, id),
        ("DELETE", ["issues", "comments", id]) => with_comment(state, id, |state, index| {
            state.comments.remove(index);
            FakeResponse::empty(204)
        }),
        (_, ["issues", "comments", id, "reactions"]) => with_comment(state, id, |state, index| {
            let target = ReactionTarget::Comment(state.comments[index].id);
            reactions(state, request, target)
        }),
        ("GET", ["issues", number]) => with_issue(state, number, |state, number| {
            let issue = state.issues[&number].clone();
            FakeResponse::json(200, &shapes::issue(state, &issue))
        }),
        ("GET", ["issues", number, "comments"]) => with_issue(state, number, |state, number| {
            let items = state
                .comments
                .iter()
                .filter(|comment| comment.issue_number == number)
                .map(|comment| shapes::comment(state, comment))
                .collect();
            shapes::paginate(state, request, items)
        }),
        ("POST", ["issues", number, "comments"]) => with_issue(state, number, |state, number| {
            create_comment(state, request, number)
        }),
        (_, ["issues", number, "reactions"]) => with_issue(state, number, |state, number| {
            reactions(state, request, ReactionTarget::Issue(number))
        }),
        ("GET", ["collaborators", login, "permission"]) => permission(state, login),
        ("POST", ["pulls"]) => create_pull(state, request),
        ("POST", ["pulls", number, "comments", id, "replies"]) => {
            super::reviews::reply(state, request, number, id)
        }
        ("GET", ["pulls"]) => list_pulls(state, request),
        ("GET", ["pulls", number]) => match number.parse::<u64>() {
            Ok(number) => match state.pulls.iter().find(|pull| pull.number == number) {
                Some(pull) => FakeResponse::json(200, &pull_json(state, &pull.clone())),
                None => not_found(),
            },
            Err(_) => not_found(),
        },
        ("PATCH", ["pulls", number]) => {
            let body = request
                .json()
                .ok()
                .and_then(|b| b.get("body").and_then(Value::as_str).map(String::from));
            let index = number
                .parse::<u64>()
                .ok()
                .and_then(|n| state.pulls.iter().position(|pull| pull.number == n));
            match (index, body) {
                (Some(index), Some(body)) => {
                    state.pulls[index].body = body;
                    let pull = state.pulls[index].clone();
                    FakeResponse::json(200, &pull_json(state, &pull))
                }
                (Some(_), None) => error(400, "Problems parsing JSON"),
                (None, _) => not_found(),
            }
        }
        (_, ["git", ..]) | (_, ["contents", ..]) => git_data::route(state, request, method, rest),
        ("GET", ["actions", ..]) | ("GET", ["check-suites", ..]) => {
            super::actions::route(state, rest)
        }
        _ => not_found(),
    }
}

fn repository(state: &State) -> FakeResponse {
    FakeResponse::json(
        200,
        &json!({
            "id": 42,
            "name": state.name,
            "full_name": state.full_name(),
            "owner": shapes::user(&state.owner),
            "private": false,
            "default_branch": state.default_branch,
            "html_url": format!("https://github.com/{}", state.full_name()),
            "url": format!("{}/repos/{}", state.base_url, state.full_name()),
        }),
    )
}

fn with_issue(
    state: &mut State,
    number: &str,
    then: impl FnOnce(&mut State, u64) -> FakeResponse,
) -> FakeResponse {
    match number.parse::<u64>() {
        Ok(number) if state.issues.contains_key(&number) => then(state, number),
        _ => not_found(),
    }
}

fn with_comment(
    state: &mut State,
    id: &str,
    then: impl FnOnce(&mut State, usize) -> FakeResponse,
) -> FakeResponse {
    let index = id
        .parse::<u64>()
        .ok()
        .and_then(|id| state.comments.iter().position(|comment| comment.id == id));
    match index {
        Some(index) => then(state, index),
        None => not_found(),
    }
}

/// The comment body from a request, or GitHub's answer for a missing or empty one.
fn comment_body(request: &FakeRequest) -> Result<String, FakeResponse> {
    let Ok(body) = request.json() else {
        return Err(error(400, "Problems parsing JSON"));
    };
    match body.get("body").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Ok(text.to_string()),
        _ => Err(validation_failed(json!([{
            "resource": "IssueComment", "code": "missing_field", "field": "body"
        }]))),
    }
}

fn create_comment(state: &mut State, request: &FakeRequest, number: u64) -> FakeResponse {
    let body = match comment_body(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let id = state.next_id();
    let now = state.tick();
    let comment = Comment {
        id,
        issue_number: number,
        body,
        user: state.actor.clone(),
        created_at: now,
        updated_at: now,
    };
    state.comments.push(comment.clone());
    let value = shapes::comment(state, &comment);
    let location = value["url"].as_str().unwrap_or_default().to_string();
    FakeResponse::json(201, &value).with_header("location", &location)
}

fn update_comment(state: &mut State, request: &FakeRequest, id: &str) -> FakeResponse {
    let body = match comment_body(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    with_comment(state, id, |state, index| {
        let now = state.tick();
        let comment = &mut state.comments[index];
        comment.body = body;
        comment.updated_at = now;
        let comment = comment.clone();
        FakeResponse::json(200, &shapes::comment(state, &comment))
    })
}

fn reactions(state: &mut State, request: &FakeRequest, target: ReactionTarget) -> FakeResponse {
    match request.method.as_str() {
        "GET" => {
            let items = state
                .reactions
                .iter()
                .filter(|reaction| reaction.target == target)
                .map(reaction_json)
                .collect();
            shapes::paginate(state, request, items)
        }
        "POST" => {
            let content = request
                .json()
                .ok()
                .and_then(|body| {
                    body.get("content")
                        .and_then(Value::as_str)
                        .map(String::from)
                })
                .unwrap_or_default();
            if !REACTIONS.contains(&content.as_str()) {
                return validation_failed(json!([{
                    "resource": "Reaction", "code": "invalid", "field": "content"
                }]));
            }
            let actor = state.actor.clone();
            if let Some(existing) = state.reactions.iter().find(|reaction| {
                reaction.target == target && reaction.content == content && reaction.user == actor
            }) {
                return FakeResponse::json(200, &reaction_json(existing));
            }
            let reaction = Reaction {
                id: state.next_id(),
                target,
                content,
                user: actor,
            };
            state.reactions.push(reaction.clone());
            FakeResponse::json(201, &reaction_json(&reaction))
        }
        _ => not_found(),
    }
}

fn reaction_json(reaction: &Reaction) -> Value {
    json!({
        "id": reaction.id,
        "node_id": format!("REA_{}", reaction.id),
        "user": shapes::user(&reaction.user),
        "content": reaction.content,
        "created_at": shapes::date(super::CLOCK_START),
    })
}

/// GitHub answers the legacy `permission` (maintain → write, triage → read) and the
/// actual role in `role_name`.
fn permission(state: &State, login: &str) -> FakeResponse {
    let Some(role) = state.collaborators.get(&login.to_ascii_lowercase()) else {
        return error(404, &format!("{login} is not a user"));
    };
    let legacy = match role.as_str() {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    };
    let rank = ["none", "read", "triage", "write", "maintain", "admin"]
        .iter()
        .position(|candidate| candidate == role)
        .unwrap_or(0);
    let mut user = shapes::user(login);
    user["permissions"] = json!({
        "admin": rank >= 5, "maintain": rank >= 4, "push": rank >= 3,
        "triage": rank >= 2, "pull": rank >= 1,
    });
    user["role_name"] = json!(role);
    FakeResponse::json(
        200,
        &json!({ "permission": legacy, "role_name": role, "user": user }),
    )
}

/// `head` may be `owner:branch`; the fake's repository is the only owner it knows.
fn head_branch<'a>(state: &State, head: &'a str) -> &'a str {
    match head.split_once(':') {
        Some((owner, branch)) if owner.eq_ignore_ascii_case(&state.owner) => branch,
        Some(_) => "",
        None => head,
    }
}

fn create_pull(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let Ok(body) = request.json() else {
        return error(400, "Problems parsing JSON");
    };
    let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or_default();
    let (title, head, base) = (text("title"), text("head"), text("base"));
    if title.is_empty() {
        return validation_failed(
            json!([{ "resource": "PullRequest", "code": "missing_field", "field": "title" }]),
        );
    }
    let head = head_branch(state, head).to_string();
    let Some(head_sha) = state.refs.get(&format!("refs/heads/{head}")).cloned() else {
        return validation_failed(
            json!([{ "resource": "PullRequest", "field": "head", "code": "invalid" }]),
        );
    };
    let Some(base_sha) = state.refs.get(&format!("refs/heads/{base}")).cloned() else {
        return validation_failed(
            json!([{ "resource": "PullRequest", "field": "base", "code": "invalid" }]),
        );
    };
    if state
        .pulls
        .iter()
        .any(|pull| pull.head == head && pull.base == base && pull.state == "open")
    {
        return validation_failed(json!([{
            "resource": "PullRequest", "code": "custom",
            "message": format!("A pull request already exists for {}:{head}.", state.owner)
        }]));
    }
    if state.objects.is_ancestor(&head_sha, &base_sha) {
        return validation_failed(json!([{
            "resource": "PullRequest", "code": "custom",
            "message": format!("No commits between {base} and {head}")
        }]));
    }
    state.next_number += 1;
    let number = state.next_number;
    let now = state.tick();
    let pull = PullRequest {
        number,
        title: title.to_string(),
        head,
        base: base.to_string(),
        body: text("body").to_string(),
        state: "open".to_string(),
        head_sha,
        draft: body.get("draft").and_then(Value::as_bool).unwrap_or(false),
    };
    state.issues.insert(
        number,
        Issue {
            number,
            title: pull.title.clone(),
            body: pull.body.clone(),
            user: state.actor.clone(),
            labels: Vec::new(),
            state: "open".to_string(),
            pull_request: true,
            created_at: now,
            updated_at: now,
        },
    );
    state.pulls.push(pull.clone());
    FakeResponse::json(201, &pull_json(state, &pull))
}

/// Like GitHub, a `head` filter without `owner:` is ignored.
fn list_pulls(state: &State, request: &FakeRequest) -> FakeResponse {
    let wanted_state = request
        .query_param("state")
        .unwrap_or_else(|| "open".into());
    let head = request
        .query_param("head")
        .filter(|head| head.contains(':'))
        .map(|head| head_branch(state, &head).to_string());
    let base = request.query_param("base");
    let items = state
        .pulls
        .iter()
        .filter(|pull| wanted_state == "all" || pull.state == wanted_state)
        .filter(|pull| head.as_ref().is_none_or(|head| &pull.head == head))
        .filter(|pull| base.as_ref().is_none_or(|base| &pull.base == base))
        .map(|pull| pull_json(state, pull))
        .collect();
    shapes::paginate(state, request, items)
}

fn pull_json(state: &State, pull: &PullRequest) -> Value {
    let repo_url = format!("{}/repos/{}", state.base_url, state.full_name());
    let base_sha = state
        .refs
        .get(&format!("refs/heads/{}", pull.base))
        .cloned()
        .unwrap_or_default();
    json!({
        "id": 700_000 + pull.number,
        "node_id": format!("PR_{}", pull.number),
        "number": pull.number,
        "url": format!("{repo_url}/pulls/{}", pull.number),
        "html_url": format!("https://github.com/{}/pull/{}", state.full_name(), pull.number),
        "issue_url": format!("{repo_url}/issues/{}", pull.number),
        "state": pull.state,
        "title": pull.title,
        "body": pull.body,
        "draft": pull.draft,
        "merged": false,
        "user": shapes::user(&state.actor),
        "head": {
            "label": format!("{}:{}", state.owner, pull.head),
            "ref": pull.head,
            "sha": pull.head_sha,
        },
        "base": {
            "label": format!("{}:{}", state.owner, pull.base),
            "ref": pull.base,
            "sha": base_sha,
        },
    })
}

/// GraphQL: `viewer { login }`, answered with the token's account, and the review threads'
/// query and mutation (`reviews.rs`).
fn graphql(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let body: Option<Value> = request.json().ok();
    let query = body
        .as_ref()
        .and_then(|body| body.get("query").and_then(Value::as_str).map(str::to_owned));
    let variables = body
        .as_ref()
        .and_then(|body| body.get("variables").cloned())
        .unwrap_or(Value::Null);
    if let Some(answer) = query
        .as_deref()
        .and_then(|q| super::reviews::graphql(state, q, &variables))
    {
        return answer;
    }
    match query {
        Some(q) if q.contains("viewer") && q.contains("login") => FakeResponse::json(
            200,
            &json!({ "data": { "viewer": { "login": state.actor } } }),
        ),
        _ => FakeResponse::json(
            200,
            &json!({ "errors": [{ "message": "unsupported query" }] }),
        ),
    }
}
