//! The one HTTP client every provider uses: rustls + ring with bundled web PKI roots, a
//! per-request time-out, and retries with exponential back-off and full jitter that honour
//! `Retry-After`. API keys travel only in headers and are redacted from anything it reports.

use std::sync::LazyLock;
use std::time::{Duration, Instant, SystemTime};

use regex::Regex;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::meter::record_attempt;
use super::types::LlmError;

/// How long error bodies may be inside an error message.
const MAX_ERROR_BODY: usize = 600;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Back-off before the first retry; doubles each retry (before jitter).
    pub base_delay: Duration,
    /// Cap on any single wait, `Retry-After` included.
    pub max_delay: Duration,
}

impl RetryPolicy {
    pub fn new(max_retries: u32) -> Self {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }

    /// Full jitter: uniformly random in `0..=min(max, base * 2^retry)`.
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(fastrand::u64(0..=millis))
    }
}

pub fn build_reqwest_client() -> Result<reqwest::Client, LlmError> {
    crate::http::builder()
        .map_err(LlmError::Connection)?
        .build()
        .map_err(|e| LlmError::Connection(format!("cannot build the HTTP client: {e}")))
}

/// Token shapes of the usual providers, redacted even when they are not the configured key.
static TOKEN_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,}|gh[opsu]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}|(?i:bearer)\s+[A-Za-z0-9._\-]{12,})",
    )
    .expect("token pattern compiles")
});

/// Replaces the known secrets and anything shaped like a provider token.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(secret.as_str(), "[REDACTED]");
    }
    TOKEN_PATTERN.replace_all(&out, "[REDACTED]").into_owned()
}

/// `Retry-After` as delta-seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Default cap on a reply body (`llm.max_reply_bytes`).
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 10 * 1024 * 1024;

pub struct HttpClient {
    client: reqwest::Client,
    timeout: Duration,
    retry: RetryPolicy,
    secrets: Vec<String>,
    max_reply_bytes: u64,
}

enum Attempt {
    Done(Value),
    Retry(LlmError, Option<Duration>),
    Fail(LlmError),
}

impl HttpClient {
    /// `secrets` are redacted from every error and log line this client produces.
    pub fn new(
        timeout: Duration,
        retry: RetryPolicy,
        secrets: Vec<String>,
    ) -> Result<Self, LlmError> {
        Ok(HttpClient {
            client: build_reqwest_client()?,
            timeout,
            retry,
            secrets,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        })
    }

    /// Refuse reply bodies longer than `bytes` (read in chunks, never whole).
    pub fn with_reply_cap(mut self, bytes: u64) -> Self {
        self.max_reply_bytes = bytes.max(1);
        self
    }

    pub fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// POST a JSON body and return the JSON reply, retrying transient failures.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        purpose: &str,
    ) -> Result<Value, LlmError> {
        let shown_url = self.redact(url);
        // The one place request bodies leave: prompts, issue text and tool results alike.
        let body = &crate::outbound::redact_json(body);
        let mut retry = 0u32;
        loop {
            let started = Instant::now();
            let attempt = self.attempt(url, headers, body).await;
            record_attempt(started.elapsed(), !matches!(attempt, Attempt::Done(_)));
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let (error, retry_after) = match attempt {
                Attempt::Done(value) => {
                    tracing::debug!(purpose, url = %shown_url, retry, elapsed_ms, "LLM request succeeded");
                    return Ok(value);
                }
                Attempt::Fail(error) => {
                    tracing::warn!(purpose, url = %shown_url, elapsed_ms, %error, "LLM request failed");
                    return Err(error);
                }
                Attempt::Retry(error, retry_after) => (error, retry_after),
            };
            if retry >= self.retry.max_retries {
                tracing::warn!(purpose, url = %shown_url, retries = retry, %error, "LLM request failed; no retries left");
                return Err(error);
            }
            let delay = match retry_after {
                Some(wait) => wait.min(self.retry.max_delay),
                None => self.retry.backoff(retry),
            };
            retry += 1;
            tracing::warn!(
                purpose,
                url = %shown_url,
                retry,
                max_retries = self.retry.max_retries,
                delay_ms = delay.as_millis() as u64,
                honouring_retry_after = retry_after.is_some(),
                %error,
                "LLM request failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(&self, url: &str, headers: &HeaderMap, body: &Value) -> Attempt {
        let sent = self
            .client
            .post(url)
            .headers(headers.clone())
            .timeout(self.timeout)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                return Self::unless_timed_out(self.transport_error(&e, "sending the request"));
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = match self.read_capped(response).await {
            Ok(text) => text,
            Err(attempt) => return attempt,
        };
        if status.is_success() {
            return match serde_json::from_str::<Value>(&text) {
                Ok(value) => Attempt::Done(value),
                // A cut-off or garbled body is usually a transport hiccup: worth another try.
                Err(e) => Attempt::Retry(
                    LlmError::BadReply(format!(
                        "the reply body is not JSON ({e}): {}",
                        self.excerpt(&text)
                    )),
                    None,
                ),
            };
        }
        let code = status.as_u16();
        let hint = match code {
            401 | 403 => {
                " (the API key was refused: check the variable named by llm.api_key_env or the provider's default, and the model's access)"
            }
            404 => " (check llm.base_url, llm.model and, for Azure, llm.deployment)",
            _ => "",
        };
        let error = LlmError::Http {
            status: code,
            message: format!("{}{hint}", self.error_message(&text)),
        };
        if code == 408 || code == 429 || status.is_server_error() {
            Attempt::Retry(error, retry_after)
        } else {
            Attempt::Fail(error)
        }
    }

    /// The body as text, read chunk by chunk and refused once it passes the cap, so a runaway
    /// reply never sits whole in memory.
    async fn read_capped(&self, mut response: reqwest::Response) -> Result<String, Attempt> {
        let cap = self.max_reply_bytes;
        let too_large = || {
            Attempt::Fail(LlmError::BadReply(format!(
                "the reply is too large: more than {cap} bytes (llm.max_reply_bytes); \
                 lower the output limit (llm.max_output_tokens) or raise llm.max_reply_bytes"
            )))
        };
        if response.content_length().is_some_and(|length| length > cap) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if (bytes.len() + chunk.len()) as u64 > cap {
                        return Err(too_large());
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Self::unless_timed_out(
                        self.transport_error(&e, "reading the reply"),
                    ));
                }
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A transport error is retried as is, except a time-out: the same body would most likely
    /// run into the same limit again, so the caller re-asks differently (the budget wrapper
    /// lowers the output limit) instead of sending the identical request.
    fn unless_timed_out(error: LlmError) -> Attempt {
        match error {
            LlmError::Timeout { .. } => Attempt::Fail(error),
            other => Attempt::Retry(other, None),
        }
    }

    fn transport_error(&self, error: &reqwest::Error, doing: &str) -> LlmError {
        if error.is_timeout() {
            return LlmError::Timeout {
                seconds: self.timeout.as_secs().max(1),
            };
        }
        let mut message = format!("{doing} failed: {error}");
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        LlmError::Connection(self.redact(&message))
    }

    /// The provider's `error.message` when there is one, else the body; redacted and shortened
    /// because providers echo parts of the request, keys included.
    fn error_message(&self, body: &str) -> String {
        let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
            let message = v.pointer("/error/message").or_else(|| v.get("message"))?;
            message.as_str().map(str::to_string)
        });
        self.excerpt(from_json.as_deref().unwrap_or(body))
    }

    fn excerpt(&self, text: &str) -> String {
        let redacted = self.redact(text.trim());
        if redacted.chars().count() <= MAX_ERROR_BODY {
            return redacted;
        }
        let cut: String = redacted.chars().take(MAX_ERROR_BODY).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_the_configured_secret_and_token_shapes() {
        let secrets = vec!["my-very-secret-key".to_string()];
        let text = "bad key my-very-secret-key; also sk-abcdefghijklmnopqrstuv and ghp_abcdefghijklmnopqrstuvwxyz0123 and Bearer abc.def-ghi_jkl012";
        let out = redact(text, &secrets);
        assert!(!out.contains("my-very-secret-key"), "{out}");
        assert!(!out.contains("sk-abcdefghijklmnopqrstuv"), "{out}");
        assert!(!out.contains("ghp_"), "{out}");
        assert!(!out.contains("abc.def-ghi_jkl012"), "{out}");
        assert_eq!(out.matches("[REDACTED]").count(), 4, "{out}");
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        let later = SystemTime::now() + Duration::from_secs(30);
        let wait = parse_retry_after(&httpdate::fmt_http_date(later)).unwrap();
        assert!(
            wait > Duration::from_secs(27) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn backoff_is_jittered_below_the_exponential_ceiling() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        for _ in 0..200 {
            assert!(policy.backoff(0) <= Duration::from_millis(100));
            assert!(policy.backoff(1) <= Duration::from_millis(200));
            assert!(policy.backoff(10) <= Duration::from_millis(350));
        }
    }

    #[test]
    fn the_client_builds_with_ring_and_bundled_roots() {
        let config = crate::http::tls_config().unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        HttpClient::new(Duration::from_secs(1), RetryPolicy::new(0), vec![]).unwrap();
    }
}
