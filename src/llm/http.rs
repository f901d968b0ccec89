//! The one HTTP client every provider uses: rustls + ring with bundled web PKI roots, a
//! per-request time-out, and retries by the one [`RetryPolicy`] (`crate::http`: back-off with
//! jitter, `Retry-After`). API keys travel only in headers; they join the run's secret set, and
//! the one redactor (`crate::outbound`) masks them in the request bodies and in anything this
//! client reports.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::meter::record_attempt;
use super::types::LlmError;
pub use crate::http::RetryPolicy;
use crate::http::{describe, read_capped};
use crate::outbound::redact;

/// What a streamed reply's reader wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    /// The reply is complete for the caller: the rest of the stream is dropped.
    Enough,
}

/// Reads the server-sent events of one streamed reply.
pub trait EventReader {
    /// One event's `data`.
    fn event(&mut self, data: &str) -> Flow;
    /// Why a stream the server ended is incomplete (no end event, an error event), if it is.
    fn unfinished(&self) -> Option<String>;
    /// The attempt's time limit came while the reply was being written: `true` when what was
    /// read is kept as a reply cut off there (else the attempt timed out).
    fn out_of_time(&mut self) -> bool {
        false
    }
    /// The reply is of no use (it is counted as a wasted attempt).
    fn thrown_away(&self) -> bool {
        false
    }
}

/// A streamed attempt's own deadline is `timeout`; the HTTP client's, this much later, only
/// backs it up.
const STREAM_GRACE: Duration = Duration::from_secs(5);

/// How long error bodies may be inside an error message.
const MAX_ERROR_BODY: usize = 600;

/// Default cap on a reply body (`llm.max_reply_bytes`).
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 10 * 1024 * 1024;

pub struct HttpClient {
    client: reqwest::Client,
    /// Its `timeout` is the limit of each attempt.
    retry: RetryPolicy,
    max_reply_bytes: u64,
}

enum Attempt<T> {
    Done(T),
    Retry(LlmError, Option<Duration>),
    Fail(LlmError),
}

/// A streamed reply as it came: server-sent events read by the caller's reader, or a whole JSON
/// body from a server that ignored `stream: true`.
pub enum Streamed<R> {
    Events(R),
    Whole(Value),
}

impl HttpClient {
    /// `timeout` limits each attempt (it replaces `retry.timeout`). `secrets` (the API key) join
    /// the run's secret set, so the one redactor masks them wherever they would leave.
    pub fn new(
        timeout: Duration,
        retry: RetryPolicy,
        secrets: Vec<String>,
    ) -> Result<Self, LlmError> {
        crate::outbound::add_secrets(secrets);
        Ok(HttpClient {
            client: crate::http::builder()
                .and_then(|builder| {
                    builder
                        .build()
                        .map_err(|e| format!("cannot build the HTTP client: {e}"))
                })
                .map_err(LlmError::Connection)?,
            retry: RetryPolicy { timeout, ..retry },
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        })
    }

    /// Refuse reply bodies longer than `bytes` (read in chunks, never whole).
    pub fn with_reply_cap(mut self, bytes: u64) -> Self {
        self.max_reply_bytes = bytes.max(1);
        self
    }

    /// POST a JSON body and return the JSON reply, retrying transient failures.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        purpose: &str,
    ) -> Result<Value, LlmError> {
        // The one place request bodies leave: prompts, issue text and tool results alike.
        let body = &crate::outbound::redacted_json_text(body);
        self.with_retries(url, purpose, || self.attempt(url, headers, body), |_| false)
            .await
    }

    /// POST a JSON body asking for a streamed reply (`stream: true` in `body`) and hand its
    /// server-sent events to a fresh reader from `new_reader` (one per attempt). When the reader
    /// has enough, the connection is dropped, which makes the server stop generating. Retries,
    /// time-outs, the reply cap and redaction are those of [`Self::post_json`].
    pub async fn post_stream<R: EventReader>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        purpose: &str,
        new_reader: impl Fn() -> R,
    ) -> Result<Streamed<R>, LlmError> {
        let body = &crate::outbound::redacted_json_text(body);
        let new_reader = &new_reader;
        self.with_retries(
            url,
            purpose,
            move || self.attempt_stream(url, headers, body, new_reader()),
            |reply| matches!(reply, Streamed::Events(reader) if reader.thrown_away()),
        )
        .await
    }

    /// Runs `attempt` until it succeeds, fails for good or the retries are spent; every attempt
    /// is metered, those ending in an error or a reply `thrown_away` says is unused as wasted.
    async fn with_retries<T, F, Fut>(
        &self,
        url: &str,
        purpose: &str,
        attempt: F,
        thrown_away: impl Fn(&T) -> bool,
    ) -> Result<T, LlmError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Attempt<T>>,
    {
        let shown_url = redact(url);
        let mut retry = 0u32;
        loop {
            let started = Instant::now();
            let attempt = attempt().await;
            let wasted = match &attempt {
                Attempt::Done(reply) => thrown_away(reply),
                _ => true,
            };
            record_attempt(started.elapsed(), wasted);
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
            if retry + 1 >= self.retry.max_attempts {
                tracing::warn!(purpose, url = %shown_url, retries = retry, %error, "LLM request failed; no retries left");
                return Err(error);
            }
            let delay = match retry_after {
                Some(wait) => wait.min(self.retry.max_rate_limit_wait),
                None => self.retry.backoff(retry),
            };
            retry += 1;
            tracing::warn!(
                purpose,
                url = %shown_url,
                retry,
                max_retries = self.retry.max_attempts.saturating_sub(1),
                delay_ms = delay.as_millis() as u64,
                honouring_retry_after = retry_after.is_some(),
                %error,
                "LLM request failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// Sends the request; a reply that is not a success comes back as the attempt's end.
    async fn send<T>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &bytes::Bytes,
        timeout: Duration,
    ) -> Result<reqwest::Response, Attempt<T>> {
        let sent = self
            .client
            .post(url)
            .headers(headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(body.clone())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                return Err(Self::unless_timed_out(
                    self.transport_error(&e, "sending the request"),
                ));
            }
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(crate::http::retry_after);
        let text = self.read_capped(response).await?;
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
        Err(if code == 408 || code == 429 || status.is_server_error() {
            Attempt::Retry(error, retry_after)
        } else {
            Attempt::Fail(error)
        })
    }

    async fn attempt(&self, url: &str, headers: &HeaderMap, body: &bytes::Bytes) -> Attempt<Value> {
        match self.send(url, headers, body, self.retry.timeout).await {
            Ok(response) => self.whole_json(response).await,
            Err(end) => end,
        }
    }

    async fn whole_json(&self, response: reqwest::Response) -> Attempt<Value> {
        let text = match self.read_capped(response).await {
            Ok(text) => text,
            Err(attempt) => return attempt,
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => Attempt::Done(value),
            // A cut-off or garbled body is usually a transport hiccup: worth another try.
            Err(e) => Attempt::Retry(
                LlmError::BadReply(format!(
                    "the reply body is not JSON ({e}): {}",
                    self.excerpt(&text)
                )),
                None,
            ),
        }
    }

    async fn attempt_stream<R: EventReader>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &bytes::Bytes,
        mut reader: R,
    ) -> Attempt<Streamed<R>> {
        // The attempt's time limit is kept here, so that a reply still being written when it
        // comes is kept as far as it got (cut off, as at an output limit) instead of lost.
        let deadline = tokio::time::Instant::now() + self.retry.timeout;
        let sending = self.send(url, headers, body, self.retry.timeout + STREAM_GRACE);
        let mut response = match tokio::time::timeout_at(deadline, sending).await {
            Ok(Ok(response)) => response,
            Ok(Err(end)) => return end,
            Err(_) => return Attempt::Fail(self.timed_out()),
        };
        let is_event_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if !is_event_stream {
            return match self.whole_json(response).await {
                Attempt::Done(value) => Attempt::Done(Streamed::Whole(value)),
                Attempt::Retry(error, wait) => Attempt::Retry(error, wait),
                Attempt::Fail(error) => Attempt::Fail(error),
            };
        }
        let cap = usize::try_from(self.max_reply_bytes).unwrap_or(usize::MAX);
        let mut events = super::sse::Events::default();
        let mut read = 0usize;
        loop {
            let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => {
                    return Self::unless_timed_out(self.transport_error(&e, "reading the reply"));
                }
                Err(_) if reader.out_of_time() => {
                    tracing::warn!(
                        seconds = self.retry.timeout.as_secs(),
                        "the streamed reply was still being written at llm.timeout_seconds; it is kept as cut off there"
                    );
                    return Attempt::Done(Streamed::Events(reader));
                }
                Err(_) => return Attempt::Fail(self.timed_out()),
            };
            read += chunk.len();
            if read > cap {
                return Attempt::Fail(self.too_large());
            }
            for data in events.push(&chunk) {
                if reader.event(&data) == Flow::Enough {
                    // Dropping the response closes the connection: the server stops generating.
                    return Attempt::Done(Streamed::Events(reader));
                }
            }
        }
        if let Some(data) = events.finish()
            && reader.event(&data) == Flow::Enough
        {
            return Attempt::Done(Streamed::Events(reader));
        }
        match reader.unfinished() {
            // Like a cut-off body: a transport hiccup, worth another try.
            Some(why) => Attempt::Retry(LlmError::BadReply(redact(&why)), None),
            None => Attempt::Done(Streamed::Events(reader)),
        }
    }

    /// The body as text, read chunk by chunk and refused once it passes the cap, so a runaway
    /// reply never sits whole in memory.
    async fn read_capped<T>(&self, response: reqwest::Response) -> Result<String, Attempt<T>> {
        let cap = self.max_reply_bytes;
        match read_capped(response, usize::try_from(cap).unwrap_or(usize::MAX)).await {
            Ok(Ok(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(Err(e)) => Err(Self::unless_timed_out(
                self.transport_error(&e, "reading the reply"),
            )),
            Err(_) => Err(Attempt::Fail(self.too_large())),
        }
    }

    fn too_large(&self) -> LlmError {
        LlmError::BadReply(format!(
            "the reply is too large: more than {} bytes (llm.max_reply_bytes); \
             lower the output limit (llm.max_output_tokens) or raise llm.max_reply_bytes",
            self.max_reply_bytes
        ))
    }

    /// A transport error is retried as is, except a time-out: the same body would most likely
    /// run into the same limit again, so the caller re-asks differently (the budget wrapper
    /// lowers the output limit) instead of sending the identical request.
    fn unless_timed_out<T>(error: LlmError) -> Attempt<T> {
        match error {
            LlmError::Timeout { .. } => Attempt::Fail(error),
            other => Attempt::Retry(other, None),
        }
    }

    fn timed_out(&self) -> LlmError {
        LlmError::Timeout {
            seconds: self.retry.timeout.as_secs().max(1),
        }
    }

    fn transport_error(&self, error: &reqwest::Error, doing: &str) -> LlmError {
        if error.is_timeout() {
            return self.timed_out();
        }
        let message = format!("{doing} failed: {}", describe(error));
        LlmError::Connection(redact(&message))
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
        let redacted = redact(text.trim());
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
    fn the_api_key_joins_the_one_secret_set() {
        let key = "llm-http-test-key-5b1e07";
        HttpClient::new(
            Duration::from_secs(1),
            RetryPolicy::new(0),
            vec![key.into()],
        )
        .unwrap();
        let shown = redact(&format!("bad key {key}; also Bearer abc.def-ghi_jkl012"));
        assert_eq!(shown, "bad key ***; also Bearer ***");
    }

    #[test]
    fn the_client_builds_with_ring_and_bundled_roots() {
        let config = crate::http::tls_config().unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        HttpClient::new(Duration::from_secs(1), RetryPolicy::new(0), vec![]).unwrap();
    }
}
