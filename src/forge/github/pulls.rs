//! Opening a pull request; when one is already open for the branch (422), that one is returned,
//! so a re-run does not fail on work it already did.

use super::client::{GitHubClient, Op};
use crate::forge::{ForgeError, PullRequestRef, PullRequestRequest};
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
    match client.post(&client.repo_path("/pulls"), &body, op).await {
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
        .and_then(|items| items.iter().find_map(pull_ref)))
}
