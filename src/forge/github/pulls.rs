//! Opening a pull request; when one is already open for the branch (422), that one is returned,
//! so a re-run does not fail on work it already did. After a 5xx or a time-out the open pull
//! request from the branch is looked up before the request is sent again.

use super::client::{GitHubClient, Op};
use crate::forge::{ForgeError, PullRequestRef, PullRequestRequest, marker};
use octocrab::models::pulls::PullRequest;
use octocrab::params::State;

const PULLS_WRITE: &str = "pull-requests: write";

fn pull_ref(pull: &PullRequest) -> PullRequestRef {
    PullRequestRef {
        number: pull.number,
        url: pull
            .html_url
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
    }
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
    let lookup = || async {
        existing(client, request, op)
            .await
            .map_err(|e| e.to_string())
    };
    let created = client
        .create(
            op,
            |once| async move {
                once.pulls(client.owner(), client.name())
                    .create(&request.title, &request.head, &request.base)
                    .body(request.body.as_str())
                    .send()
                    .await
                    .map(|pull| pull_ref(&pull))
            },
            lookup,
        )
        .await;
    match created {
        Ok(pull) => Ok(pull),
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
    let pulls = client.octocrab().pulls(client.owner(), client.name());
    let list = pulls
        .list()
        .head(head)
        .base(&request.base)
        .state(State::Open)
        .send();
    let page = client.call(op, list).await?;
    Ok(page.items.first().map(pull_ref))
}

/// The pull request (open or closed) whose body carries the idempotency marker `key`.
pub async fn find_by_key(
    client: &GitHubClient,
    key: &str,
) -> Result<Option<PullRequestRef>, ForgeError> {
    let op = Op {
        what: "looking for a pull request opened by an earlier attempt",
        permission: PULLS_WRITE,
    };
    let pulls = client.octocrab().pulls(client.owner(), client.name());
    let first = pulls.list().state(State::All).per_page(100).send();
    let pulls = client.all_pages(op, first).await?;
    Ok(pulls
        .iter()
        .find(|pull| pull.body.as_deref().and_then(marker::key_in) == Some(key))
        .map(pull_ref))
}

/// Replan's marked section of pull request `number`'s body replaced by `section`: the body is
/// read, spliced and written back (`PATCH`), the text outside the markers as it was.
pub async fn update_section(
    client: &GitHubClient,
    number: u64,
    section: &str,
) -> Result<(), ForgeError> {
    let what = format!("updating the Verification section of pull request #{number}");
    let op = Op {
        what: &what,
        permission: PULLS_WRITE,
    };
    let pulls = client.octocrab().pulls(client.owner(), client.name());
    let pull = client.call(op, pulls.get(number)).await?;
    let body = pull.body.unwrap_or_default();
    let updated = crate::forge::pr_section::splice(&body, section);
    if updated == body {
        return Ok(());
    }
    let path = client.repo_path(&format!("/pulls/{number}"));
    let payload = serde_json::json!({ "body": updated });
    let patch = client
        .octocrab()
        .patch::<PullRequest, _, _>(path, Some(&payload));
    client.call(op, patch).await?;
    Ok(())
}
