//! A thin hand-written GitHub REST client over [`crate::http::Api`]: base URL from
//! `GITHUB_API_URL`, bearer token, the headers GitHub asks for, and GitHub's error shapes turned
//! into errors that say what to fix. Retries, rate limits, same-origin rules and body caps are the
//! API layer's.

use crate::forge::ForgeError;
pub use crate::http::RetryPolicy;
use crate::http::{Api, ApiError, ApiSettings, Auth, Lookup, Replay};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeMap;

pub const DEFAULT_API_URL: &str = "https://api.github.com";
pub const API_VERSION: &str = "2022-11-28";
const FORGE: &str = "GitHub";
/// How much of an error body goes into a message.
const MAX_MESSAGE: usize = 400;

/// Where and as whom to talk to GitHub.
#[derive(Clone)]
pub struct GitHubSettings {
    pub api_url: String,
    pub token: String,
    /// `owner/name`.
    pub repo: String,
    pub retry: RetryPolicy,
    /// Answers larger than this are refused ("too large").
    pub max_body_bytes: usize,
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
            max_body_bytes: crate::http::DEFAULT_MAX_BODY_BYTES,
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
        crate::http::next_link(&self.headers)
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
    api: Api,
    settings: GitHubSettings,
}

impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("settings", &self.settings)
            .finish()
    }
}

/// Pages followed at most (100 items each), so a server that always links a next page cannot
/// keep us here forever.
const MAX_PAGES: usize = 100;

impl GitHubClient {
    pub fn new(settings: GitHubSettings) -> Result<Self, ForgeError> {
        let api = Api::new(ApiSettings {
            name: FORGE,
            base_url: settings.api_url.clone(),
            auth: Auth::Bearer(settings.token.clone()),
            headers: vec![
                ("accept", "application/vnd.github+json".to_owned()),
                ("x-github-api-version", API_VERSION.to_owned()),
            ],
            retry: settings.retry,
            max_body_bytes: settings.max_body_bytes,
        })
        .map_err(ForgeError::Other)?;
        Ok(GitHubClient { api, settings })
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

    /// A POST whose repetition is harmless (content-addressed git objects, a reaction GitHub
    /// deduplicates); one that creates something new goes through [`GitHubClient::create`].
    pub async fn post(&self, path: &str, body: &Value, op: Op<'_>) -> Result<Value, ForgeError> {
        self.send(Method::POST, path, Some(body), op)
            .await
            .map(|r| r.body)
            .map_err(|f| f.error)
    }

    /// A PATCH that sets whole fields, so sending it twice leaves the same result.
    pub async fn patch(&self, path: &str, body: &Value, op: Op<'_>) -> Result<Value, ForgeError> {
        self.send(Method::PATCH, path, Some(body), op)
            .await
            .map(|r| r.body)
            .map_err(|f| f.error)
    }

    /// A POST that creates something (a comment, a pull request): after a 5xx or a time-out it
    /// is sent again only when `lookup` finds that the first attempt left nothing behind.
    pub async fn create(
        &self,
        path: &str,
        body: &Value,
        op: Op<'_>,
        lookup: Lookup<'_>,
    ) -> Result<Value, ForgeError> {
        self.api
            .write_checked(Method::POST, path, body, op.what, lookup)
            .await
            .map(|r| r.body)
            .map_err(|e| failure(e, op).error)
    }

    /// Every item of a paginated list (`per_page=100`, following `Link: rel="next"` on the API
    /// origin only).
    pub async fn get_all(&self, path: &str, op: Op<'_>) -> Result<Vec<Value>, ForgeError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.api
            .get_all_linked(&format!("{path}{sep}per_page=100"), op.what, MAX_PAGES)
            .await
            .map_err(|e| failure(e, op).error)
    }

    /// One call with the retries its method allows (writes sent here are declared safe to
    /// repeat); the error keeps the status for callers that expect some.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        op: Op<'_>,
    ) -> Result<Reply, Failure> {
        self.api
            .send(method, path, body, Replay::Safe, op.what)
            .await
            .map(|r| Reply {
                status: r.status.as_u16(),
                body: r.body,
                headers: r.headers,
            })
            .map_err(|e| failure(e, op))
    }
}

/// An API-layer error as GitHub's forge error, keeping the status.
fn failure(error: ApiError, op: Op<'_>) -> Failure {
    let status = error.status().map_or(0, |s| s.as_u16());
    let (message, error) = match error {
        ApiError::Status { status, text, .. } => {
            let message = error_message(&text);
            let error = classify(status, &message, op);
            (message, error)
        }
        ApiError::RateLimited { wait, .. } => {
            let error = ForgeError::RateLimited {
                forge: FORGE.into(),
                what: op.what.into(),
                retry_after_secs: wait.as_secs(),
            };
            (error.to_string(), error)
        }
        ApiError::Connection(message) => {
            let error = ForgeError::Connection {
                forge: FORGE.into(),
                what: op.what.into(),
                message,
            };
            (error.to_string(), error)
        }
        ApiError::Uncertain(message) => {
            let error = ForgeError::Uncertain {
                forge: FORGE.into(),
                what: op.what.into(),
                message,
            };
            (error.to_string(), error)
        }
        other => {
            let error = ForgeError::Other(format!("GitHub: {}: {other}", op.what));
            (error.to_string(), error)
        }
    };
    Failure {
        status,
        message,
        error,
    }
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
}
