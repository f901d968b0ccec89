//! Per-cycle budget: a wrapper that prices every call, keeps the totals for history and the
//! checklist footer, and refuses calls once a limit (tokens, money, wall time) is passed so the
//! cycle can stop cleanly with `budget_exhausted`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::Llm;
use super::meter::{Attempts, metered};
use super::types::{ChatRequest, ChatResponse, LlmError, TokenUsage};
use crate::config::{BudgetConfig, LlmConfig, MaxOutputTokens, Price};
use crate::history::entry::UsageTotals;

pub struct Budgeted {
    inner: Box<dyn Llm>,
    limits: BudgetConfig,
    max_output_tokens: MaxOutputTokens,
    prices: BTreeMap<String, Price>,
    configured_model: Option<String>,
    started: Instant,
    totals: Mutex<UsageTotals>,
    unpriced_models: Mutex<BTreeSet<String>>,
    /// Held for the whole call when a token or cost limit is set: parallel subtasks share the
    /// budget, and a limit is only checked exactly with no other call in flight.
    metered_turn: tokio::sync::Mutex<()>,
}

/// The price of `model`: an exact key, else the longest key the model name starts with
/// (`gpt-4o` prices `gpt-4o-2024-08-06`).
pub fn price_for<'a>(prices: &'a BTreeMap<String, Price>, model: &str) -> Option<&'a Price> {
    prices.get(model).or_else(|| {
        prices
            .iter()
            .filter(|(key, _)| model.starts_with(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, price)| price)
    })
}

pub fn cost_usd(price: &Price, usage: &TokenUsage) -> f64 {
    (usage.prompt_tokens as f64 * price.input_per_mtok
        + usage.completion_tokens as f64 * price.output_per_mtok)
        / 1_000_000.0
}

/// Usage of `calls` calls as the totals history entries carry.
pub fn usage_totals(usage: &TokenUsage, cost_usd: f64, calls: u64) -> UsageTotals {
    UsageTotals {
        calls,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.cached_tokens,
        cost_usd,
        ..UsageTotals::default()
    }
}

/// `attempts` added to `totals` (the history records calls as u64).
pub fn add_attempts(totals: &mut UsageTotals, attempts: &Attempts) {
    totals.calls = totals.calls.saturating_add(u64::from(attempts.calls));
    totals.wall_ms = totals.wall_ms.saturating_add(attempts.wall_ms);
    totals.wasted_calls = totals
        .wasted_calls
        .saturating_add(u64::from(attempts.wasted_calls));
    totals.wasted_ms = totals.wasted_ms.saturating_add(attempts.wasted_ms);
}

/// Lowest output limit a timed-out call is re-asked with; below it a reply is rarely usable.
const MIN_REASK_TOKENS: u32 = 64;

/// The request a timed-out call is re-asked with: half the output limit, so the body is never
/// the identical one that just ran out of time (a runaway generation is the usual cause).
fn after_timeout(request: &ChatRequest) -> Option<ChatRequest> {
    let limit = request.max_tokens?;
    let lower = limit / 2;
    (lower >= MIN_REASK_TOKENS).then(|| ChatRequest {
        max_tokens: Some(lower),
        ..request.clone()
    })
}

impl Budgeted {
    /// One call; a time-out is re-asked once with a lower output limit, never re-sent as is.
    /// Both attempts are metered by the caller's scope.
    async fn chat_reasking_a_timeout(
        &self,
        request: &ChatRequest,
    ) -> Result<ChatResponse, LlmError> {
        match self.inner.chat(request).await {
            Err(LlmError::Timeout { seconds }) => match after_timeout(request) {
                Some(lower) => {
                    tracing::warn!(purpose = %request.purpose, seconds,
                        max_tokens = lower.max_tokens, "LLM call timed out; re-asking once with a lower output limit");
                    self.inner.chat(&lower).await
                }
                None => Err(LlmError::Timeout { seconds }),
            },
            other => other,
        }
    }

    /// Starts the cycle's clock now.
    pub fn new(inner: Box<dyn Llm>, cfg: &LlmConfig) -> Self {
        Budgeted {
            inner,
            limits: cfg.budget.clone(),
            max_output_tokens: cfg.max_output_tokens,
            prices: cfg.prices.clone(),
            configured_model: cfg.model.clone(),
            started: Instant::now(),
            totals: Mutex::new(UsageTotals::default()),
            unpriced_models: Mutex::new(BTreeSet::new()),
            metered_turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Totals of every HTTP attempt so far, failed and retried ones included.
    pub fn usage(&self) -> UsageTotals {
        *self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Which limit is passed, if any, in words for the checklist and the log.
    pub fn exhausted(&self) -> Option<String> {
        let totals = self.usage();
        let tokens = totals.prompt_tokens + totals.completion_tokens;
        if let Some(max) = self.limits.max_tokens
            && tokens >= max
        {
            return Some(format!(
                "llm.budget.max_tokens {max} reached ({tokens} tokens used)"
            ));
        }
        if let Some(max) = self.limits.max_cost_usd
            && totals.cost_usd >= max
        {
            return Some(format!(
                "llm.budget.max_cost_usd {max} reached (${:.4} spent)",
                totals.cost_usd
            ));
        }
        if let Some(max) = self.limits.max_wall_seconds
            && self.elapsed() >= Duration::from_secs(max)
        {
            return Some(format!(
                "llm.budget.max_wall_seconds {max} reached ({}s since the cycle started)",
                self.elapsed().as_secs()
            ));
        }
        None
    }

    fn price(&self, model: &str) -> Option<Price> {
        let found = price_for(&self.prices, model).or_else(|| {
            self.configured_model
                .as_deref()
                .and_then(|m| price_for(&self.prices, m))
        });
        if found.is_none() {
            let mut warned = self
                .unpriced_models
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if warned.insert(model.to_string()) {
                tracing::warn!(
                    model,
                    "no price for this model in llm.prices; its calls are counted as costing $0"
                );
            }
        }
        found.cloned()
    }
}

#[async_trait]
impl Llm for Budgeted {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let spend_limited = self.limits.max_tokens.is_some() || self.limits.max_cost_usd.is_some();
        let _turn = match spend_limited {
            true => Some(self.metered_turn.lock().await),
            false => None,
        };
        if let Some(which) = self.exhausted() {
            tracing::warn!(purpose = %request.purpose, limit = %which, "LLM budget exhausted; refusing the call");
            return Err(LlmError::BudgetExhausted(which));
        }
        // Every request is bounded: runaway generations are what made weak models time out.
        let bounded;
        let request = if request.max_tokens.is_some() {
            request
        } else {
            let mut with_limit = request.clone();
            with_limit.max_tokens = Some(self.max_output_tokens.for_purpose(&request.purpose));
            bounded = with_limit;
            &bounded
        };
        let started = Instant::now();
        let call = self.chat_reasking_a_timeout(request);
        let limited = async {
            match self.limits.max_wall_seconds {
                Some(max) => {
                    let remaining = Duration::from_secs(max).saturating_sub(self.elapsed());
                    tokio::time::timeout(remaining, call).await.map_err(|_| {
                        LlmError::BudgetExhausted(format!(
                            "llm.budget.max_wall_seconds {max} reached during a call"
                        ))
                    })
                }
                None => Ok(call.await),
            }
        };
        let (outcome, mut attempts) = metered(limited).await;
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // A provider without HTTP (scripted), or an attempt the wall-time budget cut short, still
        // took a call and its time.
        if attempts.calls == 0 || outcome.is_err() {
            attempts.add(&Attempts {
                calls: 1,
                wall_ms: elapsed.saturating_sub(attempts.wall_ms),
                ..Attempts::default()
            });
        }
        let result = outcome.and_then(|inner| inner);
        let mut response = match result {
            Ok(response) => response,
            Err(error) => {
                let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
                add_attempts(&mut totals, &attempts.all_wasted());
                tracing::warn!(purpose = %request.purpose, calls = attempts.calls,
                    wall_ms = attempts.wall_ms, %error, "LLM call failed; its attempts are counted");
                return Err(error);
            }
        };
        let cost = self
            .price(&response.model)
            .map(|p| cost_usd(&p, &response.usage))
            .unwrap_or(0.0);
        response.cost_usd = cost;
        response.attempts = attempts;
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.add(&response.totals());
        tracing::debug!(
            purpose = %request.purpose,
            model = %response.model,
            attempts = attempts.calls,
            prompt_tokens = response.usage.prompt_tokens,
            completion_tokens = response.usage.completion_tokens,
            cost_usd = cost,
            "LLM call accounted"
        );
        Ok(response)
    }

    fn metered_usage(&self) -> Option<UsageTotals> {
        Some(self.usage())
    }

    fn structured_output(&self) -> Option<crate::config::StructuredOutput> {
        self.inner.structured_output()
    }
}

impl ChatResponse {
    /// Usage of this reply's attempts, as the history records it.
    pub fn totals(&self) -> UsageTotals {
        let mut totals = usage_totals(&self.usage, self.cost_usd, 0);
        add_attempts(&mut totals, &self.attempts);
        totals.calls = totals.calls.max(1);
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ScriptedLlm;

    fn scripted(steps: usize, prompt: u64, completion: u64) -> Box<dyn Llm> {
        let step = format!(
            "  - reply: ok\n    usage: {{ prompt_tokens: {prompt}, completion_tokens: {completion} }}\n"
        );
        Box::new(ScriptedLlm::from_yaml(&format!("steps:\n{}", step.repeat(steps))).unwrap())
    }

    #[test]
    fn prices_match_exactly_or_by_the_longest_prefix() {
        let mut prices = BTreeMap::new();
        prices.insert(
            "gpt-4o".to_string(),
            Price {
                input_per_mtok: 2.5,
                output_per_mtok: 10.0,
            },
        );
        prices.insert(
            "gpt-4o-mini".to_string(),
            Price {
                input_per_mtok: 0.15,
                output_per_mtok: 0.6,
            },
        );
        assert_eq!(
            price_for(&prices, "gpt-4o-mini-2024-07-18")
                .unwrap()
                .input_per_mtok,
            0.15
        );
        assert_eq!(
            price_for(&prices, "gpt-4o-2024-08-06")
                .unwrap()
                .input_per_mtok,
            2.5
        );
        assert!(price_for(&prices, "claude").is_none());
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: 0,
        };
        assert_eq!(cost_usd(&prices["gpt-4o"], &usage), 7.5);
    }

    #[tokio::test]
    async fn costs_are_recorded_and_the_token_limit_refuses_the_next_call() {
        let mut cfg = LlmConfig::default();
        cfg.budget.max_tokens = Some(2_000);
        cfg.prices.insert(
            "scripted".into(),
            Price {
                input_per_mtok: 1.0,
                output_per_mtok: 2.0,
            },
        );
        let llm = Budgeted::new(scripted(3, 900, 300), &cfg);
        let first = llm.chat(&ChatRequest::default()).await.unwrap();
        assert!(
            (first.cost_usd - 0.0015).abs() < 1e-12,
            "{}",
            first.cost_usd
        );
        llm.chat(&ChatRequest::default()).await.unwrap();
        let err = llm.chat(&ChatRequest::default()).await.unwrap_err();
        match err {
            LlmError::BudgetExhausted(which) => {
                assert!(which.contains("max_tokens 2000"), "{which}")
            }
            other => panic!("{other:?}"),
        }
        let totals = llm.usage();
        assert_eq!(
            (totals.calls, totals.prompt_tokens, totals.completion_tokens),
            (2, 1800, 600)
        );
        assert!((totals.cost_usd - 0.003).abs() < 1e-12);
    }

    #[tokio::test]
    async fn the_cost_limit_stops_calls_and_unknown_models_cost_nothing() {
        let mut cfg = LlmConfig::default();
        cfg.budget.max_cost_usd = Some(0.001);
        cfg.prices.insert(
            "scripted".into(),
            Price {
                input_per_mtok: 1000.0,
                output_per_mtok: 0.0,
            },
        );
        let llm = Budgeted::new(scripted(2, 10, 0), &cfg);
        llm.chat(&ChatRequest::default()).await.unwrap();
        assert!(
            matches!(llm.chat(&ChatRequest::default()).await, Err(LlmError::BudgetExhausted(w)) if w.contains("max_cost_usd"))
        );

        let unpriced = Budgeted::new(scripted(1, 10, 0), &LlmConfig::default());
        assert_eq!(
            unpriced
                .chat(&ChatRequest::default())
                .await
                .unwrap()
                .cost_usd,
            0.0
        );
    }

    #[tokio::test]
    async fn the_wall_time_limit_refuses_calls_after_the_deadline() {
        let mut cfg = LlmConfig::default();
        cfg.budget.max_wall_seconds = Some(0);
        let llm = Budgeted::new(scripted(1, 1, 1), &cfg);
        let err = llm.chat(&ChatRequest::default()).await.unwrap_err();
        assert!(err.to_string().contains("max_wall_seconds 0"), "{err}");
        assert_eq!(llm.usage().calls, 0);
    }
}
