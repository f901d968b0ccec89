//! Repository files, branches and the commits API with GitLab's per-file conflict check.

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::State;
use super::json::{self as shapes, message, not_found};
use super::routes::{missing, param, text_param};
use crate::support::git_objects::{Commit, GitObject, Leaf};
use crate::support::server::{FakeRequest, FakeResponse};

pub fn route(
    state: &mut State,
    request: &FakeRequest,
    method: &str,
    rest: &[&str],
) -> FakeResponse {
    match (method, rest) {
        // The file path is one url-encoded segment, as GitLab requires.
        ("GET", ["repository", "files", path]) => file(state, request, path),
        ("GET", ["repository", "files", path, "raw"]) => raw_file(state, request, path),
        ("GET", ["repository", "branches", name @ ..]) if !name.is_empty() => {
            branch(state, &name.join("/"))
        }
        ("GET", ["repository", "tree"]) => tree(state, request),
        ("POST", ["repository", "commits"]) => create_commit(state, request),
        ("GET", ["repository", "commits", sha]) => {
            let sha = resolve(state, sha).unwrap_or_else(|| sha.to_string());
            match state.objects.commit(&sha).cloned() {
                Some(commit) => FakeResponse::json(200, &shapes::commit(state, &sha, &commit)),
                None => not_found("Commit"),
            }
        }
        _ => message(404, "404 Not Found"),
    }
}

/// A branch name or a commit id → commit id.
fn resolve(state: &State, name: &str) -> Option<String> {
    state
        .branches
        .get(name)
        .cloned()
        .or_else(|| state.objects.commit(name).map(|_| name.to_string()))
}

fn file(state: &State, request: &FakeRequest, path: &str) -> FakeResponse {
    let Some(wanted) = request.query_param("ref") else {
        return missing("ref");
    };
    let Some(commit) = resolve(state, &wanted) else {
        return not_found("Commit");
    };
    let tree = &state.objects.commit(&commit).expect("a commit").tree;
    let Some(entry) = state
        .objects
        .entry_at(tree, path)
        .filter(|e| e.kind() == "blob")
    else {
        return not_found("File");
    };
    let bytes = state.objects.blob(&entry.sha).cloned().unwrap_or_default();
    FakeResponse::json(
        200,
        &json!({
            "file_name": path.rsplit('/').next().unwrap_or(path),
            "file_path": path,
            "size": bytes.len(),
            "encoding": "base64",
            "content": base64::engine::general_purpose::STANDARD.encode(&bytes),
            "content_sha256": hex::encode(Sha256::digest(&bytes)),
            "ref": wanted,
            "blob_id": entry.sha,
            "commit_id": commit,
            "last_commit_id": state.objects.last_commit_for_path(&commit, path),
            "execute_filemode": entry.mode == "100755",
        }),
    )
}

/// `GET /repository/tree?ref=&path=&recursive=`: the entries under `path`, directories
/// included, paginated; `404 Tree Not Found` for a missing ref or path, as GitLab answers.
fn tree(state: &State, request: &FakeRequest) -> FakeResponse {
    let wanted = request
        .query_param("ref")
        .unwrap_or_else(|| state.default_branch.clone());
    let Some(commit) = resolve(state, &wanted) else {
        return not_found("Tree");
    };
    let root = &state.objects.commit(&commit).expect("a commit").tree;
    let base = request
        .query_param("path")
        .unwrap_or_default()
        .trim_matches('/')
        .to_string();
    let recursive = request.query_param("recursive").as_deref() == Some("true");
    let leaves = state.objects.flatten(root);
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{base}/")
    };
    let mut entries: std::collections::BTreeMap<String, Value> = std::collections::BTreeMap::new();
    for (path, leaf) in &leaves {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        for depth in 1..parts.len() {
            if !recursive && depth > 1 {
                break;
            }
            let dir = format!("{prefix}{}", parts[..depth].join("/"));
            entries.entry(dir.clone()).or_insert_with(|| {
                json!({ "id": "", "name": parts[depth - 1], "type": "tree", "path": dir, "mode": "040000" })
            });
        }
        if recursive || parts.len() == 1 {
            entries.insert(
                path.clone(),
                json!({ "id": leaf.sha, "name": parts[parts.len() - 1], "type": "blob", "path": path, "mode": leaf.mode }),
            );
        }
    }
    if entries.is_empty() && !base.is_empty() {
        return not_found("Tree");
    }
    shapes::paginate(state, request, entries.into_values().collect())
}

fn raw_file(state: &State, request: &FakeRequest, path: &str) -> FakeResponse {
    let wanted = request
        .query_param("ref")
        .unwrap_or_else(|| state.default_branch.clone());
    let Some(commit) = resolve(state, &wanted) else {
        return not_found("Commit");
    };
    match state.objects.file_in_commit(&commit, path) {
        Some(bytes) => FakeResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: bytes,
            delay: None,
        },
        None => not_found("File"),
    }
}

fn branch(state: &State, name: &str) -> FakeResponse {
    let Some(sha) = state.branches.get(name) else {
        return not_found("Branch");
    };
    let commit = state
        .objects
        .commit(sha)
        .expect("a branch points at a commit");
    let is_default = name == state.default_branch;
    FakeResponse::json(
        200,
        &json!({
            "name": name,
            "merged": false,
            "protected": is_default,
            "default": is_default,
            "developers_can_push": !is_default,
            "developers_can_merge": !is_default,
            "can_push": true,
            "web_url": shapes::web_url(state, &format!("tree/{name}")),
            "commit": shapes::commit(state, sha, commit),
        }),
    )
}

fn bad_request(text: &str) -> FakeResponse {
    message(400, text)
}

/// `POST /projects/:id/repository/commits`. Actions apply on top of the branch's current
/// head; `last_commit_id` guards only the files it is given for, as in GitLab.
fn create_commit(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let Some(branch) = text_param(request, "branch") else {
        return missing("branch");
    };
    let Some(commit_message) = text_param(request, "commit_message") else {
        return missing("commit_message");
    };
    let Some(Value::Array(actions)) = param(request, "actions") else {
        return missing("actions");
    };
    state.run_commit_hooks(&branch);

    let start = state.branches.get(&branch).cloned().or_else(|| {
        text_param(request, "start_sha")
            .filter(|sha| state.objects.commit(sha).is_some())
            .or_else(|| {
                text_param(request, "start_branch")
                    .and_then(|start| state.branches.get(&start).cloned())
            })
    });
    let Some(start) = start else {
        return bad_request("You can only create or edit files when you are on a branch");
    };

    for action in &actions {
        if let Err(text) = validate_action(state, &start, action) {
            return bad_request(&text);
        }
    }
    let tree = state.objects.commit(&start).expect("a commit").tree.clone();
    let mut leaves = state.objects.flatten(&tree);
    for action in &actions {
        if let Err(text) = apply_action(state, &mut leaves, action) {
            return bad_request(&text);
        }
    }
    let tree = state.objects.build_tree(&leaves);
    let author = match (
        text_param(request, "author_name"),
        text_param(request, "author_email"),
    ) {
        (Some(name), Some(email)) => state.signature(&name, &email),
        _ => state.actor_signature(),
    };
    let commit = Commit {
        tree,
        parents: vec![start],
        committer: author.clone(),
        author,
        message: commit_message,
    };
    let sha = state.objects.insert(GitObject::Commit(commit.clone()));
    state.branches.insert(branch, sha.clone());
    let mut value = shapes::commit(state, &sha, &commit);
    value["stats"] = json!({ "additions": 0, "deletions": 0, "total": 0 });
    FakeResponse::json(201, &value)
}

fn action_field(action: &Value, name: &str) -> Option<String> {
    action.get(name).and_then(Value::as_str).map(String::from)
}

/// GitLab's `Files::MultiService#validate_file_status!` and `file_has_changed?`: the file's
/// last commit on the branch must be its last commit as of `last_commit_id`.
fn validate_action(state: &State, start: &str, action: &Value) -> Result<(), String> {
    let kind = action_field(action, "action").unwrap_or_default();
    if !["create", "update", "delete", "move", "chmod"].contains(&kind.as_str()) {
        return Err(format!("Unknown action '{kind}'"));
    }
    let Some(path) =
        action_field(action, "previous_path").or_else(|| action_field(action, "file_path"))
    else {
        return Err("file_path is missing".to_string());
    };
    if !["update", "delete", "move"].contains(&kind.as_str()) {
        return Ok(());
    }
    let Some(last_commit_id) = action_field(action, "last_commit_id") else {
        return Ok(());
    };
    let on_branch = state.objects.last_commit_for_path(start, &path);
    let as_known = state
        .objects
        .commit(&last_commit_id)
        .and_then(|_| state.objects.last_commit_for_path(&last_commit_id, &path));
    match (on_branch, as_known) {
        (Some(on_branch), Some(as_known)) if on_branch != as_known => Err(format!(
            "The file has changed since you started editing it: {path}"
        )),
        _ => Ok(()),
    }
}

fn content_of(action: &Value) -> Result<Vec<u8>, String> {
    let content = action_field(action, "content").unwrap_or_default();
    match action_field(action, "encoding")
        .as_deref()
        .unwrap_or("text")
    {
        "text" => Ok(content.into_bytes()),
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|_| "content is not valid base64".to_string()),
        other => Err(format!("encoding does not have a valid value: {other}")),
    }
}

fn apply_action(
    state: &mut State,
    leaves: &mut std::collections::BTreeMap<String, Leaf>,
    action: &Value,
) -> Result<(), String> {
    let kind = action_field(action, "action").unwrap_or_default();
    let path = action_field(action, "file_path").unwrap_or_default();
    let exists = leaves.contains_key(&path);
    match kind.as_str() {
        "create" if exists => Err("A file with this name already exists".to_string()),
        "create" | "update" => {
            if kind == "update" && !exists {
                return Err("A file with this name doesn't exist".to_string());
            }
            let sha = state.objects.insert(GitObject::Blob(content_of(action)?));
            let mode = leaves
                .get(&path)
                .map_or_else(|| "100644".to_string(), |leaf| leaf.mode.clone());
            leaves.insert(path, Leaf { mode, sha });
            Ok(())
        }
        "delete" => match leaves.remove(&path) {
            Some(_) => Ok(()),
            None => Err("A file with this name doesn't exist".to_string()),
        },
        "move" => {
            let previous = action_field(action, "previous_path").unwrap_or_default();
            let Some(mut leaf) = leaves.remove(&previous) else {
                return Err("A file with this name doesn't exist".to_string());
            };
            if action
                .get("content")
                .is_some_and(|content| !content.is_null())
            {
                leaf.sha = state.objects.insert(GitObject::Blob(content_of(action)?));
            }
            leaves.insert(path, leaf);
            Ok(())
        }
        "chmod" => {
            let Some(leaf) = leaves.get_mut(&path) else {
                return Err("A file with this name doesn't exist".to_string());
            };
            let executable = action
                .get("execute_filemode")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            leaf.mode = if executable { "100755" } else { "100644" }.to_string();
            Ok(())
        }
        other => Err(format!("Unknown action '{other}'")),
    }
}
