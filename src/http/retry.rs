//! How persistent an HTTP client is ([`super::Api`] for the forges, `llm::http::HttpClient` for
//! the model): attempts, jittered exponential back-off, and how long it waits for a rate limit
//! (GitHub's `x-ratelimit-*` and secondary limits, GitLab's `RateLimit-*`, and `Retry-After` from
//! anyone).

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Back-off before the first retry of a 5xx or connection error; doubles each retry.
    pub base_delay: Duration,
    /// The longest single wait: back-off never grows past it; a forge call whose rate limit
    /// resets later fails as rate-limited, an LLM call waits this long and tries again.
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
    /// The default policy with `retries` retries after the first attempt (`llm.max_retries`).
    pub fn new(retries: u32) -> Self {
        RetryPolicy {
            max_attempts: retries.saturating_add(1),
            ..RetryPolicy::default()
        }
    }

    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(16)))
            .min(self.max_rate_limit_wait);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        // Half fixed, half jitter: never zero, and concurrent runs spread out.
        Duration::from_millis(millis / 2 + fastrand::u64(0..=millis / 2))
    }

    /// How long a refused answer asks us to wait, or `None` when it is not a rate limit.
    pub fn rate_limit_wait(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        text: &str,
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
        if let Some(wait) = header("retry-after").and_then(retry_after) {
            return Some(wait);
        }
        let exhausted = ["x-ratelimit-remaining", "ratelimit-remaining"]
            .iter()
            .any(|name| header(name) == Some("0"));
        if exhausted {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let reset = ["x-ratelimit-reset", "ratelimit-reset"]
                .iter()
                .find_map(|name| header(name).and_then(|v| v.parse::<u64>().ok()))
                .unwrap_or(now + 60);
            // One extra second: the reset epoch is rounded down.
            return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
        }
        let lower = text.to_ascii_lowercase();
        if status == StatusCode::TOO_MANY_REQUESTS
            || lower.contains("secondary rate limit")
            || lower.contains("rate limit exceeded")
        {
            // GitHub asks for at least a minute after a secondary limit without Retry-After;
            // the growing back-off keeps us under the cap in tests and short runs.
            return Some(
                self.backoff(retry + 1)
                    .max(Duration::from_secs(1))
                    .min(self.max_rate_limit_wait),
            );
        }
        None
    }
}

/// `Retry-After` as seconds (fractions too, as some LLM gateways send them) or as an HTTP date.
pub fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secondary_limit_without_retry_after_still_waits() {
        let policy = RetryPolicy::default();
        let wait = policy.rate_limit_wait(
            StatusCode::FORBIDDEN,
            &HeaderMap::new(),
            "You have exceeded a secondary rate limit",
            0,
        );
        assert!(wait.is_some_and(|w| w >= Duration::from_secs(1)));
        assert!(
            policy
                .rate_limit_wait(
                    StatusCode::FORBIDDEN,
                    &HeaderMap::new(),
                    "Resource not accessible by integration",
                    0
                )
                .is_none()
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        let later = SystemTime::now() + Duration::from_secs(30);
        let wait = retry_after(&httpdate::fmt_http_date(later)).unwrap();
        assert!(
            wait > Duration::from_secs(27) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon"), None);
        assert_eq!(retry_after("-1"), None);
        assert_eq!(retry_after("NaN"), None);
        assert_eq!(retry_after("1e300"), None);
    }

    #[test]
    fn backoff_is_jittered_below_the_exponential_ceiling_and_the_cap() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_rate_limit_wait: Duration::from_millis(350),
            ..RetryPolicy::new(5)
        };
        assert_eq!(policy.max_attempts, 6);
        for _ in 0..200 {
            assert!(policy.backoff(0) <= Duration::from_millis(100));
            assert!(policy.backoff(1) <= Duration::from_millis(200));
            assert!(policy.backoff(10) <= Duration::from_millis(350));
        }
    }
}
