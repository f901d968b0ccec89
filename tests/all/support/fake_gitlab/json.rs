//! GitLab's JSON shapes and error bodies.

use serde_json::{Value, json};

use super::{
    AwardEmoji, Awardable, Issue, MergeRequest, Note, Noteable, PROJECT_ID, PROJECT_PATH, State,
};
use crate::support::git_objects::Commit;
use crate::support::server::{FakeRequest, FakeResponse};

/// `{"message": "..."}`, GitLab's usual error body.
pub fn message(status: u16, text: &str) -> FakeResponse {
    FakeResponse::json(status, &json!({ "message": text }))
}

/// `404 <What> Not Found`.
pub fn not_found(what: &str) -> FakeResponse {
    message(404, &format!("404 {what} Not Found"))
}

/// What GitLab answers when a token lacks the scope an endpoint needs (a job token here).
pub fn insufficient_scope() -> FakeResponse {
    FakeResponse::json(
        403,
        &json!({
            "error": "insufficient_scope",
            "error_description": "The request requires higher privileges than provided by the access token.",
            "scope": "api"
        }),
    )
}

pub fn date(epoch_seconds: i64) -> String {
    chrono::DateTime::from_timestamp(epoch_seconds, 0)
        .expect("fake clock in range")
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

pub fn web_url(state: &State, path: &str) -> String {
    format!("{}/{PROJECT_PATH}/-/{path}", state.base_url)
}

pub fn user(state: &State, username: &str) -> Value {
    let id = state.users.get(username).copied().unwrap_or(0);
    json!({
        "id": id,
        "username": username,
        "name": username,
        "state": "active",
        "locked": false,
        "bot": username.contains("_bot"),
        "avatar_url": null,
        "web_url": format!("{}/{username}", state.base_url),
    })
}

pub fn project(state: &State) -> Value {
    json!({
        "id": PROJECT_ID,
        "name": "widgets",
        "path": "widgets",
        "path_with_namespace": PROJECT_PATH,
        "default_branch": state.default_branch,
        "web_url": format!("{}/{PROJECT_PATH}", state.base_url),
    })
}

pub fn issue(state: &State, issue: &Issue) -> Value {
    let notes = state
        .notes
        .iter()
        .filter(|note| note.noteable == Noteable::Issue(issue.iid) && !note.system)
        .count();
    json!({
        "id": 300_000 + issue.iid,
        "iid": issue.iid,
        "project_id": PROJECT_ID,
        "title": issue.title,
        "description": issue.description,
        "state": issue.state,
        "author": user(state, &issue.author),
        "labels": issue.labels,
        "user_notes_count": notes,
        "web_url": web_url(state, &format!("issues/{}", issue.iid)),
        "created_at": date(issue.created_at),
        "updated_at": date(issue.updated_at),
    })
}

pub fn merge_request(state: &State, merge_request: &MergeRequest) -> Value {
    json!({
        "id": 400_000 + merge_request.iid,
        "iid": merge_request.iid,
        "project_id": PROJECT_ID,
        "title": merge_request.title,
        "description": merge_request.description,
        "state": merge_request.state,
        "source_branch": merge_request.source_branch,
        "target_branch": merge_request.target_branch,
        "source_project_id": PROJECT_ID,
        "target_project_id": PROJECT_ID,
        "author": user(state, &merge_request.author),
        "sha": merge_request.sha,
        "web_url": web_url(state, &format!("merge_requests/{}", merge_request.iid)),
        "created_at": date(merge_request.created_at),
    })
}

pub fn note(state: &State, note: &Note) -> Value {
    let (noteable_type, iid, offset) = match note.noteable {
        Noteable::Issue(iid) => ("Issue", iid, 300_000),
        Noteable::MergeRequest(iid) => ("MergeRequest", iid, 400_000),
    };
    json!({
        "id": note.id,
        "type": null,
        "body": note.body,
        "author": user(state, &note.author),
        "created_at": date(note.created_at),
        "updated_at": date(note.updated_at),
        "system": note.system,
        "noteable_id": offset + iid,
        "noteable_type": noteable_type,
        "noteable_iid": iid,
        "project_id": PROJECT_ID,
        "resolvable": false,
        "confidential": false,
        "internal": false,
    })
}

pub fn award(state: &State, award: &AwardEmoji) -> Value {
    let (awardable_type, awardable_id) = match award.awardable {
        Awardable::Issue(iid) => ("Issue", 300_000 + iid),
        Awardable::MergeRequest(iid) => ("MergeRequest", 400_000 + iid),
        Awardable::Note(id) => ("Note", id),
    };
    json!({
        "id": award.id,
        "name": award.name,
        "user": user(state, &award.user),
        "created_at": date(super::CLOCK_START),
        "updated_at": date(super::CLOCK_START),
        "awardable_id": awardable_id,
        "awardable_type": awardable_type,
    })
}

pub fn commit(state: &State, sha: &str, commit: &Commit) -> Value {
    json!({
        "id": sha,
        "short_id": &sha[..8],
        "title": commit.message.lines().next().unwrap_or_default(),
        "message": commit.message,
        "author_name": commit.author.name,
        "author_email": commit.author.email,
        "authored_date": date(commit.author.time),
        "committer_name": commit.committer.name,
        "committer_email": commit.committer.email,
        "committed_date": date(commit.committer.time),
        "created_at": date(commit.committer.time),
        "parent_ids": commit.parents,
        "web_url": web_url(state, &format!("commit/{sha}")),
        "status": null,
    })
}

/// One page of `items` with GitLab's pagination headers (`per_page` ≤ 100, default 20).
pub fn paginate(state: &State, request: &FakeRequest, items: Vec<Value>) -> FakeResponse {
    let per_page = request
        .query_param("per_page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let page = request
        .query_param("page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let total = items.len();
    let pages = total.div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let page_url = |number: usize| {
        let mut query: Vec<(String, String)> =
            url::form_urlencoded::parse(request.query.as_bytes())
                .filter(|(key, _)| key != "page" && key != "per_page")
                .map(|(key, value)| (key.into_owned(), value.into_owned()))
                .collect();
        query.push(("page".into(), number.to_string()));
        query.push(("per_page".into(), per_page.to_string()));
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        format!("{}{}?{query}", state.base_url, request.path)
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("<{}>; rel=\"prev\"", page_url(page - 1)));
    }
    if page < pages {
        links.push(format!("<{}>; rel=\"next\"", page_url(page + 1)));
    }
    links.push(format!("<{}>; rel=\"first\"", page_url(1)));
    links.push(format!("<{}>; rel=\"last\"", page_url(pages)));
    let next = if page < pages {
        (page + 1).to_string()
    } else {
        String::new()
    };
    let prev = if page > 1 {
        (page - 1).to_string()
    } else {
        String::new()
    };
    FakeResponse::json(200, &Value::Array(slice))
        .with_header("x-total", &total.to_string())
        .with_header("x-total-pages", &pages.to_string())
        .with_header("x-per-page", &per_page.to_string())
        .with_header("x-page", &page.to_string())
        .with_header("x-next-page", &next)
        .with_header("x-prev-page", &prev)
        .with_header("link", &links.join(", "))
}
