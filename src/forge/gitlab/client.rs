//! A small hand-written client for the GitLab REST API v4: `PRIVATE-TOKEN` authentication,
//! GitLab's two error body shapes, pagination by `x-next-page`, and retries on 429/5xx that
//! honour `Retry-After`. Only requests that cannot have taken effect are retried: a `POST` that
//! failed with a 5xx may have been applied, so the caller decides what to do about it.

use crate::forge::ForgeError;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

const FORGE: &str = "GitLab";
/// Error bodies are quoted in messages up to this many characters.
const MAX_MESSAGE: usize = 400;
/// Pages fetched at most when following `x-next-page` (100 items each).
const MAX_PAGES: u32 = 200;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Back-off before the first retry when the server gives no `Retry-After`; doubles each time.
    pub base_delay: Duration,
    /// Cap on any single wait, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// One project on one GitLab instance, reached with one token.
#[derive(Clone)]
pub struct GitLabClient {
    http: reqwest::Client,
    api_url: String,
    /// The project id, or its path url-encoded as one segment.
    project: String,
    token: Arc<str>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabClient")
            .field("api_url", &self.api_url)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

/// A successful response: status, headers and the JSON body (`null` when empty).
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: Value,
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so a project path or a file
/// path becomes one URL segment (`octo/widgets` → `octo%2Fwidgets`), as GitLab requires.
pub fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl GitLabClient {
    /// `api_url` is the `…/api/v4` root (`CI_API_V4_URL`); `project` an id or a path.
    pub fn new(api_url: &str, project: &str, token: &str) -> Result<Self, ForgeError> {
        let http = crate::http::builder()
            .map_err(ForgeError::Other)?
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ForgeError::Other(format!("cannot build the GitLab HTTP client: {e}")))?;
        Ok(GitLabClient {
            http,
            api_url: api_url.trim_end_matches('/').to_owned(),
            project: encode_segment(project),
            token: Arc::from(token),
            retry: RetryPolicy::default(),
        })
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// `/projects/<id>` followed by `rest` (which starts with `/` or is empty).
    pub fn project_path(&self, rest: &str) -> String {
        format!("/projects/{}{rest}", self.project)
    }

    pub async fn get(&self, path: &str, what: &str) -> Result<Response, ForgeError> {
        self.send(Method::GET, path, None, what).await
    }

    pub async fn post(&self, path: &str, body: &Value, what: &str) -> Result<Response, ForgeError> {
        self.send(Method::POST, path, Some(body), what).await
    }

    pub async fn put(&self, path: &str, body: &Value, what: &str) -> Result<Response, ForgeError> {
        self.send(Method::PUT, path, Some(body), what).await
    }

    /// Every item of a paginated list, following `x-next-page` (`per_page=100`).
    pub async fn get_all(&self, path: &str, what: &str) -> Result<Vec<Value>, ForgeError> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut items = Vec::new();
        let mut page = 1u32;
        loop {
            let url = format!("{path}{separator}per_page=100&page={page}");
            let response = self.get(&url, what).await?;
            match response.json {
                Value::Array(list) => items.extend(list),
                other => {
                    return Err(ForgeError::Other(format!(
                        "GitLab answered {what} with something that is not a list: {}",
                        truncate(&other.to_string())
                    )));
                }
            }
            let next = response
                .headers
                .get("x-next-page")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u32>().ok());
            match next {
                Some(next) if next > page && next <= MAX_PAGES => page = next,
                _ => return Ok(items),
            }
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Response, ForgeError> {
        let url = format!("{}{path}", self.api_url);
        let mut attempt = 0u32;
        loop {
            let mut request = self
                .http
                .request(method.clone(), &url)
                .header("PRIVATE-TOKEN", &*self.token);
            if let Some(body) = body {
                request = request.json(body);
            }
            let retryable_method = method != Method::POST;
            let failure = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let headers = response.headers().clone();
                    let text = response.text().await.unwrap_or_default();
                    if status.is_success() {
                        let json = if text.trim().is_empty() {
                            Value::Null
                        } else {
                            serde_json::from_str(&text).map_err(|e| {
                                ForgeError::Other(format!(
                                    "GitLab answered {what} with invalid JSON ({e}): {}",
                                    truncate(&text)
                                ))
                            })?
                        };
                        return Ok(Response {
                            status,
                            headers,
                            json,
                        });
                    }
                    let retry_after = retry_after(&headers);
                    let error = map_status(status, &headers, &text, what);
                    let retry = status == StatusCode::TOO_MANY_REQUESTS
                        || (status.is_server_error() && retryable_method);
                    (error, retry, retry_after)
                }
                Err(e) => {
                    // A refused connection never reached GitLab; anything later might have.
                    let retry = e.is_connect() || retryable_method;
                    let error = ForgeError::Connection {
                        forge: FORGE.into(),
                        what: what.into(),
                        message: error_chain(&e),
                    };
                    (error, retry, None)
                }
            };
            let (error, retry, retry_after) = failure;
            if !retry || attempt >= self.retry.max_retries {
                return Err(error);
            }
            let backoff = self
                .retry
                .base_delay
                .saturating_mul(2u32.saturating_pow(attempt));
            let wait = retry_after.unwrap_or(backoff).min(self.retry.max_delay);
            tracing::warn!(
                "GitLab: {error}; retrying in {:.1}s ({}/{})",
                wait.as_secs_f64(),
                attempt + 1,
                self.retry.max_retries
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

fn error_chain(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    value
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
        .or_else(|| {
            let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
            let secs = (when.timestamp() - chrono::Utc::now().timestamp()).max(0);
            Some(Duration::from_secs(secs as u64))
        })
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// GitLab answers errors as `{"message": "..."}` (a string, a list, or an object of field
/// errors) or, for OAuth-style failures, `{"error": "...", "error_description": "..."}`.
pub fn error_message(text: &str) -> String {
    let Ok(json) = serde_json::from_str::<Value>(text) else {
        return truncate(text.trim());
    };
    let mut parts = Vec::new();
    match json.get("message") {
        Some(Value::String(m)) => parts.push(m.clone()),
        Some(Value::Array(list)) => parts.extend(list.iter().map(flat)),
        Some(Value::Object(fields)) => parts.extend(
            fields
                .iter()
                .map(|(field, problem)| format!("{field} {}", flat(problem))),
        ),
        _ => {}
    }
    if let Some(error) = json.get("error").map(flat) {
        match json.get("error_description").map(flat) {
            Some(description) => parts.push(format!("{error}: {description}")),
            None => parts.push(error),
        }
    }
    if parts.is_empty() {
        truncate(text.trim())
    } else {
        truncate(&parts.join("; "))
    }
}

fn flat(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(list) => list.iter().map(flat).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// What a failed status means for the person reading the log, with the fix.
fn map_status(status: StatusCode, headers: &HeaderMap, text: &str, what: &str) -> ForgeError {
    let message = error_message(text);
    let code = status.as_u16();
    match code {
        401 => ForgeError::Unauthorized {
            forge: FORGE.into(),
            what: what.into(),
        },
        403 if message.contains("insufficient_scope") => ForgeError::Forbidden {
            forge: FORGE.into(),
            what: what.into(),
            message: format!(
                "{message}. The token lacks the `api` scope (a CI_JOB_TOKEN never has it): set a project or personal access token with the `api` scope in the masked CI/CD variable GITLAB_TOKEN"
            ),
        },
        403 => ForgeError::Forbidden {
            forge: FORGE.into(),
            what: what.into(),
            message: format!(
                "{message}. Give the token's user at least the Developer role in the project, or use a token with the `api` scope"
            ),
        },
        404 => ForgeError::NotFound {
            what: format!("{what} ({message})"),
        },
        409 => ForgeError::Conflict {
            what: what.into(),
            status: code,
            message,
        },
        400 if is_conflict_message(&message) => ForgeError::Conflict {
            what: what.into(),
            status: code,
            message,
        },
        422 => ForgeError::Unprocessable {
            forge: FORGE.into(),
            what: what.into(),
            message,
        },
        429 => ForgeError::RateLimited {
            forge: FORGE.into(),
            what: what.into(),
            retry_after_secs: retry_after(headers).map_or(60, |d| d.as_secs()),
        },
        _ if status.is_server_error() => ForgeError::Server {
            forge: FORGE.into(),
            what: what.into(),
            status: code,
            message,
        },
        _ => ForgeError::Other(format!("GitLab rejected {what} (HTTP {code}): {message}")),
    }
}

/// The commits API reports a lost compare-and-swap as a 400 with one of these messages.
pub fn is_conflict_message(message: &str) -> bool {
    [
        "has changed since you started editing it",
        "A file with this name already exists",
        "A file with this name doesn't exist",
        "You can only create or edit files when you are on a branch",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_encode_slashes_and_keep_unreserved() {
        assert_eq!(encode_segment("octo/widgets"), "octo%2Fwidgets");
        assert_eq!(
            encode_segment("planning_history/issues/1.jsonl"),
            "planning_history%2Fissues%2F1.jsonl"
        );
        assert_eq!(encode_segment("a b+c"), "a%20b%2Bc");
    }

    #[test]
    fn both_error_shapes_are_read() {
        assert_eq!(
            error_message(r#"{"message":"404 Note Not Found"}"#),
            "404 Note Not Found"
        );
        assert_eq!(
            error_message(r#"{"message":["Source branch \"x\" does not exist"]}"#),
            "Source branch \"x\" does not exist"
        );
        assert_eq!(
            error_message(r#"{"message":{"title":["can't be blank"]}}"#),
            "title can't be blank"
        );
        assert_eq!(
            error_message(
                r#"{"error":"insufficient_scope","error_description":"needs more","scope":"api"}"#
            ),
            "insufficient_scope: needs more"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }
}
