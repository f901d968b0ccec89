//! A thin hand-written GitHub REST client on reqwest: base URL from `GITHUB_API_URL`, bearer
//! token, the headers GitHub asks for, retries on 5xx and connection errors, and waits for rate
//! limits (`Retry-After`, `x-ratelimit-reset`) up to a cap. Errors say what to fix.

use crate::forge::ForgeError;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const DEFAULT_API_URL: &str = "https://api.github.com";
pub const API_VERSION: &str = "2022-11-28";
const FORGE: &str = "GitHub";
/// How much of an error body goes into a message.
const MAX_MESSAGE: usize = 400;

/// How persistent the client is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Back-off before the first retry of a 5xx or connection error; doubles each retry.
    pub base_delay: Duration,
    /// The longest we wait for a rate limit to reset; beyond it the call fails as RateLimited.
    pub max_rate_limit_wait: Duration,
    /// Per-request time-out.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_rate_limit_wait: Duration::from_secs(120),
            timeout: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(16)));
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        // Half fixed, half jitter: never zero, and concurrent runs spread out.
        Duration::from_millis(millis / 2 + fastrand::u64(0..=millis / 2))
    }
}

/// Where and as whom to talk to GitHub.
#[derive(Clone)]
pub struct GitHubSettings {
    pub api_url: String,
    pub token: String,
    /// `owner/name`.
    pub repo: String,
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for GitHubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubSettings")
            .field("api_url", &self.api_url)
            .field("token", &"***")
            .field("repo", &self.repo)
            .finish()
    }
}

impl GitHubSettings {
    /// From the Actions environment: `GITHUB_API_URL` (default api.github.com), `GITHUB_TOKEN`
    /// or the `github_token` input, and `repo` (from the event or `GITHUB_REPOSITORY`).
    pub fn from_env(env: &BTreeMap<String, String>, repo: &str) -> Result<Self, String> {
        let get = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let token = get("GITHUB_TOKEN")
            .or_else(|| get("INPUT_GITHUB_TOKEN"))
            .or_else(|| get("INPUT_GITHUB-TOKEN"))
            .ok_or_else(|| {
                "no GitHub token: set GITHUB_TOKEN (e.g. `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`) or the action input `github_token`".to_owned()
            })?;
        let repo = if repo.trim().is_empty() {
            get("GITHUB_REPOSITORY").unwrap_or_default().to_owned()
        } else {
            repo.trim().to_owned()
        };
        if !repo.contains('/') {
            return Err(format!(
                "the repository `{repo}` is not `owner/name`: set GITHUB_REPOSITORY or use an event payload with `repository.full_name`"
            ));
        }
        let api_url = get("GITHUB_API_URL").unwrap_or(DEFAULT_API_URL);
        url::Url::parse(api_url)
            .map_err(|e| format!("GITHUB_API_URL `{api_url}` is not a URL: {e}"))?;
        Ok(GitHubSettings {
            api_url: api_url.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            repo,
            retry: RetryPolicy::default(),
        })
    }
}

/// What the caller is doing, for messages: `"posting a comment on #3"` and the workflow
/// permission it needs (`"issues: write"`), named in a 403.
#[derive(Debug, Clone, Copy)]
pub struct Op<'a> {
    pub what: &'a str,
    pub permission: &'a str,
}

/// A successful response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Reply {
    /// The `rel="next"` URL of a `Link` header.
    pub fn next_link(&self) -> Option<String> {
        let link = self.headers.get("link")?.to_str().ok()?;
        link.split(',').find_map(|part| {
            let (url, params) = part.split_once(';')?;
            params
                .split(';')
                .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
                .then(|| {
                    url.trim()
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .to_owned()
                })
        })
    }
}

/// An HTTP error answer GitHub gave, before it became a [`ForgeError`] (callers that expect a
/// status, such as 422 on a moved ref, look at it first).
#[derive(Debug)]
pub struct Failure {
    pub status: u16,
    pub message: String,
    pub error: ForgeError,
}

pub struct GitHubClient {
    http: reqwest::Client,
    settings: GitHubSettings,
}

impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("settings", &self.settings)
            .finish()
    }
}

enum Attempt {
    Done(Reply),
    Retry { wait: Duration, last: Failure },
    Fail(Failure),
}

impl GitHubClient {
    pub fn new(settings: GitHubSettings) -> Result<Self, ForgeError> {
        let http = crate::http::client(settings.retry.timeout).map_err(ForgeError::Other)?;
        Ok(GitHubClient { http, settings })
    }

    pub fn repo(&self) -> &str {
        &self.settings.repo
    }

    pub fn owner(&self) -> &str {
        self.settings
            .repo
            .split_once('/')
            .map_or(self.settings.repo.as_str(), |(owner, _)| owner)
    }

    pub fn token(&self) -> &str {
        &self.settings.token
    }

    /// `/repos/{owner}/{name}` + `path`.
    pub fn repo_path(&self, path: &str) -> String {
        format!("/repos/{}{path}", self.settings.repo)
    }

    pub async fn get(&self, path: &str, op: Op<'_>) -> Result<Value, ForgeError> {
        self.send(Method::GET, path, None, op)
            .await
            .map(|r| r.body)
            .map_err(|f| f.error)
    }

    pub async fn post(&self, path: &str, body: &Value, op: Op<'_>) -> Result<Value, ForgeError> {
        self.send(Method::POST, path, Some(body), op)
            .await
            .map(|r| r.body)
            .map_err(|f| f.error)
    }

    pub async fn patch(&self, path: &str, body: &Value, op: Op<'_>) -> Result<Value, ForgeError> {
        self.send(Method::PATCH, path, Some(body), op)
            .await
            .map(|r| r.body)
            .map_err(|f| f.error)
    }

    /// Every item of a paginated list (`per_page=100`, following `Link: rel="next"`).
    pub async fn get_all(&self, path: &str, op: Op<'_>) -> Result<Vec<Value>, ForgeError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut next = Some(format!("{path}{sep}per_page=100"));
        let mut items = Vec::new();
        // A cap so a server that always links a next page cannot keep us here forever.
        for _ in 0..100 {
            let Some(page) = next.take() else { break };
            let reply = self
                .send(Method::GET, &page, None, op)
                .await
                .map_err(|f| f.error)?;
            next = reply.next_link();
            match reply.body {
                Value::Array(list) => items.extend(list),
                other => {
                    return Err(ForgeError::Other(format!(
                        "GitHub answered {} with {} instead of a list",
                        op.what,
                        kind_of(&other)
                    )));
                }
            }
        }
        Ok(items)
    }

    /// One call with retries; the error keeps the status for callers that expect some.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        op: Op<'_>,
    ) -> Result<Reply, Failure> {
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_owned()
        } else {
            format!("{}{path}", self.settings.api_url)
        };
        let policy = self.settings.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self
                .attempt(method.clone(), &url, body, op, attempt - 1)
                .await;
            match outcome {
                Attempt::Done(reply) => return Ok(reply),
                Attempt::Fail(failure) => return Err(failure),
                Attempt::Retry { wait, last } => {
                    if attempt >= policy.max_attempts {
                        return Err(last);
                    }
                    tracing::warn!(
                        "GitHub: {} failed ({}); retrying in {:.1}s (attempt {}/{})",
                        op.what,
                        last.error,
                        wait.as_secs_f64(),
                        attempt + 1,
                        policy.max_attempts
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn attempt(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        op: Op<'_>,
        retry: u32,
    ) -> Attempt {
        let policy = self.settings.retry;
        let mut request = self
            .http
            .request(method, url)
            .bearer_auth(&self.settings.token)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", API_VERSION);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                let error = ForgeError::Connection {
                    forge: FORGE.into(),
                    what: op.what.into(),
                    message: without_url(&e),
                };
                return Attempt::Retry {
                    wait: policy.backoff(retry),
                    last: Failure {
                        status: 0,
                        message: error.to_string(),
                        error,
                    },
                };
            }
        };
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            let body = if text.trim().is_empty() {
                Value::Null
            } else {
                match serde_json::from_str(&text) {
                    Ok(body) => body,
                    Err(e) => {
                        let error = ForgeError::Other(format!(
                            "GitHub answered {} with a body that is not JSON: {e}",
                            op.what
                        ));
                        return Attempt::Fail(Failure {
                            status: status.as_u16(),
                            message: error.to_string(),
                            error,
                        });
                    }
                }
            };
            return Attempt::Done(Reply {
                status: status.as_u16(),
                body,
                headers,
            });
        }
        let message = error_message(&text);
        if let Some(wait) = rate_limit_wait(status, &headers, &message, &policy, retry) {
            let error = ForgeError::RateLimited {
                forge: FORGE.into(),
                what: op.what.into(),
                retry_after_secs: wait.as_secs(),
            };
            let failure = Failure {
                status: status.as_u16(),
                message: message.clone(),
                error,
            };
            if wait > policy.max_rate_limit_wait {
                return Attempt::Fail(failure);
            }
            return Attempt::Retry {
                wait,
                last: failure,
            };
        }
        let error = classify(status, &message, op);
        let failure = Failure {
            status: status.as_u16(),
            message,
            error,
        };
        if status.is_server_error() {
            Attempt::Retry {
                wait: policy.backoff(retry),
                last: failure,
            }
        } else {
            Attempt::Fail(failure)
        }
    }
}

/// How long a rate-limited answer asks us to wait, or `None` when it is not a rate limit.
fn rate_limit_wait(
    status: StatusCode,
    headers: &HeaderMap,
    message: &str,
    policy: &RetryPolicy,
    retry: u32,
) -> Option<Duration> {
    if status != StatusCode::FORBIDDEN && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(seconds) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if header("x-ratelimit-remaining") == Some("0") {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let reset = header("x-ratelimit-reset")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(now + 60);
        // One extra second: the reset epoch is rounded down.
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    let lower = message.to_ascii_lowercase();
    if status == StatusCode::TOO_MANY_REQUESTS
        || lower.contains("secondary rate limit")
        || lower.contains("rate limit exceeded")
    {
        // GitHub asks for at least a minute after a secondary limit without Retry-After;
        // the growing back-off keeps us under the cap in tests and short runs.
        return Some(
            policy
                .backoff(retry + 1)
                .max(Duration::from_secs(1))
                .min(policy.max_rate_limit_wait),
        );
    }
    None
}

/// An error answer as the forge error whose message says what to fix.
fn classify(status: StatusCode, message: &str, op: Op<'_>) -> ForgeError {
    let what = op.what.to_owned();
    match status.as_u16() {
        401 => ForgeError::Unauthorized {
            forge: FORGE.into(),
            what,
        },
        403 => ForgeError::Forbidden {
            forge: FORGE.into(),
            what,
            message: format!(
                "{message}; the workflow needs `permissions: {}` and the token must belong to it",
                op.permission
            ),
        },
        404 => ForgeError::NotFound {
            what: format!(
                "{what} (GitHub answered 404: check the repository name and that the token can see it, or the workflow needs `permissions: {}`)",
                op.permission
            ),
        },
        409 => ForgeError::Conflict {
            what,
            status: 409,
            message: message.to_owned(),
        },
        422 => ForgeError::Unprocessable {
            forge: FORGE.into(),
            what,
            message: message.to_owned(),
        },
        code if code >= 500 => ForgeError::Server {
            forge: FORGE.into(),
            what,
            status: code,
            message: message.to_owned(),
        },
        code => ForgeError::Other(format!(
            "GitHub answered {what} with HTTP {code}: {message}"
        )),
    }
}

/// GitHub's `message` plus the `errors[].message` details, cut to a readable length.
fn error_message(text: &str) -> String {
    let message = match serde_json::from_str::<Value>(text) {
        Ok(body) => {
            let mut parts = Vec::new();
            if let Some(m) = body.get("message").and_then(Value::as_str) {
                parts.push(m.to_owned());
            }
            if let Some(errors) = body.get("errors").and_then(Value::as_array) {
                for e in errors {
                    match e.get("message").and_then(Value::as_str) {
                        Some(m) => parts.push(m.to_owned()),
                        None => {
                            if let Some(code) = e.get("code").and_then(Value::as_str) {
                                let field = e.get("field").and_then(Value::as_str).unwrap_or("?");
                                parts.push(format!("{field}: {code}"));
                            }
                        }
                    }
                }
            }
            if parts.is_empty() {
                text.trim().to_owned()
            } else {
                parts.join("; ")
            }
        }
        Err(_) => text.trim().to_owned(),
    };
    if message.chars().count() > MAX_MESSAGE {
        let cut: String = message.chars().take(MAX_MESSAGE).collect();
        format!("{cut}…")
    } else if message.is_empty() {
        "no message".to_owned()
    } else {
        message
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// reqwest errors embed the URL; the message already says which call failed.
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
        text = text.replace(url.as_str(), "<url>");
    }
    if error.is_timeout() {
        text.push_str(" (timed out)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_joins_details() {
        let text = r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for octo:x."}]}"#;
        assert_eq!(
            error_message(text),
            "Validation Failed; A pull request already exists for octo:x."
        );
        assert_eq!(error_message("plain"), "plain");
    }

    #[test]
    fn settings_need_a_token_and_a_repository() {
        let mut env = BTreeMap::new();
        let err = GitHubSettings::from_env(&env, "o/r").unwrap_err();
        assert!(err.contains("GITHUB_TOKEN"), "{err}");
        env.insert("INPUT_GITHUB_TOKEN".to_owned(), "tok123456".to_owned());
        let err = GitHubSettings::from_env(&env, "").unwrap_err();
        assert!(err.contains("GITHUB_REPOSITORY"), "{err}");
        env.insert("GITHUB_REPOSITORY".to_owned(), "o/r".to_owned());
        env.insert(
            "GITHUB_API_URL".to_owned(),
            "http://127.0.0.1:1/".to_owned(),
        );
        let settings = GitHubSettings::from_env(&env, "").unwrap();
        assert_eq!(settings.api_url, "http://127.0.0.1:1");
        assert_eq!(settings.repo, "o/r");
        assert!(!format!("{settings:?}").contains("tok123456"));
    }

    #[test]
    fn secondary_limit_without_retry_after_still_waits() {
        let policy = RetryPolicy::default();
        let wait = rate_limit_wait(
            StatusCode::FORBIDDEN,
            &HeaderMap::new(),
            "You have exceeded a secondary rate limit",
            &policy,
            0,
        );
        assert!(wait.is_some_and(|w| w >= Duration::from_secs(1)));
        assert!(
            rate_limit_wait(
                StatusCode::FORBIDDEN,
                &HeaderMap::new(),
                "Resource not accessible by integration",
                &policy,
                0
            )
            .is_none()
        );
    }
}
