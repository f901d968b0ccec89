//! The git data API (blobs, trees, commits, refs) and the contents API.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};

use super::json::{self as shapes, error, not_found};
use super::{State, branch_ref};
use crate::support::git_objects::{Commit, GitObject, Leaf, Signature, TreeEntry, kind_of_mode};
use crate::support::server::{FakeRequest, FakeResponse};

pub fn route(
    state: &mut State,
    request: &FakeRequest,
    method: &str,
    rest: &[&str],
) -> FakeResponse {
    match (method, rest) {
        ("POST", ["git", "blobs"]) => create_blob(state, request),
        ("GET", ["git", "blobs", sha]) => get_blob(state, sha),
        ("POST", ["git", "trees"]) => create_tree(state, request),
        ("GET", ["git", "trees", sha]) => get_tree(state, request, sha),
        ("POST", ["git", "commits"]) => create_commit(state, request),
        ("GET", ["git", "commits", sha]) => match state.objects.commit(sha).cloned() {
            Some(commit) => FakeResponse::json(200, &commit_json(state, sha, &commit)),
            None => not_found(),
        },
        ("GET", ["git", "ref", name @ ..]) if !name.is_empty() => {
            let git_ref = format!("refs/{}", name.join("/"));
            match state.refs.get(&git_ref).cloned() {
                Some(sha) => FakeResponse::json(200, &ref_json(state, &git_ref, &sha)),
                None => not_found(),
            }
        }
        ("GET", ["git", "refs", name @ ..]) => {
            let prefix = format!("refs/{}", name.join("/"));
            let matching: Vec<Value> = state
                .refs
                .iter()
                .filter(|(git_ref, _)| git_ref.starts_with(&prefix))
                .map(|(git_ref, sha)| ref_json(state, git_ref, sha))
                .collect();
            FakeResponse::json(200, &Value::Array(matching))
        }
        ("POST", ["git", "refs"]) => create_ref(state, request),
        ("PATCH", ["git", "refs", name @ ..]) if !name.is_empty() => {
            update_ref(state, request, &format!("refs/{}", name.join("/")))
        }
        ("DELETE", ["git", "refs", name @ ..]) if !name.is_empty() => {
            let git_ref = format!("refs/{}", name.join("/"));
            match state.refs.remove(&git_ref) {
                Some(_) => FakeResponse::empty(204),
                None => error(422, "Reference does not exist"),
            }
        }
        ("GET", ["contents", path @ ..]) => contents(state, request, &path.join("/")),
        ("PUT", ["contents", path @ ..]) if !path.is_empty() => {
            put_contents(state, request, &path.join("/"))
        }
        _ => not_found(),
    }
}

fn body_of(request: &FakeRequest) -> Result<Value, FakeResponse> {
    match request.json() {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        _ => Err(error(400, "Problems parsing JSON")),
    }
}

fn missing(field: &str) -> FakeResponse {
    error(
        422,
        &format!("Invalid request.\n\n\"{field}\" wasn't supplied."),
    )
}

fn create_blob(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return missing("content");
    };
    let bytes = match body
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("utf-8")
    {
        "utf-8" | "utf8" => content.as_bytes().to_vec(),
        "base64" => {
            let compact: String = content.chars().filter(|c| !c.is_whitespace()).collect();
            match base64::engine::general_purpose::STANDARD.decode(compact) {
                Ok(bytes) => bytes,
                Err(_) => return error(422, "Invalid Base64 content"),
            }
        }
        other => {
            return error(
                422,
                &format!(
                    "Invalid request.\n\nencoding \"{other}\" is not a member of [\"utf-8\", \"base64\"]"
                ),
            );
        }
    };
    let sha = state.objects.insert(GitObject::Blob(bytes));
    let url = object_url(state, "blobs", &sha);
    FakeResponse::json(201, &json!({ "sha": sha, "url": url }))
}

fn get_blob(state: &State, sha: &str) -> FakeResponse {
    let Some(bytes) = state.objects.blob(sha) else {
        return not_found();
    };
    FakeResponse::json(
        200,
        &json!({
            "sha": sha,
            "node_id": format!("B_{sha}"),
            "size": bytes.len(),
            "url": object_url(state, "blobs", sha),
            "content": shapes::wrapped_base64(bytes),
            "encoding": "base64",
        }),
    )
}

fn object_url(state: &State, kind: &str, sha: &str) -> String {
    format!(
        "{}/repos/{}/git/{kind}/{sha}",
        state.base_url,
        state.full_name()
    )
}

const MODES: [&str; 5] = ["100644", "100755", "040000", "160000", "120000"];

fn create_tree(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(entries) = body.get("tree").and_then(Value::as_array) else {
        return missing("tree");
    };
    let mut leaves = match body.get("base_tree").and_then(Value::as_str) {
        Some(base) if state.objects.tree(base).is_some() => state.objects.flatten(base),
        Some(_) => return error(422, "base_tree is not a valid tree oid"),
        None => BTreeMap::new(),
    };
    for entry in entries {
        if let Err(message) = apply_tree_entry(state, &mut leaves, entry) {
            return error(422, &message);
        }
    }
    let sha = state.objects.build_tree(&leaves);
    FakeResponse::json(201, &tree_json(state, &sha, false))
}

/// One `tree[]` item of a create-tree request applied to the flattened tree.
fn apply_tree_entry(
    state: &mut State,
    leaves: &mut BTreeMap<String, Leaf>,
    entry: &Value,
) -> Result<(), String> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(String::from);
    let path = text("path")
        .filter(|path| !path.is_empty() && !path.starts_with('/') && !path.ends_with('/'))
        .ok_or("tree.path is missing or invalid")?;
    let mode = text("mode").ok_or("tree.mode is missing")?;
    if !MODES.contains(&mode.as_str()) {
        return Err(format!("tree.mode {mode} is not a valid mode"));
    }
    let kind = text("type").ok_or("tree.type is missing")?;
    if kind != kind_of_mode(&mode) {
        return Err(format!("tree.type {kind} does not match mode {mode}"));
    }
    let content = text("content");
    let sha = entry.get("sha");
    if content.is_some() && sha.is_some() {
        return Err("tree.sha and tree.content cannot both be given".to_string());
    }
    let prefix = format!("{path}/");
    if let Some(content) = content {
        let sha = state.objects.insert(GitObject::Blob(content.into_bytes()));
        leaves.retain(|existing, _| !existing.starts_with(&prefix));
        leaves.insert(path, Leaf { mode, sha });
        return Ok(());
    }
    match sha {
        Some(Value::Null) => {
            leaves.retain(|existing, _| existing != &path && !existing.starts_with(&prefix));
        }
        Some(Value::String(sha)) => {
            let object_kind = state.objects.get(sha).map(GitObject::kind);
            if kind != "commit" && object_kind != Some(kind.as_str()) {
                return Err(format!("tree.sha {sha} is not a valid {kind}"));
            }
            leaves.retain(|existing, _| existing != &path && !existing.starts_with(&prefix));
            if kind == "tree" {
                for (inner, leaf) in state.objects.flatten(sha) {
                    leaves.insert(format!("{prefix}{inner}"), leaf);
                }
            } else {
                leaves.insert(
                    path,
                    Leaf {
                        mode,
                        sha: sha.clone(),
                    },
                );
            }
        }
        _ => return Err("tree.sha or tree.content must be given".to_string()),
    }
    Ok(())
}

fn get_tree(state: &State, request: &FakeRequest, sha: &str) -> FakeResponse {
    // Any value of `recursive` turns recursion on, as GitHub documents.
    let recursive = request.query_param("recursive").is_some();
    let sha = resolve_commitish(state, sha)
        .and_then(|commit| state.objects.commit(&commit).map(|c| c.tree.clone()))
        .unwrap_or_else(|| sha.to_string());
    if state.objects.tree(&sha).is_none() {
        return not_found();
    }
    FakeResponse::json(200, &tree_json(state, &sha, recursive))
}

fn tree_json(state: &State, sha: &str, recursive: bool) -> Value {
    let mut items = Vec::new();
    collect_tree(state, sha, "", recursive, &mut items);
    json!({
        "sha": sha,
        "url": object_url(state, "trees", sha),
        "tree": items,
        "truncated": false,
    })
}

fn collect_tree(state: &State, sha: &str, prefix: &str, recursive: bool, out: &mut Vec<Value>) {
    let mut entries: Vec<TreeEntry> = state.objects.tree(sha).cloned().unwrap_or_default();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for entry in entries {
        let path = format!("{prefix}{}", entry.name);
        let mut item = json!({
            "path": path,
            "mode": entry.mode,
            "type": entry.kind(),
            "sha": entry.sha,
        });
        match entry.kind() {
            "blob" => {
                let size = state.objects.blob(&entry.sha).map_or(0, Vec::len);
                item["size"] = json!(size);
                item["url"] = json!(object_url(state, "blobs", &entry.sha));
            }
            "tree" => item["url"] = json!(object_url(state, "trees", &entry.sha)),
            _ => {}
        }
        out.push(item);
        if recursive && entry.kind() == "tree" {
            collect_tree(state, &entry.sha, &format!("{path}/"), true, out);
        }
    }
}

fn signature(state: &mut State, value: Option<&Value>) -> Result<Signature, String> {
    let Some(value) = value else {
        return Ok(state.actor_signature());
    };
    let name = value.get("name").and_then(Value::as_str);
    let email = value.get("email").and_then(Value::as_str);
    let (Some(name), Some(email)) = (name, email) else {
        return Err("Invalid request.\n\n\"name\" and \"email\" are required.".to_string());
    };
    let time = match value.get("date").and_then(Value::as_str) {
        Some(date) => chrono::DateTime::parse_from_rfc3339(date)
            .map_err(|_| format!("Invalid request.\n\n{date} is not a valid date-time."))?
            .timestamp(),
        None => state.tick(),
    };
    Ok(Signature {
        name: name.to_string(),
        email: email.to_string(),
        time,
    })
}

fn create_commit(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(message) = body.get("message").and_then(Value::as_str) else {
        return missing("message");
    };
    let Some(tree) = body.get("tree").and_then(Value::as_str) else {
        return missing("tree");
    };
    if state.objects.tree(tree).is_none() {
        return error(422, "Tree SHA does not exist");
    }
    let parents: Vec<String> = match body.get("parents") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().unwrap_or_default().to_string())
            .collect(),
        Some(_) => return error(422, "Invalid request.\n\nFor 'parents', must be an array."),
    };
    if parents
        .iter()
        .any(|parent| state.objects.commit(parent).is_none())
    {
        return error(422, "Parent SHA does not exist or is not a commit object");
    }
    let (sha, commit) = match store_commit(state, &body, tree.to_string(), parents, message) {
        Ok(stored) => stored,
        Err(response) => return response,
    };
    FakeResponse::json(201, &commit_json(state, &sha, &commit))
}

/// A commit of `tree` with the request's `author` and `committer` (the token's user when not
/// given, the author when only it is), stored; its id and the commit.
fn store_commit(
    state: &mut State,
    body: &Value,
    tree: String,
    parents: Vec<String>,
    message: &str,
) -> Result<(String, Commit), FakeResponse> {
    let author = signature(state, body.get("author")).map_err(|m| error(422, &m))?;
    let committer = match body.get("committer") {
        Some(value) => signature(state, Some(value)).map_err(|m| error(422, &m))?,
        None => author.clone(),
    };
    let commit = Commit {
        tree,
        parents,
        author,
        committer,
        message: message.to_string(),
    };
    let sha = state.objects.insert(GitObject::Commit(commit.clone()));
    Ok((sha, commit))
}

fn commit_json(state: &State, sha: &str, commit: &Commit) -> Value {
    let person = |signature: &Signature| json!({ "name": signature.name, "email": signature.email, "date": signature.date() });
    json!({
        "sha": sha,
        "node_id": format!("C_{sha}"),
        "url": object_url(state, "commits", sha),
        "html_url": format!("https://github.com/{}/commit/{sha}", state.full_name()),
        "author": person(&commit.author),
        "committer": person(&commit.committer),
        "message": commit.message,
        "tree": { "sha": commit.tree, "url": object_url(state, "trees", &commit.tree) },
        "parents": commit.parents.iter().map(|parent| json!({
            "sha": parent,
            "url": object_url(state, "commits", parent),
            "html_url": format!("https://github.com/{}/commit/{parent}", state.full_name()),
        })).collect::<Vec<_>>(),
        "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null },
    })
}

fn ref_json(state: &State, git_ref: &str, sha: &str) -> Value {
    let kind = state.objects.get(sha).map_or("commit", GitObject::kind);
    json!({
        "ref": git_ref,
        "node_id": format!("REF_{git_ref}"),
        "url": format!("{}/repos/{}/git/{git_ref}", state.base_url, state.full_name()),
        "object": { "sha": sha, "type": kind, "url": object_url(state, &format!("{kind}s"), sha) },
    })
}

fn create_ref(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(git_ref) = body.get("ref").and_then(Value::as_str) else {
        return missing("ref");
    };
    let Some(sha) = body.get("sha").and_then(Value::as_str) else {
        return missing("sha");
    };
    if !git_ref.starts_with("refs/") || git_ref.matches('/').count() < 2 {
        return error(
            422,
            "Reference name must start with 'refs/' and have at least two slashes.",
        );
    }
    state.run_ref_hooks(git_ref);
    if state.refs.contains_key(git_ref) {
        return error(422, "Reference already exists");
    }
    if state.objects.get(sha).is_none() {
        return error(422, "Object does not exist");
    }
    state.refs.insert(git_ref.to_string(), sha.to_string());
    FakeResponse::json(201, &ref_json(state, git_ref, sha))
}

/// The compare-and-swap that protects history: without `force`, the new commit must
/// descend from the ref's current target.
fn update_ref(state: &mut State, request: &FakeRequest, git_ref: &str) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(sha) = body.get("sha").and_then(Value::as_str) else {
        return missing("sha");
    };
    let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
    if !state.refs.contains_key(git_ref) {
        return error(422, "Reference does not exist");
    }
    state.run_ref_hooks(git_ref);
    if state.objects.commit(sha).is_none() {
        return error(422, "Object does not exist");
    }
    let current = state.refs[git_ref].clone();
    if !force && !state.objects.is_ancestor(&current, sha) {
        return error(422, "Update is not a fast forward");
    }
    state.refs.insert(git_ref.to_string(), sha.to_string());
    FakeResponse::json(200, &ref_json(state, git_ref, sha))
}

/// A branch, tag, `heads/x`, `refs/...` or commit id → commit id.
fn resolve_commitish(state: &State, name: &str) -> Option<String> {
    let candidates = [
        format!("refs/heads/{name}"),
        format!("refs/tags/{name}"),
        branch_ref(name),
    ];
    candidates
        .iter()
        .find_map(|candidate| state.refs.get(candidate).cloned())
        .or_else(|| state.objects.commit(name).map(|_| name.to_string()))
}

/// Create or update one file as a commit on the branch's tip, as GitHub does: the file's current
/// blob sha must be named when the file exists (422 without it, 409 when it is another blob), and
/// the branch must exist. Other files may have changed since the caller read the branch: the
/// commit goes on whatever the tip is (GitHub's compare-and-swap is on the file, not the ref).
fn put_contents(state: &mut State, request: &FakeRequest, path: &str) -> FakeResponse {
    let body = match body_of(request) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(message) = body.get("message").and_then(Value::as_str) else {
        return missing("message");
    };
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return missing("content");
    };
    let compact: String = content.chars().filter(|c| !c.is_whitespace()).collect();
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(compact) else {
        return error(422, "Invalid Base64 content");
    };
    let branch = body
        .get("branch")
        .and_then(Value::as_str)
        .map_or_else(|| state.default_branch.clone(), String::from);
    let git_ref = branch_ref(&branch);
    if !state.refs.contains_key(&git_ref) {
        return error(404, &format!("Branch {branch} not found"));
    }
    state.run_ref_hooks(&git_ref);
    let head = state.refs[&git_ref].clone();
    let tree = state
        .objects
        .commit(&head)
        .expect("ref points at a commit")
        .tree
        .clone();
    let current = state.objects.entry_at(&tree, path);
    let named = body.get("sha").and_then(Value::as_str);
    match (&current, named) {
        (Some(entry), _) if entry.kind() != "blob" => {
            return error(422, &format!("{path} is not a file"));
        }
        (Some(_), None) => return missing("sha"),
        (Some(entry), Some(sha)) if entry.sha != sha => {
            return error(409, &format!("{path} does not match {sha}"));
        }
        (None, Some(sha)) => return error(409, &format!("{path} does not match {sha}")),
        _ => {}
    }
    let mode = current
        .as_ref()
        .map_or("100644".to_string(), |e| e.mode.clone());
    let blob = state.objects.insert(GitObject::Blob(bytes.clone()));
    let mut leaves = state.objects.flatten(&tree);
    leaves.insert(
        path.to_string(),
        Leaf {
            mode,
            sha: blob.clone(),
        },
    );
    let new_tree = state.objects.build_tree(&leaves);
    let (sha, commit) = match store_commit(state, &body, new_tree, vec![head], message) {
        Ok(stored) => stored,
        Err(response) => return response,
    };
    state.refs.insert(git_ref, sha.clone());
    let repo_url = format!("{}/repos/{}", state.base_url, state.full_name());
    let name = path.rsplit('/').next().unwrap_or(path);
    let file = json!({
        "type": "file",
        "name": name,
        "path": path,
        "sha": blob,
        "size": bytes.len(),
        "url": format!("{repo_url}/contents/{path}?ref={branch}"),
        "git_url": object_url(state, "blobs", &blob),
        "html_url": format!("https://github.com/{}/blob/{branch}/{path}", state.full_name()),
        "download_url": format!("https://raw.githubusercontent.com/{}/{branch}/{path}", state.full_name()),
    });
    let status = if current.is_some() { 200 } else { 201 };
    FakeResponse::json(
        status,
        &json!({ "content": file, "commit": commit_json(state, &sha, &commit) }),
    )
}

/// The contents API answers a file only up to 1 MB (with the default media type); beyond that
/// it refuses with 403 `too_large` and points to the git data API.
const CONTENTS_LIMIT: usize = 1024 * 1024;

fn contents(state: &State, request: &FakeRequest, path: &str) -> FakeResponse {
    let wanted = request
        .query_param("ref")
        .unwrap_or_else(|| state.default_branch.clone());
    let Some(commit) = resolve_commitish(state, &wanted) else {
        return error(404, &format!("No commit found for the ref {wanted}"));
    };
    let tree = state
        .objects
        .commit(&commit)
        .expect("ref points at a commit")
        .tree
        .clone();
    let Some(entry) = state.objects.entry_at(&tree, path) else {
        return not_found();
    };
    let repo_url = format!("{}/repos/{}", state.base_url, state.full_name());
    let item = |path: &str, entry: &TreeEntry| {
        let kind = match entry.kind() {
            "tree" => "dir",
            "commit" => "submodule",
            _ if entry.mode == "120000" => "symlink",
            _ => "file",
        };
        json!({
            "type": kind,
            "name": path.rsplit('/').next().unwrap_or(path),
            "path": path,
            "sha": entry.sha,
            "size": state.objects.blob(&entry.sha).map_or(0, Vec::len),
            "url": format!("{repo_url}/contents/{path}?ref={wanted}"),
            "git_url": object_url(state, if kind == "dir" { "trees" } else { "blobs" }, &entry.sha),
            "html_url": format!("https://github.com/{}/blob/{wanted}/{path}", state.full_name()),
            "download_url": format!("https://raw.githubusercontent.com/{}/{wanted}/{path}", state.full_name()),
        })
    };
    if entry.kind() == "tree" {
        let mut children: Vec<TreeEntry> =
            state.objects.tree(&entry.sha).cloned().unwrap_or_default();
        children.sort_by(|a, b| a.name.cmp(&b.name));
        let listing: Vec<Value> = children
            .iter()
            .map(|child| {
                let child_path = if path.is_empty() {
                    child.name.clone()
                } else {
                    format!("{}/{}", path.trim_matches('/'), child.name)
                };
                item(&child_path, child)
            })
            .collect();
        return FakeResponse::json(200, &Value::Array(listing));
    }
    let bytes = state.objects.blob(&entry.sha).cloned().unwrap_or_default();
    if bytes.len() > CONTENTS_LIMIT {
        return FakeResponse::json(
            403,
            &json!({
                "message": "This API returns blobs up to 1 MB in size. The requested blob is too large to fetch via the API, but you can use the Git Data API to request blobs up to 100 MB in size.",
                "errors": [{"resource": "Blob", "field": "data", "code": "too_large"}],
                "documentation_url": "https://docs.github.com/rest/repos/contents#get-repository-content",
                "status": "403"
            }),
        );
    }
    let mut value = item(path.trim_matches('/'), &entry);
    value["content"] = json!(shapes::wrapped_base64(&bytes));
    value["encoding"] = json!("base64");
    FakeResponse::json(200, &value)
}
