//! Routing and the issue, merge request, note, emoji, member and user endpoints.

use serde_json::{Value, json};

use super::json::{self as shapes, message, not_found};
use super::{
    AwardEmoji, Awardable, MergeRequest, Note, Noteable, PROJECT_ID, PROJECT_PATH, State,
    repository,
};
use crate::support::server::{FakeRequest, FakeResponse};

const EMOJI: [&str; 16] = [
    "thumbsup",
    "thumbsdown",
    "eyes",
    "rocket",
    "tada",
    "heart",
    "white_check_mark",
    "x",
    "hourglass",
    "hourglass_flowing_sand",
    "robot",
    "warning",
    "question",
    "smile",
    "confused",
    "laughing",
];

/// A job token (`CI_JOB_TOKEN`) reaches only reads of the project, its files and branches.
pub fn job_token_allowed(request: &FakeRequest) -> bool {
    let segments = request.segments();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    request.method == "GET"
        && matches!(
            parts.as_slice(),
            ["api", "v4", "projects", _]
                | [
                    "api",
                    "v4",
                    "projects",
                    _,
                    "repository",
                    "files" | "branches",
                    ..
                ]
        )
}

/// A parameter from the JSON body, a form body or the query string.
pub fn param(request: &FakeRequest, name: &str) -> Option<Value> {
    if let Ok(Value::Object(body)) = request.json()
        && let Some(value) = body.get(name)
    {
        return Some(value.clone());
    }
    let form = url::form_urlencoded::parse(&request.body)
        .find(|(key, _)| key == name)
        .map(|(_, value)| Value::String(value.into_owned()));
    form.or_else(|| request.query_param(name).map(Value::String))
}

pub fn text_param(request: &FakeRequest, name: &str) -> Option<String> {
    match param(request, name)? {
        Value::String(text) => Some(text),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

pub fn missing(name: &str) -> FakeResponse {
    FakeResponse::json(400, &json!({ "error": format!("{name} is missing") }))
}

fn method_not_allowed() -> FakeResponse {
    message(405, "405 Method Not Allowed")
}

pub fn route(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let segments = request.segments();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = request.method.as_str();
    let rest = match parts.as_slice() {
        ["api", "v4", "users"] if method == "GET" => return users(state, request),
        // The token's own user.
        ["api", "v4", "user"] if method == "GET" => {
            let actor = state.actor.clone();
            return FakeResponse::json(200, &shapes::user(state, &actor));
        }
        ["api", "v4", "projects", project, rest @ ..] => {
            if *project != PROJECT_ID.to_string() && *project != PROJECT_PATH {
                return not_found("Project");
            }
            rest
        }
        _ => return message(404, "404 Not Found"),
    };
    match (method, rest) {
        ("GET", []) => FakeResponse::json(200, &shapes::project(state)),
        ("GET", ["issues", iid]) => match parse(iid).and_then(|iid| state.issues.get(&iid)) {
            Some(issue) => FakeResponse::json(200, &shapes::issue(state, &issue.clone())),
            None => not_found("Issue"),
        },
        ("POST", ["merge_requests"]) => create_merge_request(state, request),
        ("GET", ["merge_requests"]) => list_merge_requests(state, request),
        ("GET", ["merge_requests", iid]) => {
            match parse(iid).and_then(|iid| state.merge_requests.get(&iid)) {
                Some(mr) => FakeResponse::json(200, &shapes::merge_request(state, &mr.clone())),
                None => not_found("Merge Request"),
            }
        }
        ("PUT", ["merge_requests", iid]) => {
            let description = request.json().ok().and_then(|body| {
                body.get("description")
                    .and_then(|d| d.as_str().map(String::from))
            });
            match (
                parse(iid).and_then(|iid| state.merge_requests.get_mut(&iid)),
                description,
            ) {
                (Some(mr), Some(description)) => {
                    mr.description = description;
                    let mr = mr.clone();
                    FakeResponse::json(200, &shapes::merge_request(state, &mr))
                }
                (Some(_), None) => message(400, "description is missing"),
                (None, _) => not_found("Merge Request"),
            }
        }
        (_, [kind @ ("issues" | "merge_requests"), iid, tail @ ..]) => {
            let Some(noteable) = noteable(state, kind, iid) else {
                return not_found(if *kind == "issues" {
                    "Issue"
                } else {
                    "Merge Request"
                });
            };
            thread_route(state, request, noteable, tail)
        }
        ("GET", ["members", "all", user_id]) => member(state, user_id),
        (_, ["repository", ..]) => repository::route(state, request, method, rest),
        ("GET", ["pipelines", id, "jobs"]) => pipeline_jobs(state, request, id),
        ("GET", ["pipelines", id]) => match parse(id).and_then(|id| state.pipeline_runs.get(&id)) {
            Some(run) => FakeResponse::json(200, &pipeline(state, run)),
            None => not_found("Pipeline"),
        },
        ("GET", ["jobs", id, "trace"]) => {
            let id = parse(id);
            let trace = state
                .pipelines
                .values()
                .flatten()
                .find(|job| Some(job.0) == id)
                .map(|job| job.3.clone());
            match trace {
                Some(trace) => FakeResponse::text(200, &trace),
                None => not_found("Job"),
            }
        }
        _ => message(404, "404 Not Found"),
    }
}

fn parse(number: &str) -> Option<u64> {
    number.parse().ok()
}

fn noteable(state: &State, kind: &str, iid: &str) -> Option<Noteable> {
    let iid = parse(iid)?;
    match kind {
        "issues" if state.issues.contains_key(&iid) => Some(Noteable::Issue(iid)),
        "merge_requests" if state.merge_requests.contains_key(&iid) => {
            Some(Noteable::MergeRequest(iid))
        }
        _ => None,
    }
}

/// Routes under an issue or merge request: notes and emoji.
fn thread_route(
    state: &mut State,
    request: &FakeRequest,
    noteable: Noteable,
    tail: &[&str],
) -> FakeResponse {
    let method = request.method.as_str();
    let thread_awardable = match noteable {
        Noteable::Issue(iid) => Awardable::Issue(iid),
        Noteable::MergeRequest(iid) => Awardable::MergeRequest(iid),
    };
    match (method, tail) {
        ("GET", ["notes"]) => list_notes(state, request, noteable),
        ("POST", ["notes"]) => create_note(state, request, noteable),
        (_, ["notes", id, rest @ ..]) => {
            let Some(index) = parse(id).and_then(|id| {
                state
                    .notes
                    .iter()
                    .position(|note| note.id == id && note.noteable == noteable)
            }) else {
                return not_found("Note");
            };
            match (method, rest) {
                ("GET", []) => FakeResponse::json(200, &shapes::note(state, &state.notes[index])),
                ("PUT", []) => update_note(state, request, index),
                ("DELETE", []) => {
                    state.notes.remove(index);
                    FakeResponse::empty(204)
                }
                (_, []) => method_not_allowed(),
                (_, ["award_emoji"]) => {
                    let awardable = Awardable::Note(state.notes[index].id);
                    awards(state, request, awardable)
                }
                _ => message(404, "404 Not Found"),
            }
        }
        (_, ["award_emoji"]) => awards(state, request, thread_awardable),
        ("GET", ["pipelines"]) => match noteable {
            Noteable::MergeRequest(iid) => merge_request_pipelines(state, request, iid),
            Noteable::Issue(_) => message(404, "404 Not Found"),
        },
        (_, ["discussions", rest @ ..]) => match noteable {
            Noteable::MergeRequest(iid) => super::discussions::route(state, request, iid, rest),
            Noteable::Issue(_) => message(404, "404 Not Found"),
        },
        _ => message(404, "404 Not Found"),
    }
}

/// GitLab lists notes newest first unless asked otherwise.
fn list_notes(state: &State, request: &FakeRequest, noteable: Noteable) -> FakeResponse {
    let ascending = request.query_param("sort").as_deref() == Some("asc");
    let by_updated = request.query_param("order_by").as_deref() == Some("updated_at");
    let mut notes: Vec<&Note> = state
        .notes
        .iter()
        .filter(|note| note.noteable == noteable)
        .collect();
    notes.sort_by_key(|note| {
        (
            if by_updated {
                note.updated_at
            } else {
                note.created_at
            },
            note.id,
        )
    });
    if !ascending {
        notes.reverse();
    }
    let items = notes
        .into_iter()
        .map(|note| shapes::note(state, note))
        .collect();
    shapes::paginate(state, request, items)
}

fn create_note(state: &mut State, request: &FakeRequest, noteable: Noteable) -> FakeResponse {
    let Some(body) = text_param(request, "body").filter(|body| !body.is_empty()) else {
        return missing("body");
    };
    let id = state.next_id();
    let now = state.tick();
    let note = Note {
        id,
        noteable,
        body,
        author: state.actor.clone(),
        system: false,
        created_at: now,
        updated_at: now,
    };
    state.notes.push(note.clone());
    FakeResponse::json(201, &shapes::note(state, &note))
}

fn update_note(state: &mut State, request: &FakeRequest, index: usize) -> FakeResponse {
    let Some(body) = text_param(request, "body").filter(|body| !body.is_empty()) else {
        return missing("body");
    };
    let now = state.tick();
    let note = &mut state.notes[index];
    note.body = body;
    note.updated_at = now;
    let note = note.clone();
    FakeResponse::json(200, &shapes::note(state, &note))
}

fn awards(state: &mut State, request: &FakeRequest, awardable: Awardable) -> FakeResponse {
    match request.method.as_str() {
        "GET" => {
            let items = state
                .awards
                .iter()
                .filter(|award| award.awardable == awardable)
                .map(|award| shapes::award(state, award))
                .collect();
            shapes::paginate(state, request, items)
        }
        "POST" => {
            let Some(name) = text_param(request, "name") else {
                return missing("name");
            };
            if !EMOJI.contains(&name.as_str()) {
                return not_found("Award Emoji Name is not a valid emoji name");
            }
            let actor = state.actor.clone();
            if state.awards.iter().any(|award| {
                award.awardable == awardable && award.name == name && award.user == actor
            }) {
                return not_found("Award Emoji Name has already been taken");
            }
            let award = AwardEmoji {
                id: state.next_id(),
                awardable,
                name,
                user: actor,
            };
            state.awards.push(award.clone());
            FakeResponse::json(201, &shapes::award(state, &award))
        }
        _ => method_not_allowed(),
    }
}

fn member(state: &State, user_id: &str) -> FakeResponse {
    let Some(id) = parse(user_id) else {
        return not_found("Member");
    };
    let (Some(level), Some(username)) = (state.members.get(&id), state.username(id)) else {
        return not_found("Member");
    };
    let mut value = shapes::user(state, &username);
    value["access_level"] = json!(level);
    value["expires_at"] = Value::Null;
    FakeResponse::json(200, &value)
}

fn users(state: &State, request: &FakeRequest) -> FakeResponse {
    let wanted = request.query_param("username").unwrap_or_default();
    let items: Vec<Value> = state
        .users
        .keys()
        .filter(|name| name.eq_ignore_ascii_case(&wanted))
        .map(|name| shapes::user(state, name))
        .collect();
    FakeResponse::json(200, &Value::Array(items))
}

fn create_merge_request(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let Some(source) = text_param(request, "source_branch") else {
        return missing("source_branch");
    };
    let Some(target) = text_param(request, "target_branch") else {
        return missing("target_branch");
    };
    let Some(title) = text_param(request, "title") else {
        return missing("title");
    };
    let Some(sha) = state.branches.get(&source).cloned() else {
        return FakeResponse::json(
            400,
            &json!({ "message": [format!("Source branch \"{source}\" does not exist")] }),
        );
    };
    if !state.branches.contains_key(&target) {
        return FakeResponse::json(
            400,
            &json!({ "message": [format!("Target branch \"{target}\" does not exist")] }),
        );
    }
    if let Some(existing) = state
        .merge_requests
        .values()
        .find(|mr| mr.source_branch == source && mr.target_branch == target && mr.state == "opened")
    {
        return FakeResponse::json(
            409,
            &json!({ "message": [format!(
                "Another open merge request already exists for this source branch: !{}",
                existing.iid
            )] }),
        );
    }
    state.next_mr_iid += 1;
    let iid = state.next_mr_iid;
    let now = state.tick();
    let merge_request = MergeRequest {
        iid,
        title,
        description: text_param(request, "description").unwrap_or_default(),
        source_branch: source,
        target_branch: target,
        author: state.actor.clone(),
        state: "opened".to_string(),
        sha,
        created_at: now,
    };
    state.merge_requests.insert(iid, merge_request.clone());
    FakeResponse::json(201, &shapes::merge_request(state, &merge_request))
}

/// Like GitLab, without `state=` every state is listed.
fn list_merge_requests(state: &State, request: &FakeRequest) -> FakeResponse {
    let wanted = request.query_param("state").unwrap_or_else(|| "all".into());
    let source = request.query_param("source_branch");
    let target = request.query_param("target_branch");
    let items = state
        .merge_requests
        .values()
        .filter(|mr| wanted == "all" || mr.state == wanted)
        .filter(|mr| {
            source
                .as_ref()
                .is_none_or(|source| &mr.source_branch == source)
        })
        .filter(|mr| {
            target
                .as_ref()
                .is_none_or(|target| &mr.target_branch == target)
        })
        .map(|mr| shapes::merge_request(state, mr))
        .collect();
    shapes::paginate(state, request, items)
}

/// `GET /pipelines/:id/jobs`, filtered by `scope[]` as GitLab does.
fn pipeline_jobs(state: &State, request: &FakeRequest, id: &str) -> FakeResponse {
    let Some(jobs) = parse(id).and_then(|id| state.pipelines.get(&id)) else {
        return not_found("Pipeline");
    };
    let scope = request.query_param("scope[]");
    let jobs: Vec<Value> = jobs
        .iter()
        .filter(|job| scope.as_deref().is_none_or(|s| s == job.2))
        .map(|(id, name, status, _)| {
            json!({
                "id": id,
                "name": name,
                "status": status,
                "allow_failure": false,
                "web_url": format!("{}/-/jobs/{id}", state.base_url),
            })
        })
        .collect();
    FakeResponse::json(200, &Value::Array(jobs))
}

/// `GET /merge_requests/:iid/pipelines`: the pipelines of the merge request's source branch,
/// newest first, as GitLab lists them (basic fields only).
fn merge_request_pipelines(state: &State, request: &FakeRequest, iid: u64) -> FakeResponse {
    let Some(branch) = state
        .merge_requests
        .get(&iid)
        .map(|mr| mr.source_branch.clone())
    else {
        return not_found("Merge Request");
    };
    let items = state
        .pipeline_runs
        .values()
        .rev()
        .filter(|run| run.branch == branch)
        .map(|run| pipeline(state, run))
        .collect();
    shapes::paginate(state, request, items)
}

/// A pipeline's basic fields, as GitLab lists and shows them.
fn pipeline(state: &State, run: &super::PipelineRun) -> Value {
    json!({
        "id": run.id,
        "iid": run.id,
        "project_id": PROJECT_ID,
        "sha": run.sha,
        "ref": run.branch,
        "status": run.status,
        "source": run.source,
        "web_url": format!("{}/{PROJECT_PATH}/-/pipelines/{}", state.base_url, run.id),
    })
}
