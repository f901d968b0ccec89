//! octocrab's HTTP stack, replaced by our [`Api`]: every request octocrab builds (typed or raw)
//! is sent by [`Api::send`], so retries, back-off, rate limits, `Retry-After`, the same-origin
//! rule, the token and the response cap stay ours. octocrab's own client, retry and redirect
//! features are off (`default-features = false`), so there is one retry layer, not two.
//!
//! An error answer never reaches octocrab as a response: the service fails with the
//! [`ApiError`], which [`api_error`] takes back out of octocrab's error.

use crate::http::{Api, ApiError, Replay};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use octocrab::{AuthState, OctoBody, Octocrab, OctocrabBuilder};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

tokio::task_local! {
    /// What the caller is doing ("posting a comment on #3"), for the API layer's retry lines.
    static WHAT: String;
}

/// Runs `call` with `what` as the description of the requests it makes.
pub(super) async fn described<F: Future>(what: &str, call: F) -> F::Output {
    WHAT.scope(what.to_owned(), call).await
}

/// The tower service octocrab sends through.
#[derive(Clone)]
struct ApiService {
    api: Arc<Api>,
    replay: Replay,
}

type Answer = http::Response<Full<Bytes>>;

impl tower::Service<http::Request<OctoBody>> for ApiService {
    type Response = Answer;
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, ApiError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<OctoBody>) -> Self::Future {
        let api = self.api.clone();
        let replay = self.replay;
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body
                .collect()
                .await
                .map_err(|e| ApiError::Connection(format!("reading octocrab's request: {e}")))?
                .to_bytes();
            let body: Option<Value> = if bytes.is_empty() {
                None
            } else {
                Some(
                    serde_json::from_slice(&bytes)
                        .map_err(|e| ApiError::NotJson(format!("octocrab's request body: {e}")))?,
                )
            };
            // octocrab writes `route?` when a builder's parameters are all unset.
            let uri = parts.uri.to_string();
            let path = uri.strip_suffix('?').unwrap_or(&uri);
            let what = WHAT
                .try_with(Clone::clone)
                .unwrap_or_else(|_| format!("{} {}", parts.method, parts.uri.path()));
            let response = api
                .send(parts.method, path, body.as_ref(), replay, &what)
                .await?;
            let bytes = match response.body {
                Value::Null => Vec::new(),
                body => serde_json::to_vec(&body).unwrap_or_default(),
            };
            let mut answer = http::Response::new(Full::new(Bytes::from(bytes)));
            *answer.status_mut() = response.status;
            let mut headers = response.headers;
            // The body was parsed and written again: its framing headers no longer apply.
            for name in ["content-length", "content-encoding", "transfer-encoding"] {
                headers.remove(name);
            }
            *answer.headers_mut() = headers;
            Ok(answer)
        })
    }
}

/// An octocrab whose every request goes through `api`; writes are repeated after an uncertain
/// failure only when `replay` is [`Replay::Safe`]. It must be built inside the Tokio runtime
/// (octocrab spawns the worker of its request buffer).
pub(super) fn octocrab(api: Arc<Api>, replay: Replay) -> Octocrab {
    match OctocrabBuilder::new_empty()
        .with_service(ApiService { api, replay })
        .with_auth(AuthState::None)
        .build()
    {
        Ok(octocrab) => octocrab,
        Err(never) => match never {},
    }
}

/// The API layer's error inside an octocrab error; an answer octocrab could not read into its
/// model becomes [`ApiError::Shape`].
pub(super) fn api_error(error: octocrab::Error) -> ApiError {
    match error {
        octocrab::Error::Service { source, .. } => match source.downcast::<ApiError>() {
            Ok(error) => *error,
            Err(other) => ApiError::Connection(other.to_string()),
        },
        octocrab::Error::Serde { source, .. } => ApiError::Shape(source.to_string()),
        octocrab::Error::Json { source, .. } => {
            ApiError::Shape(format!("{} at `{}`", source.inner(), source.path()))
        }
        // octocrab's messages end in "Found at <backtrace>": the first line says it.
        other => ApiError::Connection(
            other
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
    }
}
