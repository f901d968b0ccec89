//! Opening a pull request; when one is already open for the branch (422), that one is returned,
//! so a re-run does not fail on work it already did. After a 5xx or a time-out the open pull
//! request from the branch is looked up before the request is sent again.

use super::client::{GitHubClient, Op};
use crate::forge::{ForgeError, PullRequestRef, PullRequestRequest, marker};
use crate::http::Lookup;
use serde_json::{Value, json};

const PULLS_WRITE: &str = "pull-requests: write";

fn pull_ref(value: &Value) -> Option<PullRequestRef> {
    Some(PullRequestRef {
        number: value.get("number")?.as_u64()?,
        url: value
            .get("html_url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })
}

pub async fn open(
    client: &GitHubClient,
    request: &PullRequestRequest,
) -> Result<PullRequestRef, ForgeError> {
    let what = format!(
        "opening a pull request from {} into {}",
        request.head, request.base
    );
    let op = Op {
        what: &what,
        permission: PULLS_WRITE,
    };
    let body = json!({
        "title": request.title,
        "head": request.head,
        "base": request.base,
        "body": request.body,
    });
    let lookup: Lookup<'_> = Box::new(|| {
        Box::pin(async move {
            existing_json(client, request, op)
                .await
                .map_err(|e| e.to_string())
        })
    });
    match client
        .create(&client.repo_path("/pulls"), &body, op, lookup)
        .await
    {
        Ok(reply) => pull_ref(&reply)
            .ok_or_else(|| ForgeError::Other(format!("GitHub answered {what} without a number"))),
        Err(ForgeError::Unprocessable { message, .. }) if message.contains("already exists") => {
            existing(client, request, op).await?.ok_or_else(|| {
                ForgeError::Other(format!(
                    "GitHub says a pull request for {} already exists, but none is open: {message}",
                    request.head
                ))
            })
        }
        Err(e) => Err(e),
    }
}

/// The open pull request from `head` (GitHub ignores a `head` filter without `owner:`).
async fn existing(
    client: &GitHubClient,
    request: &PullRequestRequest,
    op: Op<'_>,
) -> Result<Option<PullRequestRef>, ForgeError> {
    Ok(existing_json(client, request, op)
        .await?
        .as_ref()
        .and_then(pull_ref))
}

async fn existing_json(
    client: &GitHubClient,
    request: &PullRequestRequest,
    op: Op<'_>,
) -> Result<Option<Value>, ForgeError> {
    let head = if request.head.contains(':') {
        request.head.clone()
    } else {
        format!("{}:{}", client.owner(), request.head)
    };
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("head", &head)
        .append_pair("base", &request.base)
        .append_pair("state", "open")
        .finish();
    let list = client
        .get(&client.repo_path(&format!("/pulls?{query}")), op)
        .await?;
    Ok(list
        .as_array()
        .and_then(|items| items.iter().find(|item| pull_ref(item).is_some()).cloned()))
}

/// The pull request (open or closed) whose body carries the idempotency marker `key`.
pub async fn find_by_key(
    client: &GitHubClient,
    key: &str,
) -> Result<Option<PullRequestRef>, ForgeError> {
    let what = "looking for a pull request opened by an earlier attempt";
    let items = client
        .get_all(
            &client.repo_path("/pulls?state=all"),
            Op {
                what,
                permission: PULLS_WRITE,
            },
        )
        .await?;
    Ok(items
        .iter()
        .filter(|pull| {
            pull.get("body")
                .and_then(Value::as_str)
                .and_then(marker::key_in)
                == Some(key)
        })
        .find_map(pull_ref))
}
