//! One API client over one origin: it injects the credentials, sends JSON, retries what may be
//! retried (GETs and writes the caller declares safe to repeat, after 5xx, connection errors and
//! rate limits, honouring `Retry-After` and the rate-limit headers), caps response bodies, and
//! never lets the credentials leave the configured origin (pagination links and redirects to
//! anywhere else are refused).
//!
//! A write that may have taken effect (a 5xx or a time-out after it was sent) is never sent again
//! blindly: [`Api::send`] reports it as [`ApiError::Uncertain`], and [`Api::write_checked`] sends
//! it again only after the caller's look-up found that it did not take effect.

use super::body::read_capped;
use super::origin::{Origin, shown};
use super::retry::RetryPolicy;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use url::Url;

/// How the client proves who it is. The value is marked sensitive and never printed.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <token>` (GitHub).
    Bearer(String),
    /// A header of its own, e.g. GitLab's `PRIVATE-TOKEN`.
    Header(&'static str, String),
}

#[derive(Clone)]
pub struct ApiSettings {
    /// The service's name in messages: `GitHub`, `GitLab`.
    pub name: &'static str,
    /// The API root (`GITHUB_API_URL`, `CI_API_V4_URL`); its origin is the only one we talk to.
    pub base_url: String,
    pub auth: Auth,
    /// Sent with every request (`accept`, API version).
    pub headers: Vec<(&'static str, String)>,
    pub retry: RetryPolicy,
    /// Response bodies larger than this are refused.
    pub max_body_bytes: usize,
}

/// May a write be sent again when its first attempt may have taken effect?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Repeating it changes nothing (content-addressed objects, compare-and-swap updates, a PATCH
    /// that sets a whole body, a reaction GitHub deduplicates).
    Safe,
    /// Repeating it could duplicate the effect: it is reported as [`ApiError::Uncertain`].
    Never,
}

/// A successful answer; the body is JSON (`null` when empty).
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("HTTP {status}: {text}")]
    Status {
        status: StatusCode,
        headers: HeaderMap,
        text: String,
    },
    #[error("rate limited (HTTP {status}); the limit resets in {}s", wait.as_secs())]
    RateLimited { status: StatusCode, wait: Duration },
    #[error("{0}")]
    Connection(String),
    #[error("the answer is too large: {what}, more than the cap of {limit} bytes")]
    TooLarge { limit: usize, what: String },
    #[error(
        "the link `{url}` leads outside the API origin {origin}; it was not followed, so the token stays with {origin}"
    )]
    ForeignOrigin { url: String, origin: String },
    #[error(
        "HTTP {status} redirects to `{location}`, outside the API origin {origin}; not followed, so the token stays with {origin}"
    )]
    Redirect {
        status: StatusCode,
        location: String,
        origin: String,
    },
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not what the typed client reads (a required field missing).
    #[error("the answer does not have the expected shape: {0}")]
    Shape(String),
    #[error("{0}; the request may have taken effect, so it was not sent again without checking")]
    Uncertain(String),
}

impl ApiError {
    /// The HTTP status of an error answer, if there was one.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ApiError::Status { status, .. }
            | ApiError::RateLimited { status, .. }
            | ApiError::Redirect { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// What a caller's look-up found after an uncertain write: `Ok(Some(body))` the effect is there
/// (its JSON as the write would have answered), `Ok(None)` it is not, `Err(why)` unknown.
pub type LookupResult = Result<Option<Value>, String>;
pub type Lookup<'a> =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = LookupResult> + Send + 'a>> + Send + Sync + 'a>;

pub struct Api {
    http: reqwest::Client,
    base: Url,
    origin: Origin,
    name: &'static str,
    auth: (HeaderName, HeaderValue),
    headers: Vec<(HeaderName, HeaderValue)>,
    /// As given: the retry policy and body cap are read from here, and [`Api::reconfigured`]
    /// builds the client again from them.
    settings: ApiSettings,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("name", &self.name)
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

/// One failed attempt: the error, the wait before another one (None: do not retry), and whether
/// the request may have taken effect.
struct Failure {
    error: ApiError,
    wait: Option<Duration>,
    maybe_applied: bool,
}

impl Api {
    pub fn new(settings: ApiSettings) -> Result<Self, String> {
        let base = Url::parse(settings.base_url.trim_end_matches('/')).map_err(|e| {
            format!(
                "the {} API URL `{}` is not a URL: {e}",
                settings.name, settings.base_url
            )
        })?;
        let origin = Origin::of(&base);
        let redirect_origin = origin.clone();
        // Redirects within the origin keep the credentials; any other is returned unfollowed
        // (reqwest would drop `Authorization` across hosts, but not a `PRIVATE-TOKEN` header).
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if redirect_origin.contains(attempt.url()) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let http = super::builder()?
            .timeout(settings.retry.timeout)
            .redirect(redirects)
            .build()
            .map_err(|e| format!("HTTP client setup failed: {e}"))?;
        let (name, value) = match &settings.auth {
            Auth::Bearer(token) => (
                reqwest::header::AUTHORIZATION,
                format!("Bearer {}", token.trim()),
            ),
            Auth::Header(name, token) => (HeaderName::from_static(name), token.trim().to_owned()),
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!(
                "the {} token holds characters that cannot be sent in an HTTP header",
                settings.name
            )
        })?;
        value.set_sensitive(true);
        let headers = settings
            .headers
            .iter()
            .map(|(name, value)| {
                HeaderValue::from_str(value)
                    .map(|v| (HeaderName::from_static(name), v))
                    .map_err(|e| format!("header {name}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Api {
            http,
            base,
            origin,
            name: settings.name,
            auth: (name, value),
            headers,
            settings,
        })
    }

    /// The same API with some settings changed (retry policy, body cap). A new HTTP client,
    /// since the time-out belongs to it.
    pub fn reconfigured(&self, change: impl FnOnce(&mut ApiSettings)) -> Result<Api, String> {
        let mut settings = self.settings.clone();
        change(&mut settings);
        Api::new(settings)
    }

    pub fn base_url(&self) -> &str {
        self.base.as_str().trim_end_matches('/')
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// A path under the API root, or an absolute URL that must be on the API origin.
    pub fn url(&self, path: &str) -> Result<Url, ApiError> {
        if path.starts_with("http://") || path.starts_with("https://") {
            let url = Url::parse(path).map_err(|_| ApiError::ForeignOrigin {
                url: path.to_owned(),
                origin: self.origin.to_string(),
            })?;
            if !self.origin.contains(&url) {
                return Err(ApiError::ForeignOrigin {
                    url: shown(&url),
                    origin: self.origin.to_string(),
                });
            }
            return Ok(url);
        }
        Url::parse(&format!("{}{path}", self.base_url())).map_err(|e| {
            ApiError::Connection(format!(
                "`{path}` does not make a URL under the API root: {e}"
            ))
        })
    }

    /// One request with the retries its method and `replay` allow.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        replay: Replay,
        what: &str,
    ) -> Result<Response, ApiError> {
        let url = self.url(path)?;
        let replayable = matches!(method, Method::GET | Method::HEAD) || replay == Replay::Safe;
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(&method, &url, body, attempt - 1).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            let Some(wait) = failure.wait else {
                return Err(failure.error);
            };
            if failure.maybe_applied && !replayable {
                return Err(ApiError::Uncertain(failure.error.to_string()));
            }
            if attempt >= self.settings.retry.max_attempts {
                return Err(failure.error);
            }
            attempt += 1;
            tracing::warn!(
                "{}: {what} failed ({}); retrying in {:.1}s (attempt {attempt}/{})",
                self.name,
                failure.error,
                wait.as_secs_f64(),
                self.settings.retry.max_attempts
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// A write that must happen once: when an attempt may have taken effect, `lookup` checks;
    /// what it finds is the answer, and only when it finds nothing is the write sent again.
    pub async fn write_checked(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        what: &str,
        lookup: Lookup<'_>,
    ) -> Result<Response, ApiError> {
        self.write_once(
            what,
            || self.send(method.clone(), path, Some(body), Replay::Never, what),
            || async {
                lookup().await.map(|found| {
                    found.map(|body| Response {
                        status: StatusCode::OK,
                        headers: HeaderMap::new(),
                        body,
                    })
                })
            },
        )
        .await
    }

    /// The loop of [`Api::write_checked`] over any sender whose attempts go through this API
    /// with [`Replay::Never`] (a typed client's call): an [`ApiError::Uncertain`] answer is
    /// checked with `lookup`, and the write is sent again only when it left nothing behind.
    pub async fn write_once<T, S, SF, L, LF>(
        &self,
        what: &str,
        send: S,
        lookup: L,
    ) -> Result<T, ApiError>
    where
        S: Fn() -> SF,
        SF: Future<Output = Result<T, ApiError>>,
        L: Fn() -> LF,
        LF: Future<Output = Result<Option<T>, String>>,
    {
        let mut attempt = 1;
        loop {
            let error = match send().await {
                Err(ApiError::Uncertain(message)) => message,
                other => return other,
            };
            match lookup().await {
                Ok(Some(found)) => {
                    tracing::info!(
                        "{}: {what} failed ({error}) but had taken effect; not sent again",
                        self.name
                    );
                    return Ok(found);
                }
                Ok(None) if attempt < self.settings.retry.max_attempts => {
                    let wait = self.settings.retry.backoff(attempt - 1);
                    attempt += 1;
                    tracing::warn!(
                        "{}: {what} failed ({error}) and did not take effect; sending it again in {:.1}s (attempt {attempt}/{})",
                        self.name,
                        wait.as_secs_f64(),
                        self.settings.retry.max_attempts
                    );
                    tokio::time::sleep(wait).await;
                }
                Ok(None) => return Err(ApiError::Connection(error)),
                Err(why) => {
                    return Err(ApiError::Uncertain(format!(
                        "{error}; checking whether it took effect failed too: {why}"
                    )));
                }
            }
        }
    }

    /// Every item of a list, following `Link: rel="next"` on the API origin only.
    pub async fn get_all_linked(
        &self,
        path: &str,
        what: &str,
        max_pages: usize,
    ) -> Result<Vec<Value>, ApiError> {
        let mut next = Some(path.to_owned());
        let mut items = Vec::new();
        for _ in 0..max_pages {
            let Some(page) = next.take() else { break };
            let response = self
                .send(Method::GET, &page, None, Replay::Safe, what)
                .await?;
            next = super::next_link(&response.headers);
            if let Some(link) = &next {
                // Checked before the next request so the message names the link, not a failure.
                self.url(link)?;
            }
            match response.body {
                Value::Array(list) => items.extend(list),
                other => {
                    return Err(ApiError::NotJson(format!(
                        "expected a list, got {}",
                        kind_of(&other)
                    )));
                }
            }
        }
        Ok(items)
    }

    /// The last `keep` bytes of a text answer (a CI job's log). A redirect within the API origin
    /// is followed with the credentials; one to another origin (GitHub's signed log URL) is
    /// followed without them, so the token stays with the API.
    pub async fn get_text_tail(&self, path: &str, keep: usize) -> Result<String, ApiError> {
        let url = self.url(path)?;
        let mut request = self
            .http
            .get(url.clone())
            .header(self.auth.0.clone(), self.auth.1.clone());
        for (name, value) in &self.headers {
            request = request.header(name.clone(), value.clone());
        }
        let connection = |e: reqwest::Error| ApiError::Connection(describe(&e));
        let mut response = request.send().await.map_err(connection)?;
        if response.status().is_redirection() {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| ApiError::Connection("a redirect without a location".into()))?;
            // A plain client: nothing of ours is sent to the signed URL's host.
            let plain = super::client(self.settings.retry.timeout).map_err(ApiError::Connection)?;
            response = plain.get(location).send().await.map_err(connection)?;
        }
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let text = super::text_tail::read_tail(response, 2048)
                .await
                .unwrap_or_default();
            return Err(ApiError::Status {
                status,
                headers,
                text,
            });
        }
        super::text_tail::read_tail(response, keep)
            .await
            .map_err(connection)
    }

    async fn attempt(
        &self,
        method: &Method,
        url: &Url,
        body: Option<&Value>,
        retry: u32,
    ) -> Result<Response, Failure> {
        let mut request = self
            .http
            .request(method.clone(), url.clone())
            .header(self.auth.0.clone(), self.auth.1.clone());
        for (name, value) in &self.headers {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                return Err(Failure {
                    // A refused connection never reached the server; anything later might have.
                    maybe_applied: !e.is_connect(),
                    error: ApiError::Connection(describe(&e)),
                    wait: Some(self.settings.retry.backoff(retry)),
                });
            }
        };
        let status = response.status();
        let headers = response.headers().clone();
        if status.is_redirection() {
            let location = headers
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(|l| url.join(l).map_or_else(|_| l.to_owned(), |u| shown(&u)))
                .unwrap_or_default();
            return Err(Failure {
                error: ApiError::Redirect {
                    status,
                    location,
                    origin: self.origin.to_string(),
                },
                wait: None,
                maybe_applied: false,
            });
        }
        let bytes = match read_capped(response, self.settings.max_body_bytes).await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(e)) => {
                return Err(Failure {
                    maybe_applied: true,
                    error: ApiError::Connection(describe(&e)),
                    wait: Some(self.settings.retry.backoff(retry)),
                });
            }
            Err(declared) => {
                let what = match declared {
                    Some(n) => format!("{n} bytes declared"),
                    None => "the body kept coming".to_owned(),
                };
                return Err(Failure {
                    error: ApiError::TooLarge {
                        limit: self.settings.max_body_bytes,
                        what,
                    },
                    wait: None,
                    maybe_applied: false,
                });
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        if status.is_success() {
            let body = if text.trim().is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).map_err(|e| Failure {
                    error: ApiError::NotJson(e.to_string()),
                    wait: None,
                    maybe_applied: false,
                })?
            };
            return Ok(Response {
                status,
                headers,
                body,
            });
        }
        if let Some(wait) = self
            .settings
            .retry
            .rate_limit_wait(status, &headers, &text, retry)
        {
            let error = ApiError::RateLimited { status, wait };
            return Err(Failure {
                error,
                wait: (wait <= self.settings.retry.max_rate_limit_wait).then_some(wait),
                maybe_applied: false,
            });
        }
        let server_error = status.is_server_error();
        Err(Failure {
            error: ApiError::Status {
                status,
                headers,
                text: text.into_owned(),
            },
            wait: server_error.then(|| self.settings.retry.backoff(retry)),
            maybe_applied: server_error,
        })
    }
}

/// A transport error with its causes, without the URL (the message already names the call).
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
        text = text.replace(url.as_str(), "<url>");
    }
    if error.is_timeout() && !text.contains("timed out") {
        text.push_str(" (timed out)");
    }
    text
}

pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
