//! Review threads of a pull request: listed and resolved through GraphQL (`reviewThreads`,
//! `resolveReviewThread`: REST has no thread ids nor resolution), answered through REST
//! (`POST /pulls/{n}/comments/{id}/replies`).

use super::client::{GitHubClient, Op};
use crate::forge::{ForgeError, ForgeResult, ReviewThreadRef, marker};
use crate::trigger::{ReviewComment, ReviewThread};
use serde_json::{Value, json};

const PULLS_READ: &str = "pull-requests: read";
const PULLS_WRITE: &str = "pull-requests: write";
/// Pages of 100 threads read at most.
const MAX_PAGES: usize = 10;

const THREADS_QUERY: &str = "query($owner: String!, $name: String!, $number: Int!, $cursor: String) { \
repository(owner: $owner, name: $name) { pullRequest(number: $number) { \
reviewThreads(first: 100, after: $cursor) { pageInfo { hasNextPage endCursor } \
nodes { id isResolved path line startLine \
comments(first: 100) { nodes { databaseId body diffHunk author { login } pullRequestReview { databaseId } } } } } } } }";

const RESOLVE_MUTATION: &str = "mutation($threadId: ID!) { resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } } }";

fn graphql_url(url: Option<&str>, what: &str) -> ForgeResult<String> {
    url.map(str::to_owned).ok_or_else(|| {
        ForgeError::Other(format!(
            "{what}: GITHUB_GRAPHQL_URL is not set (GitHub Actions sets it; set it to your GitHub's GraphQL endpoint)"
        ))
    })
}

/// One GraphQL request; an `errors` answer is an error naming the first message.
async fn graphql(
    client: &GitHubClient,
    url: &str,
    op: Op<'_>,
    query: &str,
    variables: Value,
) -> ForgeResult<Value> {
    let body = json!({ "query": query, "variables": variables });
    let answer: Value = client
        .call(op, client.octocrab().post::<_, Value>(url, Some(&body)))
        .await?;
    if let Some(error) = answer
        .get("errors")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("GraphQL error");
        return Err(match error.get("type").and_then(Value::as_str) {
            Some("NOT_FOUND") => ForgeError::NotFound {
                what: format!("{} ({message})", op.what),
            },
            Some("FORBIDDEN") => ForgeError::Forbidden {
                forge: "GitHub".into(),
                what: op.what.to_owned(),
                message: format!("{message}; the token needs `{}`", op.permission),
            },
            _ => ForgeError::Other(format!("{}: {message}", op.what)),
        });
    }
    Ok(answer)
}

fn thread_from(node: &Value) -> Option<ReviewThread> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let comments: Vec<ReviewComment> = node
        .pointer("/comments/nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(ReviewComment {
                id: c.get("databaseId")?.as_u64()?.to_string(),
                author: c
                    .pointer("/author/login")
                    .and_then(Value::as_str)
                    .unwrap_or("ghost")
                    .to_owned(),
                body: text(c, "body").unwrap_or_default(),
                review_id: c
                    .pointer("/pullRequestReview/databaseId")
                    .and_then(Value::as_u64)
                    .map(|id| id.to_string()),
            })
        })
        .collect();
    let diff_hunk = node
        .pointer("/comments/nodes/0/diffHunk")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Some(ReviewThread {
        id: text(node, "id")?,
        resolved: node.get("isResolved").and_then(Value::as_bool)?,
        path: text(node, "path").unwrap_or_default(),
        start_line: node.get("startLine").and_then(Value::as_u64),
        line: node.get("line").and_then(Value::as_u64),
        diff_hunk,
        comments,
    })
}

pub(super) async fn list(
    client: &GitHubClient,
    url: Option<&str>,
    pull_request: u64,
) -> ForgeResult<Vec<ReviewThread>> {
    let what = format!("listing the review threads of pull request #{pull_request}");
    let url = graphql_url(url, &what)?;
    let op = Op {
        what: &what,
        permission: PULLS_READ,
    };
    let mut threads = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..MAX_PAGES {
        let variables = json!({
            "owner": client.owner(), "name": client.name(),
            "number": pull_request, "cursor": cursor,
        });
        let answer = graphql(client, &url, op, THREADS_QUERY, variables).await?;
        let Some(page) = answer.pointer("/data/repository/pullRequest/reviewThreads") else {
            return Err(ForgeError::NotFound { what });
        };
        threads.extend(
            page.pointer("/nodes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(thread_from),
        );
        let next = page
            .pointer("/pageInfo/hasNextPage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match page.pointer("/pageInfo/endCursor") {
            Some(end) if next && !end.is_null() => cursor = end.clone(),
            _ => break,
        }
    }
    Ok(threads)
}

pub(super) async fn reply(
    client: &GitHubClient,
    url: Option<&str>,
    at: ReviewThreadRef<'_>,
    body: &str,
) -> ForgeResult<()> {
    let comment: u64 = at
        .reply_to
        .trim()
        .parse()
        .map_err(|_| ForgeError::NotFound {
            what: format!(
                "review comment `{}` (GitHub comment ids are numbers)",
                at.reply_to
            ),
        })?;
    let path = client.repo_path(&format!(
        "/pulls/{}/comments/{comment}/replies",
        at.pull_request
    ));
    let what = format!("replying in review thread {}", at.thread);
    let op = Op {
        what: &what,
        permission: PULLS_WRITE,
    };
    // After a 5xx or a time-out the reply is sent again only when the thread does not hold it
    // (found by its idempotency key), as comments are.
    let key = marker::key_in(body);
    let lookup = || async {
        let Some(key) = key else {
            return Err("the reply carries no idempotency marker to look for".to_owned());
        };
        let threads = list(client, url, at.pull_request)
            .await
            .map_err(|e| e.to_string())?;
        Ok(threads
            .into_iter()
            .filter(|t| t.id == at.thread)
            .flat_map(|t| t.comments)
            .find(|c| marker::key_in(&c.body) == Some(key))
            .map(|c| json!({ "id": c.id, "body": c.body })))
    };
    let body = json!({ "body": body });
    let path = &path;
    let body = &body;
    client
        .create(
            op,
            |once| async move { once.post::<_, Value>(path, Some(body)).await },
            lookup,
        )
        .await?;
    Ok(())
}

pub(super) async fn resolve(
    client: &GitHubClient,
    url: Option<&str>,
    at: ReviewThreadRef<'_>,
) -> ForgeResult<()> {
    let what = format!("resolving review thread {}", at.thread);
    let url = graphql_url(url, &what)?;
    let op = Op {
        what: &what,
        permission: PULLS_WRITE,
    };
    let answer = graphql(
        client,
        &url,
        op,
        RESOLVE_MUTATION,
        json!({ "threadId": at.thread }),
    )
    .await?;
    match answer
        .pointer("/data/resolveReviewThread/thread/isResolved")
        .and_then(Value::as_bool)
    {
        Some(true) => Ok(()),
        _ => Err(ForgeError::Other(format!(
            "{what}: GitHub did not report the thread resolved"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_node_reads_its_comments_and_review() {
        let node = json!({
            "id": "PRRT_1", "isResolved": false, "path": "a.rs", "line": 4, "startLine": 2,
            "comments": {"nodes": [{"databaseId": 7, "body": "b", "diffHunk": "@@ -1 +1 @@",
                "author": {"login": "alice"}, "pullRequestReview": {"databaseId": 9}}]}
        });
        let thread = thread_from(&node).unwrap();
        assert_eq!(thread.id, "PRRT_1");
        assert_eq!((thread.start_line, thread.line), (Some(2), Some(4)));
        assert_eq!(thread.diff_hunk, "@@ -1 +1 @@");
        assert!(thread.belongs_to("9"));
        assert_eq!(thread.comments[0].id, "7");
    }
}
