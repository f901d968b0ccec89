//! Anthropic Messages API (`/v1/messages`). The system prompt is one block marked for prompt
//! caching; structured output is a forced call of a tool whose input schema is the reply schema.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use super::Llm;
use super::anthropic_stream::{MessageStream, with_prefill};
use super::http::{HttpClient, RetryPolicy, Streamed};
use super::openai::header_map;
use super::types::{
    ChatRequest, ChatResponse, FinishReason, LlmError, Message, Role, TokenUsage, ToolCall,
};
use crate::config::StructuredOutput;

pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Anthropic requires `max_tokens`; used when the request sets none (the budget wrapper sets one
/// per purpose from `llm.max_output_tokens`).
const DEFAULT_MAX_TOKENS: u32 = 4096;

#[derive(Clone)]
pub struct AnthropicSettings {
    /// `https://api.anthropic.com` (with or without `/v1`) or a full `/v1/messages` URL.
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub headers: BTreeMap<String, String>,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// `tool` and `auto` force a call of a tool whose input is the reply; the Messages format
    /// has no `response_format`, so `json_schema`, `json_object` and `prompt` leave the schema to
    /// the prompt, start the reply with `{` (prefill) and read the JSON out of the text. `auto`
    /// turns into `prompt` when the server answers a forced call in text.
    pub structured_output: StructuredOutput,
    pub max_reply_bytes: u64,
}

impl std::fmt::Debug for AnthropicSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &"[REDACTED]")
            .finish_non_exhaustive()
    }
}

pub struct Anthropic {
    url: String,
    model: String,
    http: HttpClient,
    headers: HeaderMap,
    /// Structured replies are a forced tool call (`tool`, `auto`); cleared for the rest of the
    /// run when `auto` meets a server that answers a forced call in text (llama-server).
    forced_tool: AtomicBool,
    auto: bool,
}

pub fn messages_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1/messages") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

impl Anthropic {
    pub fn new(settings: AnthropicSettings) -> Result<Self, LlmError> {
        let mut extra = settings.headers.clone();
        extra
            .entry("anthropic-version".into())
            .or_insert_with(|| ANTHROPIC_VERSION.into());
        let headers = header_map(&extra, &[("x-api-key", settings.api_key.as_str())])?;
        let http = HttpClient::new(
            settings.timeout,
            settings.retry,
            vec![settings.api_key.clone()],
        )?
        .with_reply_cap(settings.max_reply_bytes);
        Ok(Anthropic {
            url: messages_url(&settings.base_url),
            model: settings.model,
            http,
            headers,
            forced_tool: AtomicBool::new(matches!(
                settings.structured_output,
                StructuredOutput::Tool | StructuredOutput::Auto
            )),
            auto: settings.structured_output == StructuredOutput::Auto,
        })
    }

    fn body(&self, request: &ChatRequest, shape: &ReplyShape) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "max_tokens".into(),
            json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if !request.system.is_empty() {
            body.insert(
                "system".into(),
                json!([{"type": "text", "text": request.system,
                        "cache_control": {"type": "ephemeral"}}]),
            );
        }
        let mut messages = wire_messages(&request.messages);
        if let Some(prefill) = &shape.prefill {
            messages
                .push(json!({"role": "assistant", "content": [{"type": "text", "text": prefill}]}));
        }
        // Cache the conversation so far: the next turn of a tool loop repeats all of it.
        if let Some(block) = messages
            .last_mut()
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
            .and_then(Value::as_object_mut)
        {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        body.insert("messages".into(), Value::Array(messages));
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        // The tool specs head the cached prefix (tools, then system, then messages).
        if let Some(last) = tools.last_mut().and_then(Value::as_object_mut) {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        if let Some(schema) = shape.forced {
            tools.push(json!({
                "name": schema.name,
                "description": "Give your reply by calling this tool; its input is the reply.",
                "input_schema": schema.schema,
            }));
            body.insert(
                "tool_choice".into(),
                json!({"type": "tool", "name": schema.name}),
            );
        }
        if !tools.is_empty() {
            if request.require_tool_call && !body.contains_key("tool_choice") {
                body.insert("tool_choice".into(), json!({"type": "any"}));
            }
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        Value::Object(body)
    }

    /// How `request` asks for its reply, read once so that the body sent and the reply read
    /// agree even when a concurrent subtask's reply switches `auto` to `prompt` in between.
    fn reply_shape<'a>(&self, request: &'a ChatRequest) -> ReplyShape<'a> {
        // A prefilled reply is text: forcing a tool call would contradict it, so the schema is
        // then left to the prompt.
        let forced = request
            .response_schema
            .as_ref()
            .filter(|_| self.forced_tool.load(Ordering::Relaxed) && request.prefill.is_none());
        // The request's prefill, else `{` for a structured reply left to the prompt (the
        // Messages API's way to get JSON without a forced tool).
        let prefill = request.prefill.clone().or_else(|| {
            (request.response_schema.is_some() && forced.is_none()).then(|| "{".to_string())
        });
        ReplyShape { forced, prefill }
    }
}

/// How one request asks for its structured reply.
struct ReplyShape<'a> {
    /// The tool whose input is the reply, when the reply is a forced call.
    forced: Option<&'a super::ResponseSchema>,
    /// The start of the reply handed to the model.
    prefill: Option<String>,
}

fn blocks_of(message: &Message) -> (&'static str, Vec<Value>) {
    match message.role {
        Role::User => (
            "user",
            vec![json!({"type": "text", "text": message.content})],
        ),
        Role::Tool => (
            "user",
            vec![json!({"type": "tool_result",
                        "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                        "content": message.content})],
        ),
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !message.content.is_empty() {
                blocks.push(json!({"type": "text", "text": message.content}));
            }
            for call in &message.tool_calls {
                // The API wants an object; unparsable arguments are sent back wrapped.
                let input = match &call.arguments {
                    Value::Object(_) => call.arguments.clone(),
                    other => json!({"raw_arguments": other}),
                };
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            if blocks.is_empty() {
                blocks.push(json!({"type": "text", "text": ""}));
            }
            ("assistant", blocks)
        }
    }
}

/// Our messages as Anthropic turns: consecutive messages of the same side are merged, because
/// the API wants user and assistant to alternate (all tool results of a turn in one message).
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = blocks_of(message);
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn number(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_u64).unwrap_or(0)
}

/// A reply with text and no tool call at all.
fn answered_in_text(reply: &Value) -> bool {
    let blocks = reply.get("content").and_then(Value::as_array);
    let has = |kind: &str| {
        blocks.is_some_and(|b| {
            b.iter()
                .any(|block| block.get("type").and_then(Value::as_str) == Some(kind))
        })
    };
    has("text") && !has("tool_use")
}

/// Reads a Messages reply; `forced_tool` is the structured-output tool whose input is the reply.
pub fn parse_message(
    body: &Value,
    forced_tool: Option<&str>,
    fallback_model: &str,
) -> Result<ChatResponse, LlmError> {
    let Some(content) = body.get("content").and_then(Value::as_array) else {
        let why = body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(|m| format!("the server reported an error: {m}"))
            .unwrap_or_else(|| "the reply has no `content`".into());
        return Err(LlmError::BadReply(why));
    };
    let mut text = String::new();
    let mut structured: Option<String> = None;
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if forced_tool == Some(name) && structured.is_none() {
                    structured = Some(input.to_string());
                    continue;
                }
                tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    name: name.to_string(),
                    arguments: input,
                });
            }
            _ => {}
        }
    }
    let stop_reason = body.get("stop_reason").and_then(Value::as_str);
    let finish_reason = match stop_reason {
        _ if structured.is_some() && tool_calls.is_empty() => FinishReason::Stop,
        Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(_) => FinishReason::Other,
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let usage = body.get("usage");
    let input = number(usage.and_then(|u| u.get("input_tokens")));
    let cache_read = number(usage.and_then(|u| u.get("cache_read_input_tokens")));
    let cache_write = number(usage.and_then(|u| u.get("cache_creation_input_tokens")));
    let usage = TokenUsage {
        // Anthropic counts cached prompt tokens apart; the prompt is all of them.
        prompt_tokens: input + cache_read + cache_write,
        completion_tokens: number(usage.and_then(|u| u.get("output_tokens"))),
        cached_tokens: cache_read,
    };
    let text = match structured {
        Some(json) => Some(json),
        None if text.is_empty() && !tool_calls.is_empty() => None,
        None => Some(text),
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage,
        finish_reason,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(fallback_model)
            .to_string(),
        cost_usd: 0.0,
        attempts: Default::default(),
        unpriced: false,
    })
}

#[async_trait]
impl Llm for Anthropic {
    fn describe(&self) -> String {
        format!("anthropic {}", self.model)
    }

    fn structured_output(&self) -> Option<StructuredOutput> {
        // `auto` is the forced tool call here: the messages API has no response_format to probe.
        Some(if self.forced_tool.load(Ordering::Relaxed) {
            StructuredOutput::Tool
        } else {
            StructuredOutput::Prompt
        })
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut shape = self.reply_shape(request);
        let mut reply = self.call(request, &shape).await?;
        if self.auto && shape.forced.is_some() && answered_in_text(&reply.body) {
            // A forced call never comes with text: this server does not enforce tool_choice.
            tracing::warn!(purpose = %request.purpose,
                "structured output: the server answered a forced tool call in text; using `prompt` for the rest of the run");
            self.forced_tool.store(false, Ordering::Relaxed);
            if reply.abandoned {
                // Only the start of the text was read: ask again, the way that works here.
                shape = self.reply_shape(request);
                reply = self.call(request, &shape).await?;
            }
        }
        let forced = shape.forced.map(|s| s.name.as_str());
        let mut response = parse_message(&reply.body, forced, &self.model)?;
        if let Some(prefill) = &shape.prefill {
            let text = response.text.take().unwrap_or_default();
            response.text = Some(with_prefill(prefill, &text));
        }
        Ok(response)
    }
}

/// A Messages reply body, and whether it was abandoned at the first text of a forced call.
struct Reply {
    body: Value,
    abandoned: bool,
}

impl Anthropic {
    /// One request. Under `auto` a forced call is streamed and dropped at its first text. Once
    /// the server is known not to enforce tool calls (or `prompt` was picked), every reply is
    /// streamed and read only as far as it is of use: a prefilled one until its JSON object
    /// closes, a turn that must call a tool until its prose shows no call is coming, any until it
    /// goes round in a loop; one still being written at the time limit is kept as cut off there.
    async fn call(&self, request: &ChatRequest, shape: &ReplyShape<'_>) -> Result<Reply, LlmError> {
        let mut body = self.body(request, shape);
        let probing = self.auto && shape.forced.is_some();
        let unenforced = !self.forced_tool.load(Ordering::Relaxed);
        let wants_call = request.require_tool_call
            && !request.tools.is_empty()
            && shape.forced.is_none()
            && shape.prefill.is_none()
            && unenforced;
        if shape.prefill.is_none() && !probing && !unenforced {
            let body = self
                .http
                .post_json(&self.url, &self.headers, &body, &request.purpose)
                .await?;
            return Ok(Reply {
                body,
                abandoned: false,
            });
        }
        body["stream"] = json!(true);
        let prefill = shape.prefill.clone().filter(|p| p.starts_with('{'));
        let streamed = self
            .http
            .post_stream(&self.url, &self.headers, &body, &request.purpose, || {
                MessageStream::new(prefill.clone(), probing).wanting_a_call(wants_call)
            })
            .await?;
        Ok(match streamed {
            Streamed::Whole(body) => Reply {
                body,
                abandoned: false,
            },
            Streamed::Events(stream) => Reply {
                abandoned: stream.answered_in_text(),
                body: stream.into_body(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ResponseSchema, ToolSpec};

    fn client() -> Anthropic {
        Anthropic::new(AnthropicSettings {
            base_url: "http://127.0.0.1:9".into(),
            model: "claude-x".into(),
            api_key: "k".into(),
            headers: BTreeMap::new(),
            timeout: Duration::from_secs(1),
            retry: RetryPolicy::new(0),
            structured_output: StructuredOutput::Auto,
            max_reply_bytes: 1024,
        })
        .unwrap()
    }

    #[test]
    fn urls_accept_the_usual_base_forms() {
        assert_eq!(
            messages_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(messages_url("https://x/v1/"), "https://x/v1/messages");
        assert_eq!(
            messages_url("https://x/v1/messages"),
            "https://x/v1/messages"
        );
    }

    #[test]
    fn body_caches_the_system_prompt_and_merges_tool_results() {
        let mut assistant = Message::assistant("let me look");
        for id in ["t1", "t2"] {
            assistant.tool_calls.push(ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: json!({"p": id}),
            });
        }
        let request = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("go"),
                assistant,
                Message::tool_result("t1", "one"),
                Message::tool_result("t2", "two"),
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read".into(),
                input_schema: json!({"type": "object"}),
            }],
            response_schema: Some(ResponseSchema {
                name: "Decision".into(),
                schema: json!({"type": "object"}),
            }),
            ..Default::default()
        };
        let client = client();
        let body = client.body(&request, &client.reply_shape(&request));
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["max_tokens"], 4096);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[1]["content"][1],
            json!({"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "t1"}})
        );
        assert_eq!(messages[2]["role"], "user");
        // The last block and the last tool spec are cache breakpoints (issue 15).
        assert_eq!(
            messages[2]["content"][1],
            json!({"type": "tool_result", "tool_use_id": "t2", "content": "two",
                   "cache_control": {"type": "ephemeral"}})
        );
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["tools"][1]["name"], "Decision");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "Decision"})
        );
    }

    #[test]
    fn parses_tool_use_forced_structured_output_and_cache_usage() {
        let body = json!({"model": "claude-x-1", "stop_reason": "tool_use", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "tu1", "name": "read", "input": {"p": 1}}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}});
        let r = parse_message(&body, None, "m").unwrap();
        assert_eq!(r.text.as_deref(), Some("Reading."));
        assert_eq!(r.tool_calls[0].id, "tu1");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (
                r.usage.prompt_tokens,
                r.usage.cached_tokens,
                r.usage.completion_tokens
            ),
            (110, 100, 5)
        );
        assert_eq!(r.model, "claude-x-1");

        let forced = json!({"stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": "tu2", "name": "Decision", "input": {"ok": true}}]});
        let r = parse_message(&forced, Some("Decision"), "m").unwrap();
        assert_eq!(r.text.as_deref(), Some("{\"ok\":true}"));
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish_reason, FinishReason::Stop);
        assert_eq!(r.usage, TokenUsage::default());
    }
}
