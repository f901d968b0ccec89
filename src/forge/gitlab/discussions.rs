//! Merge request diff discussions as review threads: listed (`GET …/discussions`), answered
//! (`POST …/discussions/:id/notes`) and resolved (`PUT …/discussions/:id?resolved=true`).

use super::client::GitLabClient;
use crate::forge::{ForgeResult, ReviewThreadRef, marker};
use crate::http::Lookup;
use crate::trigger::{ReviewComment, ReviewThread};
use serde_json::{Value, json};

fn discussions_path(client: &GitLabClient, merge_request: u64) -> String {
    client.project_path(&format!("/merge_requests/{merge_request}/discussions"))
}

/// A discussion that opens on a diff line; notes on the merge request itself are no thread.
fn thread_from(discussion: &Value) -> Option<ReviewThread> {
    let notes = discussion.get("notes")?.as_array()?;
    let first = notes.first()?;
    let position = first.get("position").filter(|p| !p.is_null())?;
    let id = discussion.get("id")?.as_str()?.to_owned();
    let path = position
        .get("new_path")
        .or_else(|| position.get("old_path"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let line = position
        .get("new_line")
        .or_else(|| position.get("old_line"))
        .and_then(Value::as_u64);
    let start_line = position
        .pointer("/line_range/start/new_line")
        .and_then(Value::as_u64)
        .filter(|start| Some(*start) != line);
    let comments = notes
        .iter()
        .filter(|n| !n.get("system").and_then(Value::as_bool).unwrap_or(false))
        .filter_map(|n| {
            Some(ReviewComment {
                id: n.get("id")?.as_u64()?.to_string(),
                author: n
                    .pointer("/author/username")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                body: n
                    .get("body")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                // GitLab has no review object: which round a discussion joins is the app's
                // rule (`app/review_batch.rs`).
                review_id: None,
            })
        })
        .collect();
    Some(ReviewThread {
        resolved: first
            .get("resolved")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        id,
        path,
        start_line,
        line,
        diff_hunk: String::new(),
        comments,
    })
}

pub(super) async fn list(
    client: &GitLabClient,
    merge_request: u64,
) -> ForgeResult<Vec<ReviewThread>> {
    let what = format!("listing the discussions of !{merge_request}");
    let discussions = client
        .get_all(&discussions_path(client, merge_request), &what)
        .await?;
    Ok(discussions.iter().filter_map(thread_from).collect())
}

pub(super) async fn reply(
    client: &GitLabClient,
    at: ReviewThreadRef<'_>,
    body: &str,
) -> ForgeResult<()> {
    let path = format!(
        "{}/{}/notes",
        discussions_path(client, at.pull_request),
        super::client::encode_segment(at.thread)
    );
    let what = format!(
        "replying in discussion {} of !{}",
        at.thread, at.pull_request
    );
    // After a 5xx or a time-out the reply is sent again only when the discussion does not hold
    // it (found by its idempotency key), as notes are.
    let key = marker::key_in(body).map(str::to_owned);
    let listing = discussions_path(client, at.pull_request);
    let (listing, thread) = (listing.as_str(), at.thread);
    let lookup: Lookup<'_> = Box::new(move || {
        let key = key.clone();
        Box::pin(async move {
            let Some(key) = key else {
                return Err("the reply carries no idempotency marker to look for".to_owned());
            };
            let discussions = client
                .get_all(listing, "looking for a reply an earlier attempt posted")
                .await
                .map_err(|e| e.to_string())?;
            Ok(discussions
                .into_iter()
                .filter(|d| d["id"].as_str() == Some(thread))
                .flat_map(|d| d["notes"].as_array().cloned().unwrap_or_default())
                .find(|n| n["body"].as_str().and_then(marker::key_in) == Some(key.as_str())))
        })
    });
    client
        .create(&path, &json!({ "body": body }), &what, lookup)
        .await?;
    Ok(())
}

pub(super) async fn resolve(client: &GitLabClient, at: ReviewThreadRef<'_>) -> ForgeResult<()> {
    let path = format!(
        "{}/{}?resolved=true",
        discussions_path(client, at.pull_request),
        super::client::encode_segment(at.thread)
    );
    let what = format!("resolving discussion {} of !{}", at.thread, at.pull_request);
    client
        .put(&path, &json!({ "resolved": true }), &what)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_diff_discussions_are_review_threads() {
        let diff = json!({"id": "abc", "individual_note": false, "notes": [
            {"id": 5, "body": "b", "author": {"username": "alice"}, "resolved": false,
             "position": {"new_path": "a.rs", "new_line": 4,
                          "line_range": {"start": {"new_line": 2}, "end": {"new_line": 4}}}}]});
        let thread = thread_from(&diff).unwrap();
        assert_eq!(
            (thread.path.as_str(), thread.start_line, thread.line),
            ("a.rs", Some(2), Some(4))
        );
        assert!(!thread.belongs_to("abc"));
        assert_eq!(thread.comments[0].author, "alice");
        let plain =
            json!({"id": "def", "individual_note": true, "notes": [{"id": 6, "body": "hi"}]});
        assert!(thread_from(&plain).is_none());
    }
}
