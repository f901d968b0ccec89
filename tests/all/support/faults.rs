//! Scripted failures for the forge fakes: "answer the next N matching requests with X".

use std::time::Duration;

use serde_json::{Value, json};

use super::server::{FakeRequest, FakeResponse};

/// What "another run" does to a file when a test moves a branch behind Replan's back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConcurrentChange {
    Write(String),
    Append(String),
}

impl ConcurrentChange {
    /// The file's new content, given its current content (if any).
    pub fn apply(&self, current: Option<&str>) -> String {
        match self {
            ConcurrentChange::Write(content) => content.clone(),
            ConcurrentChange::Append(text) => format!("{}{text}", current.unwrap_or_default()),
        }
    }
}

/// A failure to inject, matched by method and path prefix; after `times` matching
/// requests it is used up and the fake behaves normally again.
#[derive(Debug, Clone)]
pub struct Fault {
    /// `None` matches any method.
    method: Option<String>,
    path_prefix: String,
    times: usize,
    /// `None`: answer normally, only after `delay`.
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Value,
    delay: Option<Duration>,
    /// Handle the request first (its effect takes place), then answer with the fault.
    after_effect: bool,
}

impl Fault {
    /// Answer `status` once to `method` (`"*"` for any) on paths starting with `path_prefix`.
    pub fn new(method: &str, path_prefix: &str, status: u16) -> Self {
        Fault {
            method: (method != "*").then(|| method.to_ascii_uppercase()),
            path_prefix: path_prefix.to_string(),
            times: 1,
            status: Some(status),
            headers: Vec::new(),
            body: json!({ "message": default_message(status) }),
            delay: None,
            after_effect: false,
        }
    }

    /// The request takes effect (the comment is created, the pull request opened), and then
    /// the answer is lost to `status`: what a proxy's 502 after a slow write looks like.
    pub fn after_effect(method: &str, path_prefix: &str, status: u16) -> Self {
        let mut fault = Fault::new(method, path_prefix, status);
        fault.after_effect = true;
        fault
    }

    /// Answer normally, with an extra header (e.g. a `link` to another origin).
    pub fn extra_header(method: &str, path_prefix: &str, name: &str, value: &str) -> Self {
        let mut fault = Fault::new(method, path_prefix, 200).header(name, value);
        fault.status = None;
        fault
    }

    /// Answer normally, but only after `delay` (a slow server, for time-outs).
    pub fn slow(method: &str, path_prefix: &str, delay: Duration) -> Self {
        let mut fault = Fault::new(method, path_prefix, 200);
        fault.status = None;
        fault.delay = Some(delay);
        fault
    }

    pub fn server_error(method: &str, path_prefix: &str) -> Self {
        Fault::new(method, path_prefix, 500)
    }

    pub fn bad_gateway(method: &str, path_prefix: &str) -> Self {
        Fault::new(method, path_prefix, 502)
    }

    /// GitHub's primary rate limit: 403 with `x-ratelimit-remaining: 0` and the reset epoch.
    pub fn github_rate_limit(method: &str, path_prefix: &str, reset_epoch_seconds: u64) -> Self {
        Fault::new(method, path_prefix, 403)
            .header("x-ratelimit-limit", "5000")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-used", "5000")
            .header("x-ratelimit-reset", &reset_epoch_seconds.to_string())
            .header("x-ratelimit-resource", "core")
            .body(json!({
                "message": "API rate limit exceeded for installation ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
            }))
    }

    /// GitHub's secondary rate limit: 403 with `retry-after`.
    pub fn github_secondary_rate_limit(
        method: &str,
        path_prefix: &str,
        retry_after_seconds: u64,
    ) -> Self {
        Fault::new(method, path_prefix, 403)
            .header("retry-after", &retry_after_seconds.to_string())
            .body(json!({
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
            }))
    }

    /// 429 with `Retry-After` (GitLab's and most APIs' way of saying "slow down").
    pub fn too_many_requests(method: &str, path_prefix: &str, retry_after_seconds: u64) -> Self {
        Fault::new(method, path_prefix, 429)
            .header("retry-after", &retry_after_seconds.to_string())
            .body(json!({ "message": "429 Too Many Requests" }))
    }

    /// Apply to this many matching requests (default 1).
    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: Value) -> Self {
        self.body = body;
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    fn matches(&self, request: &FakeRequest) -> bool {
        self.times > 0
            && self
                .method
                .as_deref()
                .is_none_or(|method| method == request.method)
            && request.path.starts_with(&self.path_prefix)
    }
}

/// What a matched fault asks the fake to do.
pub enum FaultOutcome {
    /// Answer with this response and do nothing else.
    Respond(FakeResponse),
    /// Handle the request normally, then wait this long before answering, with extra headers.
    Handle(Duration, Vec<(String, String)>),
    /// Handle the request normally (it takes effect), then answer with this response instead.
    AfterEffect(FakeResponse),
}

/// The fake's answer to a request given the fault it matched: `handle` is the normal handling.
pub fn answer_with(
    outcome: Option<FaultOutcome>,
    handle: impl FnOnce() -> FakeResponse,
) -> FakeResponse {
    match outcome {
        None => handle(),
        Some(FaultOutcome::Respond(response)) => response,
        Some(FaultOutcome::AfterEffect(response)) => {
            handle();
            response
        }
        Some(FaultOutcome::Handle(wait, headers)) => {
            let mut response = handle();
            if !wait.is_zero() {
                response.delay = Some(wait);
            }
            response.headers.extend(headers);
            response
        }
    }
}

/// The queue of pending faults; the first matching fault wins.
#[derive(Debug, Default)]
pub struct FaultQueue {
    faults: Vec<Fault>,
}

impl FaultQueue {
    pub fn push(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    pub fn clear(&mut self) {
        self.faults.clear();
    }

    pub fn pending(&self) -> usize {
        self.faults.iter().map(|fault| fault.times).sum()
    }

    pub fn take(&mut self, request: &FakeRequest) -> Option<FaultOutcome> {
        let index = self
            .faults
            .iter()
            .position(|fault| fault.matches(request))?;
        let fault = &mut self.faults[index];
        fault.times -= 1;
        let outcome = match fault.status {
            Some(status) => {
                let mut response = FakeResponse::json(status, &fault.body);
                response.headers.extend(fault.headers.iter().cloned());
                response.delay = fault.delay;
                if fault.after_effect {
                    FaultOutcome::AfterEffect(response)
                } else {
                    FaultOutcome::Respond(response)
                }
            }
            None => FaultOutcome::Handle(fault.delay.unwrap_or_default(), fault.headers.clone()),
        };
        if fault.times == 0 {
            self.faults.remove(index);
        }
        Some(outcome)
    }
}

fn default_message(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Bad credentials",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Validation Failed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Injected fault",
    }
}
