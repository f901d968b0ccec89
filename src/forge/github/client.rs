//! The GitHub REST client: octocrab's typed API sent through [`crate::http::Api`] (see
//! `transport.rs`): base URL from `GITHUB_API_URL`, bearer token, the headers GitHub asks for,
//! and GitHub's error shapes turned into errors that say what to fix. Retries, rate limits,
//! same-origin rules and body caps are the API layer's.

use super::transport;
use crate::forge::ForgeError;
pub use crate::http::RetryPolicy;
use crate::http::{Api, ApiError, ApiSettings, Auth, Replay};
use octocrab::{Octocrab, Page};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

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

/// An HTTP error answer GitHub gave, before it became a [`ForgeError`] (callers that expect a
/// status, such as 422 on a moved ref, look at it first).
#[derive(Debug)]
pub struct Failure {
    pub status: u16,
    pub message: String,
    pub error: ForgeError,
}

/// octocrab's typed API over our [`Api`]: `safe` may repeat a write whose first attempt may
/// have taken effect (GETs, content-addressed git objects, whole-field PATCHes, deduplicated
/// reactions, compare-and-swap ref moves); `once` never does (a comment, a pull request), and
/// [`GitHubClient::create`] checks before it sends one again.
struct Crabs {
    safe: Octocrab,
    once: Octocrab,
}

pub struct GitHubClient {
    api: Arc<Api>,
    settings: GitHubSettings,
    /// Built on first use: octocrab spawns its request buffer's worker on the current runtime.
    crabs: OnceLock<Crabs>,
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
        Ok(GitHubClient {
            api: Arc::new(api),
            settings,
            crabs: OnceLock::new(),
        })
    }

    fn crabs(&self) -> &Crabs {
        self.crabs.get_or_init(|| Crabs {
            safe: transport::octocrab(self.api.clone(), Replay::Safe),
            once: transport::octocrab(self.api.clone(), Replay::Never),
        })
    }

    /// The API layer itself, for the answers that are not JSON (a job's log).
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// The octocrab for reads and writes that may be repeated.
    pub fn octocrab(&self) -> &Octocrab {
        &self.crabs().safe
    }

    pub fn owner(&self) -> &str {
        self.settings
            .repo
            .split_once('/')
            .map_or(self.settings.repo.as_str(), |(owner, _)| owner)
    }

    /// The repository's name without the owner.
    pub fn name(&self) -> &str {
        self.settings
            .repo
            .split_once('/')
            .map_or(self.settings.repo.as_str(), |(_, name)| name)
    }

    /// `/repos/{owner}/{name}` + `path`.
    pub fn repo_path(&self, path: &str) -> String {
        format!("/repos/{}{path}", self.settings.repo)
    }

    /// One octocrab call; its error says what failed and what to fix.
    pub async fn call<T>(
        &self,
        op: Op<'_>,
        call: impl Future<Output = octocrab::Result<T>>,
    ) -> Result<T, ForgeError> {
        self.call_with_status(op, call).await.map_err(|f| f.error)
    }

    /// [`GitHubClient::call`] keeping the status of an error answer, for callers that expect
    /// some (a 422 on a moved ref).
    pub async fn call_with_status<T>(
        &self,
        op: Op<'_>,
        call: impl Future<Output = octocrab::Result<T>>,
    ) -> Result<T, Failure> {
        transport::described(op.what, call)
            .await
            .map_err(|e| failure(transport::api_error(e), op))
    }

    /// A call that creates something (a comment, a pull request), made with the octocrab that
    /// never repeats a write: after a 5xx or a time-out it is sent again only when `lookup`
    /// finds that the first attempt left nothing behind.
    pub async fn create<T, S, SF, L, LF>(
        &self,
        op: Op<'_>,
        send: S,
        lookup: L,
    ) -> Result<T, ForgeError>
    where
        S: Fn(Octocrab) -> SF,
        SF: Future<Output = octocrab::Result<T>>,
        L: Fn() -> LF,
        LF: Future<Output = Result<Option<T>, String>>,
    {
        let once = &self.crabs().once;
        self.api
            .write_once(
                op.what,
                || async {
                    transport::described(op.what, send(once.clone()))
                        .await
                        .map_err(transport::api_error)
                },
                lookup,
            )
            .await
            .map_err(|e| failure(e, op).error)
    }

    /// Every item of a list from its first page on, following `Link: rel="next"` (on the API
    /// origin only: the API layer refuses any other) for at most [`MAX_PAGES`] pages.
    pub async fn all_pages<T: DeserializeOwned>(
        &self,
        op: Op<'_>,
        first: impl Future<Output = octocrab::Result<Page<T>>>,
    ) -> Result<Vec<T>, ForgeError> {
        let mut page = self.call(op, first).await?;
        let mut items = page.take_items();
        for _ in 1..MAX_PAGES {
            let Some(next) = self
                .call(op, self.octocrab().get_page::<T>(&page.next))
                .await?
            else {
                break;
            };
            page = next;
            items.extend(page.take_items());
        }
        Ok(items)
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
