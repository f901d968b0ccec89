//! A scripted LLM on 127.0.0.1 (OpenAI wire format) for the benchmark: zero latency, or a fixed
//! latency per answer to see which of the cycle's work the model's time hides.
//!
//! The test suite's `support::llm_server` hands out each scenario step once and scans every
//! unused step per request; over a 100-subtask cycle that scan costs more than the cycle itself.
//! Here a step answers every request it matches (first match wins, like `replan demo`), so the
//! server's own time stays in the microseconds. Every request is recorded with its arrival time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use replan::llm::scenario::{Scenario, Step, Subject};
use serde_json::{Value, json};

use crate::support::{FakeResponse, TestServer};

/// A reply decided from the prompt texts when no static step fits (e.g. a tool call naming the
/// subtask the prompt asks for).
pub type Dynamic = Arc<dyn Fn(&[String]) -> Option<Step> + Send + Sync>;

#[derive(Clone)]
pub struct Recorded {
    pub at: Instant,
    pub body: Value,
    /// Characters of the scripted reply (text and tool-call arguments).
    pub reply_chars: usize,
}

#[derive(Default)]
struct Log {
    requests: Vec<Recorded>,
    unmatched: Vec<String>,
    handler_time: Duration,
}

pub struct ScriptedLlm {
    server: TestServer,
    log: Arc<Mutex<Log>>,
    latency: Duration,
}

impl ScriptedLlm {
    pub fn start(scenario: Scenario, dynamic: Option<Dynamic>) -> Self {
        Self::answering_after(Duration::ZERO, scenario, dynamic)
    }

    /// Each answer is sent `latency` after its request arrived (the server's one thread sleeps:
    /// the bench's calls come one at a time); the latency counts as the server's time in
    /// [`ScriptedLlm::take`].
    pub fn answering_after(
        latency: Duration,
        scenario: Scenario,
        dynamic: Option<Dynamic>,
    ) -> Self {
        Self::serving(latency, false, scenario, dynamic)
    }

    /// Each answer is sent `latency` after its request arrived, by the server's timer, so calls
    /// made at the same time wait at the same time (parallel subtasks); a fixed latency of
    /// hundreds of milliseconds makes the timer's millisecond rounding irrelevant.
    pub fn answering_concurrently_after(
        latency: Duration,
        scenario: Scenario,
        dynamic: Option<Dynamic>,
    ) -> Self {
        Self::serving(latency, true, scenario, dynamic)
    }

    fn serving(
        latency: Duration,
        concurrent: bool,
        scenario: Scenario,
        dynamic: Option<Dynamic>,
    ) -> Self {
        let log = Arc::new(Mutex::new(Log::default()));
        let seen = log.clone();
        let steps = scenario.steps;
        let server = TestServer::start(Arc::new(move |request| {
            let start = Instant::now();
            let body: Value = request.json().unwrap_or(Value::Null);
            let texts = prompt_texts(&body);
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let subject = Subject {
                purpose: None,
                texts: &refs,
            };
            let step = steps
                .iter()
                .find(|s| s.when.as_ref().is_none_or(|w| w.matches(&subject)))
                .cloned()
                .or_else(|| dynamic.as_ref().and_then(|d| d(&texts)));
            let reply_chars = step.as_ref().map_or(0, reply_chars);
            let mut response = match &step {
                Some(step) => FakeResponse::json(200, &completion(&texts, step)),
                None => FakeResponse::json(
                    400,
                    &json!({"error": {"message": "no scripted step matches"}}),
                ),
            };
            let mut log = seen.lock().unwrap_or_else(|e| e.into_inner());
            if step.is_none() {
                log.unmatched.push(texts.join("\n---\n"));
            }
            log.requests.push(Recorded {
                at: start,
                body,
                reply_chars,
            });
            drop(log);
            // Slept here, not by the server's timer (which rounds up to its millisecond ticks),
            // and measured, so the time subtracted is the time the answer really took.
            if concurrent {
                response.delay = Some(latency.saturating_sub(start.elapsed()));
            } else if !latency.is_zero() {
                std::thread::sleep(latency.saturating_sub(start.elapsed()));
            }
            seen.lock().unwrap_or_else(|e| e.into_inner()).handler_time += start.elapsed();
            response
        }));
        ScriptedLlm {
            server,
            log,
            latency,
        }
    }

    /// How long each answer takes.
    pub fn latency(&self) -> Duration {
        self.latency
    }

    /// Base URL for OpenAI-compatible clients.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// Requests, prompts that matched no step, and the time spent answering, since the last take.
    pub fn take(&self) -> (Vec<Recorded>, Vec<String>, Duration) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *log);
        (taken.requests, taken.unmatched, taken.handler_time)
    }

    pub fn first_request_at(&self) -> Option<Instant> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.requests.first().map(|r| r.at)
    }
}

/// Usage is estimated at 4 characters a token so the run's accounting sees plausible numbers.
fn completion(texts: &[String], step: &Step) -> Value {
    let prompt_chars: usize = texts.iter().map(String::len).sum();
    let reply_chars = reply_chars(step);
    let tool_calls: Vec<Value> = step
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": format!("call_{}", i + 1), "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": step.reply});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let finish = if step.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_chars / 4, "completion_tokens": reply_chars / 4,
                  "total_tokens": (prompt_chars + reply_chars) / 4},
    })
}

fn reply_chars(step: &Step) -> usize {
    step.reply.as_deref().map_or(0, str::len)
        + step
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>()
}

/// System prompt and message texts in wire order (OpenAI: the system prompt is message 0).
pub fn prompt_texts(body: &Value) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
            Value::Object(block) => {
                for key in ["text", "content"] {
                    if let Some(v) = block.get(key) {
                        collect(v, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(system) = body.get("system") {
        collect(system, &mut out);
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for message in messages {
            if let Some(content) = message.get("content") {
                collect(content, &mut out);
            }
            // Tool calls the model made are part of the next prompt too.
            if let Some(calls) = message.get("tool_calls") {
                out.push(calls.to_string());
            }
        }
    }
    out
}
