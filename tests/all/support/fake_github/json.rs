//! GitHub's JSON shapes and error bodies.

use serde_json::{Value, json};

use super::{Comment, Issue, ReactionTarget, State};
use crate::support::server::{FakeRequest, FakeResponse};

const DOCS: &str = "https://docs.github.com/rest";

pub fn error(status: u16, message: &str) -> FakeResponse {
    FakeResponse::json(
        status,
        &json!({ "message": message, "documentation_url": DOCS, "status": status.to_string() }),
    )
}

pub fn not_found() -> FakeResponse {
    error(404, "Not Found")
}

pub fn validation_failed(errors: Value) -> FakeResponse {
    FakeResponse::json(
        422,
        &json!({
            "message": "Validation Failed",
            "errors": errors,
            "documentation_url": DOCS,
            "status": "422"
        }),
    )
}

pub fn date(epoch_seconds: i64) -> String {
    chrono::DateTime::from_timestamp(epoch_seconds, 0)
        .expect("fake clock in range")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A stable id per login (FNV-1a), so the same user always has the same id.
pub fn user_id(login: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in login.to_ascii_lowercase().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    1000 + hash % 100_000_000
}

pub fn user(login: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    // GitHub's `simple-user`: every field its OpenAPI description requires.
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login,
        "id": user_id(login),
        "node_id": format!("U_{}", user_id(login)),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", user_id(login)),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": kind,
        "site_admin": false,
        "user_view_type": "public",
    })
}

/// GitHub's `author_association` for a login on this repository.
fn association(state: &State, login: &str) -> &'static str {
    if login.eq_ignore_ascii_case(&state.owner) {
        return "OWNER";
    }
    match state
        .collaborators
        .get(&login.to_ascii_lowercase())
        .map(String::as_str)
    {
        Some("none") | None => "NONE",
        Some(_) => "COLLABORATOR",
    }
}

fn reaction_rollup(state: &State, target: ReactionTarget, url: &str) -> Value {
    let mut rollup = json!({ "url": format!("{url}/reactions"), "total_count": 0 });
    for content in super::routes::REACTIONS {
        rollup[content] = json!(0);
    }
    for reaction in state.reactions.iter().filter(|r| r.target == target) {
        rollup["total_count"] = json!(rollup["total_count"].as_u64().unwrap_or(0) + 1);
        rollup[reaction.content.as_str()] =
            json!(rollup[reaction.content.as_str()].as_u64().unwrap_or(0) + 1);
    }
    rollup
}

pub fn issue(state: &State, issue: &Issue) -> Value {
    let repo_url = format!("{}/repos/{}", state.base_url, state.full_name());
    let url = format!("{repo_url}/issues/{}", issue.number);
    let kind = if issue.pull_request { "pull" } else { "issues" };
    let comments = state
        .comments
        .iter()
        .filter(|comment| comment.issue_number == issue.number)
        .count();
    let mut value = json!({
        "id": 500_000 + issue.number,
        "node_id": format!("I_{}", issue.number),
        "url": url,
        "repository_url": repo_url,
        "labels_url": format!("{url}/labels{{/name}}"),
        "comments_url": format!("{url}/comments"),
        "events_url": format!("{url}/events"),
        "html_url": format!("https://github.com/{}/{kind}/{}", state.full_name(), issue.number),
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "user": user(&issue.user),
        "labels": issue.labels.iter().map(|name| label(state, name)).collect::<Vec<_>>(),
        "state": issue.state,
        "state_reason": null,
        "assignee": null,
        "assignees": [],
        "milestone": null,
        "locked": false,
        "active_lock_reason": null,
        "closed_at": null,
        "comments": comments,
        "author_association": association(state, &issue.user),
        "created_at": date(issue.created_at),
        "updated_at": date(issue.updated_at),
        "reactions": reaction_rollup(state, ReactionTarget::Issue(issue.number), &url),
    });
    if issue.pull_request {
        value["pull_request"] = json!({
            "url": format!("{repo_url}/pulls/{}", issue.number),
            "html_url": format!("https://github.com/{}/pull/{}", state.full_name(), issue.number),
            "diff_url": format!("https://github.com/{}/pull/{}.diff", state.full_name(), issue.number),
            "patch_url": format!("https://github.com/{}/pull/{}.patch", state.full_name(), issue.number),
        });
    }
    value
}

/// A label as GitHub's `label` schema has it (the fake keeps only names).
fn label(state: &State, name: &str) -> Value {
    let id = name
        .bytes()
        .fold(7_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 1_000_000;
    json!({
        "id": id,
        "node_id": format!("LA_{id}"),
        "url": format!("{}/repos/{}/labels/{name}", state.base_url, state.full_name()),
        "name": name,
        "description": null,
        "color": "ededed",
        "default": false,
    })
}

pub fn comment(state: &State, comment: &Comment) -> Value {
    let repo_url = format!("{}/repos/{}", state.base_url, state.full_name());
    let url = format!("{repo_url}/issues/comments/{}", comment.id);
    json!({
        "id": comment.id,
        "node_id": format!("IC_{}", comment.id),
        "url": url,
        "html_url": format!(
            "https://github.com/{}/issues/{}#issuecomment-{}",
            state.full_name(), comment.issue_number, comment.id
        ),
        "issue_url": format!("{repo_url}/issues/{}", comment.issue_number),
        "body": comment.body,
        "user": user(&comment.user),
        "author_association": association(state, &comment.user),
        "created_at": date(comment.created_at),
        "updated_at": date(comment.updated_at),
        "reactions": reaction_rollup(state, ReactionTarget::Comment(comment.id), &url),
    })
}

/// One page of `items` with GitHub's `Link` header (`per_page` ≤ 100, default 30).
pub fn paginate(state: &State, request: &FakeRequest, items: Vec<Value>) -> FakeResponse {
    let per_page = request
        .query_param("per_page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = request
        .query_param("page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let mut response = FakeResponse::json(200, &Value::Array(slice));
    let page_url = |number: usize| {
        let mut query: Vec<(String, String)> =
            url::form_urlencoded::parse(request.query.as_bytes())
                .filter(|(key, _)| key != "page" && key != "per_page")
                .map(|(key, value)| (key.into_owned(), value.into_owned()))
                .collect();
        query.push(("per_page".into(), per_page.to_string()));
        query.push(("page".into(), number.to_string()));
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        format!("{}{}?{query}", state.base_url, request.path)
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("<{}>; rel=\"prev\"", page_url(page - 1)));
    }
    if page < last {
        links.push(format!("<{}>; rel=\"next\"", page_url(page + 1)));
        links.push(format!("<{}>; rel=\"last\"", page_url(last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"first\"", page_url(1)));
    }
    if !links.is_empty() {
        response = response.with_header("link", &links.join(", "));
    }
    response
}

/// Base64 the way GitHub sends file and blob content: wrapped at 60 characters.
pub fn wrapped_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = String::new();
    for chunk in encoded.as_bytes().chunks(60) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out
}
