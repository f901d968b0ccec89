//! A small hand-written client for the GitLab REST API v4 over [`crate::http::Api`]:
//! `PRIVATE-TOKEN` authentication, GitLab's two error body shapes and pagination by
//! `x-next-page`. Retries, rate limits, same-origin rules and body caps are the API layer's; a
//! `POST` that may have taken effect is never sent again without the caller's check.

use crate::forge::ForgeError;
pub use crate::http::RetryPolicy;
use crate::http::{Api, ApiError, ApiSettings, Auth, Lookup, Replay};
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

/// GitLab's default persistence: fewer attempts than GitHub's, shorter rate-limit waits.
pub fn default_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(500),
        max_rate_limit_wait: Duration::from_secs(60),
        timeout: Duration::from_secs(30),
    }
}

/// One project on one GitLab instance, reached with one token.
#[derive(Clone)]
pub struct GitLabClient {
    api: Arc<Api>,
    /// The project id, or its path url-encoded as one segment.
    project: String,
}

impl std::fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabClient")
            .field("api_url", &self.api.base_url())
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

impl From<crate::http::Response> for Response {
    fn from(r: crate::http::Response) -> Self {
        Response {
            status: r.status,
            headers: r.headers,
            json: r.body,
        }
    }
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
        let api = Api::new(ApiSettings {
            name: FORGE,
            base_url: api_url.to_owned(),
            auth: Auth::Header("private-token", token.to_owned()),
            headers: Vec::new(),
            retry: default_retry(),
            max_body_bytes: crate::http::DEFAULT_MAX_BODY_BYTES,
        })
        .map_err(ForgeError::Other)?;
        Ok(GitLabClient {
            api: Arc::new(api),
            project: encode_segment(project),
        })
    }

    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        self.reconfigured(|settings| settings.retry = retry)
    }

    /// Refuse answers larger than `bytes` ("too large").
    pub fn with_max_body_bytes(self, bytes: usize) -> Self {
        self.reconfigured(|settings| settings.max_body_bytes = bytes)
    }

    fn reconfigured(mut self, change: impl FnOnce(&mut ApiSettings)) -> Self {
        // The settings were valid a moment ago; only the numbers change.
        if let Ok(api) = self.api.reconfigured(change) {
            self.api = Arc::new(api);
        }
        self
    }

    /// `/projects/<id>` followed by `rest` (which starts with `/` or is empty).
    pub fn project_path(&self, rest: &str) -> String {
        format!("/projects/{}{rest}", self.project)
    }

    /// The last `keep` bytes of a text answer (a job's trace).
    pub async fn get_text_tail(
        &self,
        path: &str,
        keep: usize,
        what: &str,
    ) -> Result<String, ForgeError> {
        self.api
            .get_text_tail(path, keep)
            .await
            .map_err(|e| forge_error(e, what))
    }

    pub async fn get(&self, path: &str, what: &str) -> Result<Response, ForgeError> {
        let sent = self.api.send(Method::GET, path, None, Replay::Safe, what);
        answer(sent.await, what)
    }

    /// A POST that is never sent twice without a check: after a 5xx or a time-out it fails as
    /// [`ForgeError::Uncertain`] (the commits API's callers look at the branch themselves).
    pub async fn post(&self, path: &str, body: &Value, what: &str) -> Result<Response, ForgeError> {
        let sent = self
            .api
            .send(Method::POST, path, Some(body), Replay::Never, what);
        answer(sent.await, what)
    }

    /// A POST whose repetition is harmless (an award GitLab refuses twice).
    pub async fn post_repeatable(
        &self,
        path: &str,
        body: &Value,
        what: &str,
    ) -> Result<Response, ForgeError> {
        let sent = self
            .api
            .send(Method::POST, path, Some(body), Replay::Safe, what);
        answer(sent.await, what)
    }

    /// A PUT sets a whole resource, so sending it again is harmless.
    pub async fn put(&self, path: &str, body: &Value, what: &str) -> Result<Response, ForgeError> {
        let sent = self
            .api
            .send(Method::PUT, path, Some(body), Replay::Safe, what);
        answer(sent.await, what)
    }

    /// A POST that creates something (a note, a merge request): after a 5xx or a time-out it is
    /// sent again only when `lookup` finds that the first attempt left nothing behind.
    pub async fn create(
        &self,
        path: &str,
        body: &Value,
        what: &str,
        lookup: Lookup<'_>,
    ) -> Result<Response, ForgeError> {
        let sent = self
            .api
            .write_checked(Method::POST, path, body, what, lookup);
        answer(sent.await, what)
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
}

/// The API layer's answer as GitLab's: its errors become forge errors naming `what`.
fn answer(
    sent: Result<crate::http::Response, ApiError>,
    what: &str,
) -> Result<Response, ForgeError> {
    sent.map(Response::from).map_err(|e| forge_error(e, what))
}

/// An API-layer error as GitLab's forge error.
fn forge_error(error: ApiError, what: &str) -> ForgeError {
    match error {
        ApiError::Status {
            status,
            headers,
            text,
        } => map_status(status, &headers, &text, what),
        ApiError::RateLimited { wait, .. } => ForgeError::RateLimited {
            forge: FORGE.into(),
            what: what.into(),
            retry_after_secs: wait.as_secs(),
        },
        ApiError::Connection(message) => ForgeError::Connection {
            forge: FORGE.into(),
            what: what.into(),
            message,
        },
        ApiError::Uncertain(message) => ForgeError::Uncertain {
            forge: FORGE.into(),
            what: what.into(),
            message,
        },
        other => ForgeError::Other(format!("GitLab: {what}: {other}")),
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    crate::http::retry_after(headers.get("retry-after")?.to_str().ok()?.trim())
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
