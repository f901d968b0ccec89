//! OpenAI-compatible `/chat/completions`: OpenAI, Azure OpenAI, GitHub Models, Ollama, vLLM,
//! llama.cpp server, OpenRouter. Replies are read field by field so that servers that leave
//! fields out or invent enum values still work.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::Llm;
use super::http::{HttpClient, RetryPolicy};
use super::types::{
    ChatRequest, ChatResponse, FinishReason, LlmError, Message, Role, TokenUsage, ToolCall,
};
use crate::config::StructuredOutput;

/// How the key is sent.
#[derive(Clone)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <key>` (OpenAI, GitHub Models, OpenRouter, local servers).
    Bearer(String),
    /// A named header holding the key (Azure's `api-key`).
    Header {
        name: String,
        key: String,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Bearer(_) => f.write_str("Bearer([REDACTED])"),
            Auth::Header { name, .. } => write!(f, "Header({name}: [REDACTED])"),
        }
    }
}

impl Auth {
    fn secret(&self) -> Option<&str> {
        match self {
            Auth::None => None,
            Auth::Bearer(key) | Auth::Header { key, .. } => Some(key),
        }
    }
}

#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// Provider name for `describe()` (`openai`, `azure`, `github_models`, ...).
    pub label: String,
    /// The full chat-completions URL (query string included for Azure).
    pub url: String,
    /// `None` leaves `model` out of the body (Azure deployments, single-model local servers).
    pub model: Option<String>,
    pub auth: Auth,
    pub headers: BTreeMap<String, String>,
    pub structured_output: StructuredOutput,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub max_reply_bytes: u64,
}

pub struct OpenAiCompatible {
    settings: OpenAiSettings,
    http: HttpClient,
    headers: HeaderMap,
    /// How structured replies are asked for; `auto` becomes `json_schema` and falls back to
    /// `prompt` the first time the server refuses `response_format`, once per run.
    mode: Mutex<StructuredOutput>,
    /// Set once the server asked for `max_completion_tokens` instead of `max_tokens` (OpenAI's
    /// reasoning models), so the limit is still sent.
    completion_tokens_field: AtomicBool,
}

/// Builds request headers; the key value is marked sensitive so it never shows in debug output.
pub(crate) fn header_map(
    extra: &BTreeMap<String, String>,
    secret_headers: &[(&str, &str)],
) -> Result<HeaderMap, LlmError> {
    let mut headers = HeaderMap::new();
    for (name, value) in extra {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            LlmError::NotConfigured(format!(
                "llm.headers: `{name}` is not a valid HTTP header name"
            ))
        })?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            LlmError::NotConfigured(format!(
                "llm.headers: the value of `{name}` is not a valid HTTP header value"
            ))
        })?;
        headers.insert(header, value);
    }
    for (name, secret) in secret_headers {
        let mut value = HeaderValue::from_str(secret).map_err(|_| {
            LlmError::NotConfigured(format!(
                "the API key for the `{name}` header contains characters not allowed in HTTP headers (a stray newline?)"
            ))
        })?;
        value.set_sensitive(true);
        headers.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("static header name"),
            value,
        );
    }
    Ok(headers)
}

impl OpenAiCompatible {
    pub fn new(settings: OpenAiSettings) -> Result<Self, LlmError> {
        let secrets: Vec<String> = settings
            .auth
            .secret()
            .map(str::to_string)
            .into_iter()
            .collect();
        let bearer;
        let mut secret_headers: Vec<(&str, &str)> = Vec::new();
        match &settings.auth {
            Auth::None => {}
            Auth::Bearer(key) => {
                bearer = format!("Bearer {key}");
                secret_headers.push(("authorization", bearer.as_str()));
            }
            Auth::Header { name, key } => secret_headers.push((name.as_str(), key.as_str())),
        }
        let headers = header_map(&settings.headers, &secret_headers)?;
        let http = HttpClient::new(settings.timeout, settings.retry, secrets)?
            .with_reply_cap(settings.max_reply_bytes);
        Ok(OpenAiCompatible {
            mode: Mutex::new(settings.structured_output),
            settings,
            http,
            headers,
            completion_tokens_field: AtomicBool::new(false),
        })
    }

    fn mode(&self) -> StructuredOutput {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn body(&self, request: &ChatRequest, mode: StructuredOutput) -> Value {
        let mut body = Map::new();
        if let Some(model) = &self.settings.model {
            body.insert("model".into(), json!(model));
        }
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        messages.extend(request.messages.iter().map(wire_message));
        body.insert("messages".into(), Value::Array(messages));
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        let schema = request.response_schema.as_ref();
        if let (StructuredOutput::Tool, Some(schema)) = (mode, schema) {
            tools.push(json!({"type": "function", "function": {
                "name": schema.name,
                "description": "Give your reply by calling this function; its arguments are the reply.",
                "parameters": schema.schema}}));
            body.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": schema.name}}),
            );
        }
        if !tools.is_empty() {
            if request.require_tool_call && !body.contains_key("tool_choice") {
                body.insert("tool_choice".into(), json!("required"));
            }
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(max) = request.max_tokens {
            let field = if self.completion_tokens_field.load(Ordering::Relaxed) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(field.into(), json!(max));
        }
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        // Only OpenAI's own API knows the key; some compatible servers refuse unknown fields.
        if let Some(key) = &request.cache_key
            && self.settings.url.starts_with("https://api.openai.com/")
        {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        match (mode, schema) {
            (StructuredOutput::JsonSchema | StructuredOutput::Auto, Some(schema)) => {
                body.insert(
                    "response_format".into(),
                    json!({"type": "json_schema", "json_schema": {
                        "name": schema.name, "schema": schema.schema, "strict": false}}),
                );
            }
            (StructuredOutput::JsonObject, Some(_)) => {
                body.insert("response_format".into(), json!({"type": "json_object"}));
            }
            _ => {}
        }
        Value::Object(body)
    }
}

fn wire_message(message: &Message) -> Value {
    match message.role {
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant => {
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            if message.tool_calls.is_empty() || !message.content.is_empty() {
                m.insert("content".into(), json!(message.content));
            } else {
                m.insert("content".into(), Value::Null);
            }
            if !message.tool_calls.is_empty() {
                let calls = message
                    .tool_calls
                    .iter()
                    .map(|c| {
                        // Unparsable arguments are kept as the raw string; send them back verbatim.
                        let arguments = match &c.arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
    }
}

fn number(value: Option<&Value>) -> u64 {
    match value {
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))
            .unwrap_or(0),
        None => 0,
    }
}

/// Tool arguments as an object; an unparsable string stays a string so the engine can report it.
fn parse_arguments(raw: Option<&Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
    }
}

fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// Reads a chat-completions reply, tolerating missing fields and unknown values.
pub fn parse_chat_completion(body: &Value, fallback_model: &str) -> Result<ChatResponse, LlmError> {
    let Some(choice) = body.get("choices").and_then(|c| c.get(0)) else {
        let why = body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(|m| format!("the server reported an error: {m}"))
            .unwrap_or_else(|| "the reply has no `choices`".into());
        return Err(LlmError::BadReply(why));
    };
    let message = choice.get("message").or_else(|| choice.get("delta"));
    let text = content_text(message.and_then(|m| m.get("content"))).or_else(|| {
        choice
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let mut tool_calls = Vec::new();
    if let Some(calls) = message
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
    {
        for (i, call) in calls.iter().enumerate() {
            let function = call.get("function").unwrap_or(call);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{}", i + 1));
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments: parse_arguments(function.get("arguments")),
            });
        }
    }
    // The pre-tools `function_call` form, still sent by some compatible servers.
    if tool_calls.is_empty()
        && let Some(function) = message.and_then(|m| m.get("function_call"))
    {
        tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            arguments: parse_arguments(function.get("arguments")),
        });
    }
    let finish_reason = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") | Some("end_turn") | Some("eos") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") | Some("max_tokens") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(_) => FinishReason::Other,
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let usage = body.get("usage");
    let usage = TokenUsage {
        prompt_tokens: number(usage.and_then(|u| u.get("prompt_tokens"))),
        completion_tokens: number(usage.and_then(|u| u.get("completion_tokens"))),
        cached_tokens: number(
            usage.and_then(|u| u.pointer("/prompt_tokens_details/cached_tokens")),
        ),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or(fallback_model)
        .to_string();
    Ok(ChatResponse {
        text: text.filter(|t| !t.is_empty() || tool_calls.is_empty()),
        tool_calls,
        usage,
        finish_reason,
        model,
        cost_usd: 0.0,
        attempts: Default::default(),
        unpriced: false,
    })
}

fn refuses_response_format(error: &LlmError) -> bool {
    match error {
        LlmError::Http { status, message } if *status == 400 || *status == 422 => {
            let m = message.to_ascii_lowercase();
            m.contains("response_format") || m.contains("json_schema")
        }
        _ => false,
    }
}

fn wants_completion_tokens(error: &LlmError) -> bool {
    matches!(error, LlmError::Http { status: 400, message }
        if message.contains("max_tokens") && message.contains("max_completion_tokens"))
}

#[async_trait]
impl Llm for OpenAiCompatible {
    fn describe(&self) -> String {
        match &self.settings.model {
            Some(model) => format!("{} {model}", self.settings.label),
            None => format!(
                "{} ({})",
                self.settings.label,
                crate::outbound::redact(&self.settings.url)
            ),
        }
    }

    fn structured_output(&self) -> Option<StructuredOutput> {
        Some(self.mode())
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mode = self.mode();
        let body = self.body(request, mode);
        let result = self
            .http
            .post_json(&self.settings.url, &self.headers, &body, &request.purpose)
            .await;
        let reply = match result {
            Err(error)
                if mode == StructuredOutput::Auto
                    && request.response_schema.is_some()
                    && refuses_response_format(&error) =>
            {
                tracing::warn!(purpose = %request.purpose, %error,
                    "structured output: the server refused response_format; using `prompt` for the rest of the run");
                *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = StructuredOutput::Prompt;
                let body = self.body(request, StructuredOutput::Prompt);
                self.http
                    .post_json(&self.settings.url, &self.headers, &body, &request.purpose)
                    .await?
            }
            Err(error) if wants_completion_tokens(&error) && request.max_tokens.is_some() => {
                tracing::info!(purpose = %request.purpose,
                    "the server wants max_completion_tokens instead of max_tokens; sending that from now on");
                self.completion_tokens_field.store(true, Ordering::Relaxed);
                let body = self.body(request, mode);
                self.http
                    .post_json(&self.settings.url, &self.headers, &body, &request.purpose)
                    .await?
            }
            other => other?,
        };
        if mode == StructuredOutput::Auto && request.response_schema.is_some() {
            // The probe succeeded: keep json_schema without probing again.
            let mut current = self.mode.lock().unwrap_or_else(|e| e.into_inner());
            if *current == StructuredOutput::Auto {
                tracing::info!(
                    "structured output: the server accepts response_format json_schema; using it for this run"
                );
                *current = StructuredOutput::JsonSchema;
            }
        }
        let fallback_model = self
            .settings
            .model
            .as_deref()
            .unwrap_or(&self.settings.label);
        let mut response = parse_chat_completion(&reply, fallback_model)?;
        if mode == StructuredOutput::Tool
            && let Some(schema) = &request.response_schema
        {
            take_structured_call(&mut response, &schema.name);
        }
        Ok(response)
    }
}

/// In `tool` mode the reply is the arguments of the forced call: hand them over as the text.
fn take_structured_call(response: &mut ChatResponse, name: &str) {
    if let Some(index) = response.tool_calls.iter().position(|c| c.name == name) {
        let call = response.tool_calls.remove(index);
        response.text = Some(match call.arguments {
            Value::String(raw) => raw,
            other => other.to_string(),
        });
        if response.finish_reason == FinishReason::ToolCalls {
            response.finish_reason = FinishReason::Stop;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ResponseSchema, ToolSpec};

    #[test]
    fn tolerates_null_content_missing_usage_and_unknown_finish_reasons() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
            "finish_reason": "weird_new_reason"}]});
        let r = parse_chat_completion(&body, "m").unwrap();
        assert_eq!(r.finish_reason, FinishReason::Other);
        assert_eq!(r.usage, TokenUsage::default());
        assert_eq!(r.text, None);
        assert_eq!(r.model, "m");
        assert_eq!(r.tool_calls[0].id, "call_1");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a"}));
    }

    #[test]
    fn tool_arguments_as_objects_or_broken_strings_are_kept() {
        let body = json!({"choices": [{"message": {"tool_calls": [
            {"id": "a", "function": {"name": "x", "arguments": {"k": 1}}},
            {"id": "b", "function": {"name": "y", "arguments": "{\"k\": "}},
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3,
                  "prompt_tokens_details": {"cached_tokens": 8}}});
        let r = parse_chat_completion(&body, "m").unwrap();
        assert_eq!(r.tool_calls[0].arguments, json!({"k": 1}));
        assert!(r.tool_calls[0].arguments_error().is_none());
        let error = r.tool_calls[1].arguments_error().unwrap();
        assert!(error.contains("not valid JSON"), "{error}");
        assert_eq!(r.usage.cached_tokens, 8);
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn content_parts_are_joined_and_missing_choices_is_a_bad_reply() {
        let body = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        assert_eq!(
            parse_chat_completion(&body, "m").unwrap().text.as_deref(),
            Some("ab")
        );
        let err =
            parse_chat_completion(&json!({"error": {"message": "overloaded"}}), "m").unwrap_err();
        assert!(err.to_string().contains("overloaded"));
    }

    #[test]
    fn only_a_complaint_about_response_format_drops_it() {
        let refused = LlmError::Http {
            status: 400,
            message: "Unrecognized request argument supplied: response_format".into(),
        };
        assert!(refuses_response_format(&refused));
        let other = LlmError::Http {
            status: 400,
            message: "messages: too long".into(),
        };
        assert!(!refuses_response_format(&other));
        let server = LlmError::Http {
            status: 500,
            message: "json_schema crashed".into(),
        };
        assert!(!refuses_response_format(&server));
    }

    #[test]
    fn request_body_maps_tools_tool_results_and_the_schema() {
        let llm = OpenAiCompatible::new(OpenAiSettings {
            label: "openai".into(),
            url: "http://127.0.0.1:9/v1/chat/completions".into(),
            model: Some("gpt-4o".into()),
            auth: Auth::Bearer("k".into()),
            headers: BTreeMap::new(),
            structured_output: StructuredOutput::Auto,
            timeout: Duration::from_secs(1),
            retry: RetryPolicy::new(0),
            max_reply_bytes: 1024,
        })
        .unwrap();
        let mut assistant = Message::assistant("");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "x"}),
        });
        let request = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                assistant,
                Message::tool_result("c1", "data"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read".into(),
                input_schema: json!({"type": "object"}),
            }],
            response_schema: Some(ResponseSchema {
                name: "R".into(),
                schema: json!({"type": "object"}),
            }),
            ..Default::default()
        };
        let body = llm.body(&request, StructuredOutput::JsonSchema);
        assert_eq!(body["model"], "gpt-4o");
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"x\"}"
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "data"})
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["response_format"]["json_schema"]["name"], "R");
        assert_eq!(body["response_format"]["json_schema"]["strict"], false);
        assert!(
            llm.body(&request, StructuredOutput::Prompt)
                .get("response_format")
                .is_none()
        );
        assert_eq!(
            llm.body(&request, StructuredOutput::JsonObject)["response_format"],
            json!({"type": "json_object"})
        );
        let forced = llm.body(&request, StructuredOutput::Tool);
        assert!(forced.get("response_format").is_none());
        assert_eq!(forced["tool_choice"]["function"]["name"], "R");
        assert_eq!(forced["tools"][1]["function"]["name"], "R");
        // The prompt cache key goes to OpenAI's own API only.
        let keyed = ChatRequest {
            cache_key: Some("replan-run-1".into()),
            ..request.clone()
        };
        assert!(
            llm.body(&keyed, StructuredOutput::Auto)
                .get("prompt_cache_key")
                .is_none()
        );
        let mut settings = llm.settings.clone();
        settings.url = "https://api.openai.com/v1/chat/completions".into();
        let openai = OpenAiCompatible::new(settings).unwrap();
        assert_eq!(
            openai.body(&keyed, StructuredOutput::Auto)["prompt_cache_key"],
            "replan-run-1"
        );
    }
}
