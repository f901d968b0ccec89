//! Per-cycle budget: a wrapper that prices every call, keeps the totals for history and the
//! checklist footer, and refuses calls once a limit (tokens, money, wall time) is passed so the
//! cycle can stop cleanly with `budget_exhausted`.
//!
//! Calls run side by side under a token or cost limit: instead of a lock held across the call,
//! each call reserves its worst case (the request's size at 4 characters a token, plus its
//! output limit, priced at the configured model's price) and settles it with the real usage
//! when it returns (a failed call releases its reservation and adds the attempts it took; no
//! tokens are known for it). A call is refused with `budget_exhausted` when the spend has
//! reached a limit, or when other calls are in flight and spent + their reservations + its own
//! would pass the limit. A call with nothing else in flight is only checked against the spend,
//! as a sequential run always was, so the bound is the sequential one: the run ends at most one
//! call's usage past a limit, and that call ran alone. Calls that overlapped never pass it
//! together unless a reply used more than its reservation (a prompt the estimate undercounted,
//! a provider that wrote past the output limit, or a reply from a model priced above the
//! configured one).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::Llm;
use super::meter::{Attempts, metered};
use super::types::{ChatRequest, ChatResponse, LlmError, TokenUsage};
use crate::config::{BudgetConfig, LlmConfig, MaxOutputTokens, Price};
use crate::history::entry::UsageTotals;
use crate::history::ledger::{self, ThreadCap};

pub struct Budgeted {
    inner: Box<dyn Llm>,
    limits: BudgetConfig,
    max_output_tokens: MaxOutputTokens,
    prices: BTreeMap<String, Price>,
    configured_model: Option<String>,
    started: Instant,
    /// Spent and reserved under one lock, so a call's check and reservation are one step.
    ledger: Mutex<Ledger>,
    unpriced_models: Mutex<BTreeSet<String>>,
    /// The thread's cap over all its runs, when one is set (see [`Budgeted::with_thread_cap`]).
    thread: Option<ThreadLimit>,
}

/// The thread's ledger as this run sees it: what this run may spend of the thread's cap.
#[derive(Debug, Clone, Copy)]
struct ThreadLimit {
    cap: ThreadCap,
    spent_before: UsageTotals,
    /// What is left of the cap for this run (its share, in a fan-out wave).
    allowance: ThreadCap,
    share: u32,
}

impl ThreadLimit {
    fn words(&self, spent: &UsageTotals, which: &str) -> String {
        let mut total = self.spent_before;
        total.add(spent);
        let shared = if self.share > 1 {
            format!(
                "; this job's share of what was left is 1/{} (its wave's subtask jobs run side by side)",
                self.share
            )
        } else {
            String::new()
        };
        format!(
            "the thread's budget ({}, llm.budget.per_thread_* or `/budget`) {which}: {} over all its runs{shared}",
            ledger::cap_words(self.cap.usd, self.cap.tokens),
            ledger::ThreadCap {
                usd: self.cap.usd.map(|_| total.cost_usd),
                tokens: self.cap.tokens.map(|_| ledger::tokens(&total)),
            }
            .spent_words()
        )
    }
}

#[derive(Debug, Default)]
struct Ledger {
    spent: UsageTotals,
    /// Worst cases of the calls in flight.
    reserved: Worst,
}

/// What a call may use at most: its prompt and its whole output limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Worst {
    calls: u32,
    tokens: u64,
    cost_usd: f64,
}

impl Worst {
    fn add(&mut self, other: Worst) {
        self.calls = self.calls.saturating_add(other.calls);
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost_usd += other.cost_usd;
    }

    fn remove(&mut self, other: Worst) {
        self.calls = self.calls.saturating_sub(other.calls);
        self.tokens = self.tokens.saturating_sub(other.tokens);
        self.cost_usd = (self.cost_usd - other.cost_usd).max(0.0);
        if self.calls == 0 {
            // No float dust left behind once nothing is in flight.
            *self = Worst::default();
        }
    }
}

/// A call's reservation; released when dropped (a call cancelled by the wall-time limit or a
/// stopping run), settled with the real usage by [`Reservation::settle`].
struct Reservation<'a> {
    ledger: &'a Mutex<Ledger>,
    worst: Worst,
}

impl Reservation<'_> {
    /// Releases the reservation and adds what the call really used, in one step.
    fn settle(mut self, used: &UsageTotals) {
        let mut ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        ledger.spent.add(used);
        ledger.reserved.remove(self.worst);
        self.worst = Worst::default();
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.worst.calls > 0 {
            let mut ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
            ledger.reserved.remove(self.worst);
        }
    }
}

/// Rough size of a request in tokens (4 characters a token, as the scripted provider counts):
/// every text the provider sends, tool definitions and the reply schema included.
fn prompt_estimate(request: &ChatRequest) -> u64 {
    let mut chars = request.system.chars().count();
    for message in &request.messages {
        chars += message.content.chars().count();
        for call in &message.tool_calls {
            chars += call.name.len() + call.arguments.to_string().len();
        }
    }
    for tool in &request.tools {
        chars += tool.name.len() + tool.description.len() + tool.input_schema.to_string().len();
    }
    if let Some(schema) = &request.response_schema {
        chars += schema.schema.to_string().len();
    }
    chars += request.prefill.as_deref().map_or(0, str::len);
    (chars as u64).div_ceil(4)
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
            ledger: Mutex::new(Ledger::default()),
            unpriced_models: Mutex::new(BTreeSet::new()),
            thread: None,
        }
    }

    /// Caps this run's calls by the thread's cap: `spent_before` is what the thread's history
    /// records for every earlier run; `share` runs that start together without seeing each
    /// other's spend (a fan-out wave's subtask jobs) split what is left evenly, so together they
    /// pass the cap by at most the calls each had in flight when it reached its share.
    pub fn with_thread_cap(
        mut self,
        cap: ThreadCap,
        spent_before: UsageTotals,
        share: u32,
    ) -> Self {
        if cap.is_set() {
            self.thread = Some(ThreadLimit {
                cap,
                spent_before,
                allowance: cap.allowance(&spent_before, share),
                share: share.max(1),
            });
        }
        self
    }

    /// Totals of every HTTP attempt so far, failed and retried ones included.
    pub fn usage(&self) -> UsageTotals {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner()).spent
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Which limit is passed, if any, in words for the checklist and the log.
    pub fn exhausted(&self) -> Option<String> {
        self.spent_past_a_limit(&self.usage())
    }

    fn spent_past_a_limit(&self, totals: &UsageTotals) -> Option<String> {
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
        if let Some(thread) = &self.thread
            && thread.allowance.reached(totals).is_some()
        {
            return Some(thread.words(totals, "is reached"));
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

    /// The most `request` (already bounded) may use, priced at the configured model's price.
    fn worst_case(&self, request: &ChatRequest) -> Worst {
        let usage = TokenUsage {
            prompt_tokens: prompt_estimate(request),
            completion_tokens: u64::from(request.max_tokens.unwrap_or_default()),
            cached_tokens: 0,
        };
        let cost_usd = self
            .configured_model
            .as_deref()
            .and_then(|model| price_for(&self.prices, model))
            .map_or(0.0, |price| cost_usd(price, &usage));
        Worst {
            calls: 1,
            tokens: usage.prompt_tokens + usage.completion_tokens,
            cost_usd,
        }
    }

    /// Reserves `worst` for a call, or says which limit refuses it.
    fn reserve(&self, worst: Worst) -> Result<Reservation<'_>, String> {
        let mut ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(which) = self.spent_past_a_limit(&ledger.spent) {
            return Err(which);
        }
        // Alone, a call is checked against the spend only (above), as sequential calls are.
        if ledger.reserved.calls > 0 {
            let spent_tokens = ledger.spent.prompt_tokens + ledger.spent.completion_tokens;
            if let Some(max) = self.limits.max_tokens
                && spent_tokens + ledger.reserved.tokens + worst.tokens > max
            {
                return Err(format!(
                    "llm.budget.max_tokens {max} would be passed: {spent_tokens} tokens used, \
                     {} reserved by {} calls in flight, this call may use {}",
                    ledger.reserved.tokens, ledger.reserved.calls, worst.tokens
                ));
            }
            if let Some(max) = self.limits.max_cost_usd
                && ledger.spent.cost_usd + ledger.reserved.cost_usd + worst.cost_usd > max
            {
                return Err(format!(
                    "llm.budget.max_cost_usd {max} would be passed: ${:.4} spent, ${:.4} \
                     reserved by {} calls in flight, this call may cost ${:.4}",
                    ledger.spent.cost_usd,
                    ledger.reserved.cost_usd,
                    ledger.reserved.calls,
                    worst.cost_usd
                ));
            }
            if let Some(thread) = &self.thread {
                let mut with_flight = ledger.spent;
                with_flight.cost_usd += ledger.reserved.cost_usd + worst.cost_usd;
                with_flight.prompt_tokens = with_flight
                    .prompt_tokens
                    .saturating_add(ledger.reserved.tokens + worst.tokens);
                let over_usd = thread
                    .allowance
                    .usd
                    .is_some_and(|cap| with_flight.cost_usd > cap);
                let over_tokens = thread
                    .allowance
                    .tokens
                    .is_some_and(|cap| ledger::tokens(&with_flight) > cap);
                if over_usd || over_tokens {
                    return Err(thread.words(
                        &ledger.spent,
                        &format!(
                            "would be passed by this call and the {} in flight",
                            ledger.reserved.calls
                        ),
                    ));
                }
            }
        }
        ledger.reserved.add(worst);
        Ok(Reservation {
            ledger: &self.ledger,
            worst,
        })
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
                    "no price for this model in llm.prices; its calls' cost is unknown (recorded as unpriced, counted as $0)"
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
        let reservation = match self.reserve(self.worst_case(request)) {
            Ok(reservation) => reservation,
            Err(which) => {
                tracing::warn!(purpose = %request.purpose, limit = %which, "LLM budget exhausted; refusing the call");
                return Err(LlmError::BudgetExhausted(which));
            }
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
                let mut used = UsageTotals::default();
                add_attempts(&mut used, &attempts.all_wasted());
                reservation.settle(&used);
                tracing::warn!(purpose = %request.purpose, calls = attempts.calls,
                    wall_ms = attempts.wall_ms, %error, "LLM call failed; its attempts are counted");
                return Err(error);
            }
        };
        let price = self.price(&response.model);
        let cost = price
            .as_ref()
            .map(|p| cost_usd(p, &response.usage))
            .unwrap_or(0.0);
        response.cost_usd = cost;
        response.unpriced = price.is_none();
        response.attempts = attempts;
        reservation.settle(&response.totals());
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
        if self.unpriced {
            totals.unpriced_calls = totals.calls;
        }
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

    /// A model whose calls each wait for the reply the test sends them, in call order.
    struct Gated {
        replies: Mutex<Vec<tokio::sync::oneshot::Receiver<Result<ChatResponse, LlmError>>>>,
    }

    #[async_trait]
    impl Llm for Gated {
        fn describe(&self) -> String {
            "gated".into()
        }

        async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let reply = self.replies.lock().unwrap().remove(0);
            reply.await.expect("the test answers every call")
        }
    }

    type Answer = tokio::sync::oneshot::Sender<Result<ChatResponse, LlmError>>;

    fn gated(calls: usize, cap_tokens: u64) -> (std::sync::Arc<Budgeted>, Vec<Answer>) {
        let (answers, replies) = (0..calls).map(|_| tokio::sync::oneshot::channel()).unzip();
        let mut cfg = LlmConfig::default();
        cfg.budget.max_tokens = Some(cap_tokens);
        let inner = Box::new(Gated {
            replies: Mutex::new(replies),
        });
        (std::sync::Arc::new(Budgeted::new(inner, &cfg)), answers)
    }

    /// An empty request that may write 1000 tokens: its worst case is 1000 tokens.
    fn thousand() -> ChatRequest {
        ChatRequest {
            max_tokens: Some(1000),
            ..ChatRequest::default()
        }
    }

    fn reply(prompt: u64, completion: u64) -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse {
            text: Some("ok".into()),
            tool_calls: vec![],
            usage: TokenUsage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                cached_tokens: 0,
            },
            finish_reason: crate::llm::types::FinishReason::Stop,
            model: "gated".into(),
            cost_usd: 0.0,
            attempts: Attempts::default(),
            unpriced: false,
        })
    }

    fn in_flight(llm: &Budgeted) -> (u32, u64) {
        let ledger = llm.ledger.lock().unwrap();
        (ledger.reserved.calls, ledger.reserved.tokens)
    }

    /// Starts a call and waits until it has reserved (its inner call is waiting for a reply).
    async fn start(
        llm: &std::sync::Arc<Budgeted>,
        expect_in_flight: u32,
    ) -> tokio::task::JoinHandle<Result<ChatResponse, LlmError>> {
        let running = llm.clone();
        let call = tokio::spawn(async move { running.chat(&thousand()).await });
        for _ in 0..100_000 {
            if in_flight(llm).0 >= expect_in_flight {
                return call;
            }
            tokio::task::yield_now().await;
        }
        panic!("the call never reserved: {:?}", call.await);
    }

    #[tokio::test]
    async fn calls_that_fit_together_run_together_and_one_that_does_not_is_refused() {
        let (llm, mut answers) = gated(3, 2500);
        let first = start(&llm, 1).await;
        let second = start(&llm, 2).await;
        assert_eq!(in_flight(&llm), (2, 2000), "both fit: 2000 of 2500");

        // 0 used + 2000 reserved + 1000 > 2500: refused while the two are in flight.
        let err = llm.chat(&thousand()).await.unwrap_err();
        match err {
            LlmError::BudgetExhausted(which) => assert!(
                which.contains("max_tokens 2500 would be passed")
                    && which.contains("2000 reserved by 2 calls in flight"),
                "{which}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(llm.usage().calls, 0, "a refused call is no call");

        // The first settles below its reservation: 100 used + 1000 reserved + 1000 fits.
        answers.remove(0).send(reply(60, 40)).unwrap();
        first.await.unwrap().unwrap();
        assert_eq!(in_flight(&llm), (1, 1000));
        let third = start(&llm, 2).await;
        assert_eq!(in_flight(&llm), (2, 2000));

        answers.remove(0).send(reply(500, 500)).unwrap();
        answers.remove(0).send(reply(10, 10)).unwrap();
        second.await.unwrap().unwrap();
        third.await.unwrap().unwrap();
        assert_eq!(in_flight(&llm), (0, 0));
        let spent = llm.usage();
        assert_eq!(
            (spent.calls, spent.prompt_tokens, spent.completion_tokens),
            (3, 570, 550)
        );
    }

    #[tokio::test]
    async fn a_failed_call_releases_its_reservation_and_counts_its_attempt() {
        let (llm, mut answers) = gated(3, 2500);
        let failing = start(&llm, 1).await;
        let other = start(&llm, 2).await;
        assert!(matches!(
            llm.chat(&thousand()).await,
            Err(LlmError::BudgetExhausted(_))
        ));
        answers
            .remove(0)
            .send(Err(LlmError::Http {
                status: 400,
                message: "bad request".into(),
            }))
            .unwrap();
        assert!(matches!(
            failing.await.unwrap(),
            Err(LlmError::Http { status: 400, .. })
        ));
        assert_eq!(
            in_flight(&llm),
            (1, 1000),
            "the failed call's reservation is released"
        );
        let spent = llm.usage();
        assert_eq!(
            (spent.calls, spent.prompt_tokens, spent.completion_tokens),
            (1, 0, 0),
            "no tokens are known for a failed call; its attempt is counted"
        );
        // What the failed call held is free again: a call that did not fit now does.
        let third = start(&llm, 2).await;
        answers.remove(0).send(reply(1, 1)).unwrap();
        answers.remove(0).send(reply(1, 1)).unwrap();
        other.await.unwrap().unwrap();
        third.await.unwrap().unwrap();
        assert_eq!(in_flight(&llm), (0, 0));
        assert_eq!(llm.usage().calls, 3);
    }

    /// The thread's cap counts the spend of earlier runs (from the history) and, while calls
    /// are in flight, their reservations: the run passes the cap by at most what its calls in
    /// flight reserved, and a wave's job only by its share.
    #[tokio::test]
    async fn the_threads_cap_counts_earlier_runs_and_the_calls_in_flight() {
        let (answers, replies): (Vec<Answer>, Vec<_>) =
            (0..3).map(|_| tokio::sync::oneshot::channel()).unzip();
        let before = UsageTotals {
            calls: 4,
            prompt_tokens: 500,
            ..UsageTotals::default()
        };
        let cap = ThreadCap {
            usd: None,
            tokens: Some(2500),
        };
        let llm = std::sync::Arc::new(
            Budgeted::new(
                Box::new(Gated {
                    replies: Mutex::new(replies),
                }),
                &LlmConfig::default(),
            )
            .with_thread_cap(cap, before, 1),
        );
        let _first = start(&llm, 1).await;
        let _second = start(&llm, 2).await;
        // 500 earlier + 2000 reserved + 1000 > 2500.
        let err = llm.chat(&thousand()).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::BudgetExhausted(w)
                if w.contains("thread's budget (2500 tokens") && w.contains("would be passed")),
            "{err}"
        );
        drop(answers);

        // Half of the 2000 left for a job of a wave of two: one call, then refused.
        let (mut answers, replies): (Vec<Answer>, Vec<_>) =
            (0..2).map(|_| tokio::sync::oneshot::channel()).unzip();
        let llm = std::sync::Arc::new(
            Budgeted::new(
                Box::new(Gated {
                    replies: Mutex::new(replies),
                }),
                &LlmConfig::default(),
            )
            .with_thread_cap(cap, before, 2),
        );
        let first = start(&llm, 1).await;
        answers.remove(0).send(reply(1000, 0)).unwrap();
        first.await.unwrap().unwrap();
        let err = llm.chat(&thousand()).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::BudgetExhausted(w) if w.contains("is reached") && w.contains("1/2")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_cost_limit_reserves_the_worst_case_at_the_configured_models_price() {
        let (_answers, replies): (Vec<Answer>, Vec<_>) =
            (0..1).map(|_| tokio::sync::oneshot::channel()).unzip();
        let mut cfg = LlmConfig {
            model: Some("gated".into()),
            ..LlmConfig::default()
        };
        cfg.budget.max_cost_usd = Some(0.015);
        cfg.prices.insert(
            "gated".into(),
            Price {
                input_per_mtok: 0.0,
                output_per_mtok: 10.0,
            },
        );
        let llm = std::sync::Arc::new(Budgeted::new(
            Box::new(Gated {
                replies: Mutex::new(replies),
            }),
            &cfg,
        ));
        // 1000 output tokens at $10 a million: $0.01 reserved; a second $0.01 passes $0.015.
        let _first = start(&llm, 1).await;
        let err = llm.chat(&thousand()).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::BudgetExhausted(w) if w.contains("max_cost_usd 0.015 would be passed")),
            "{err}"
        );
    }
}
