//! A scripted LLM server on 127.0.0.1 for tests: answers `POST .../chat/completions` (OpenAI
//! wire format) and `POST .../messages` (Anthropic) from a scenario file, records every request
//! with its headers, and injects the scenario's faults (status with `Retry-After`, hang, truncated
//! body, prose, wrong-shape JSON). Plain HTTP/1.1 over tokio so a fault can break the protocol.
//!
//! It runs on its own thread and runtime, so sync and async tests can both use it.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use replan::llm::scenario::{
    CUT_OFF_REPLY, FaultKind, HUGE_REPLY_BYTES, Outcome, PROSE_REPLY, RAMBLE_JSON,
    RAMBLE_OPEN_JSON, RAMBLE_PROSE, RAMBLE_REPEATS, Scenario, ScenarioPlayer, ScriptedToolCall,
    ScriptedUsage, Subject, WRONG_SHAPE_REPLY,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path with the query string, e.g. `/openai/deployments/d/chat/completions?api-version=x`.
    pub target: String,
    /// Header names lower-cased, values as sent (keys included, so tests can assert on them).
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub wire: Wire,
    pub received_at: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The system prompt and every message text, as the matcher sees them.
    pub fn texts(&self) -> Vec<String> {
        prompt_texts(&self.body)
    }
}

struct Shared {
    player: ScenarioPlayer,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Requests from this index on are recorded but never answered (a test kills the client
    /// while it waits).
    hold_from: std::sync::atomic::AtomicUsize,
    /// Milliseconds every reply waits before it is answered (a model that takes time).
    reply_delay_ms: std::sync::atomic::AtomicU64,
    /// Streamed replies the client hung up on before their end.
    hang_ups: std::sync::atomic::AtomicUsize,
}

pub struct LlmServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LlmServer {
    pub fn start(scenario: Scenario) -> LlmServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            player: ScenarioPlayer::new(scenario),
            requests: Mutex::new(Vec::new()),
            hold_from: std::sync::atomic::AtomicUsize::new(usize::MAX),
            reply_delay_ms: std::sync::atomic::AtomicU64::new(0),
            hang_ups: std::sync::atomic::AtomicUsize::new(0),
        });
        let (shutdown, mut shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let served = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            if let Ok((stream, _)) = accepted {
                                tokio::spawn(serve(stream, served.clone()));
                            }
                        }
                        _ = &mut shutdown_rx => break,
                    }
                }
            });
            // Hanging connections are dropped with the runtime.
            runtime.shutdown_background();
        });
        LlmServer {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub fn from_yaml(yaml: &str) -> LlmServer {
        LlmServer::start(Scenario::from_yaml(yaml).expect("test scenario parses"))
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for OpenAI-compatible clients: `http://127.0.0.1:<port>/v1`.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url())
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Leave the request with this 0-based index, and every later one, unanswered.
    pub fn hold_from(&self, index: usize) {
        self.shared
            .hold_from
            .store(index, std::sync::atomic::Ordering::SeqCst);
    }

    /// Every later reply waits `delay` before it is answered, as a model's generation takes.
    pub fn delay_replies(&self, delay: std::time::Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared
            .reply_delay_ms
            .store(ms, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many streamed replies the client stopped reading before their end.
    pub fn hang_ups(&self) -> usize {
        self.shared
            .hang_ups
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn remaining_steps(&self) -> usize {
        self.shared.player.remaining()
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct RawRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_request(stream: &mut TcpStream) -> Option<RawRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() > 16 * 1024 * 1024 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_string();
    let target = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some(RawRequest {
        method,
        target,
        headers,
        body,
    })
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    extra_headers: &[(&str, String)],
    body: &[u8],
) {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn error_body(message: &str) -> Vec<u8> {
    json!({"error": {"type": "scripted", "message": message}})
        .to_string()
        .into_bytes()
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some(raw) = read_request(&mut stream).await else {
        return;
    };
    let path = raw.target.split('?').next().unwrap_or_default().to_string();
    let wire = if raw.method == "POST" && path.ends_with("/chat/completions") {
        Wire::OpenAi
    } else if raw.method == "POST" && path.ends_with("/messages") {
        Wire::Anthropic
    } else {
        respond(&mut stream, 404, &[], &error_body("no such endpoint")).await;
        return;
    };
    let Ok(body) = serde_json::from_slice::<Value>(&raw.body) else {
        respond(&mut stream, 400, &[], &error_body("the body is not JSON")).await;
        return;
    };
    let recorded = RecordedRequest {
        method: raw.method,
        target: raw.target,
        headers: raw.headers,
        body,
        wire,
        received_at: Instant::now(),
    };
    let index = {
        let mut requests = shared.requests.lock().unwrap_or_else(|e| e.into_inner());
        requests.push(recorded.clone());
        requests.len() - 1
    };
    if index >= shared.hold_from.load(std::sync::atomic::Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    let delay = shared
        .reply_delay_ms
        .load(std::sync::atomic::Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    let texts = recorded.texts();
    let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let outcome = shared.player.next(&Subject {
        purpose: None,
        texts: &text_refs,
    });
    let reply = |text: Option<&str>, calls: &[ScriptedToolCall], usage: Option<ScriptedUsage>| {
        success_body(&recorded, text, calls, usage.unwrap_or_default(), false)
    };
    match outcome {
        // 400 so that clients do not retry a scripting mistake.
        Err(error) => respond(&mut stream, 400, &[], &error_body(&error.to_string())).await,
        Ok(Outcome::Reply(step)) => {
            let body = reply(step.reply.as_deref(), &step.tool_calls, step.usage);
            answer(&mut stream, &recorded, &body).await;
        }
        Ok(Outcome::Fault(fault)) => match fault.kind {
            FaultKind::Status => {
                let status = fault.status.unwrap_or(500);
                let headers: Vec<(&str, String)> = fault
                    .retry_after
                    .map(|s| ("retry-after", s.to_string()))
                    .into_iter()
                    .collect();
                // Like real providers, echo the credential back so tests can check redaction.
                let sent_key = recorded
                    .header("authorization")
                    .or_else(|| recorded.header("x-api-key"))
                    .or_else(|| recorded.header("api-key"))
                    .unwrap_or("none");
                let message = format!("scripted fault; credential sent: {sent_key}");
                respond(&mut stream, status, &headers, &error_body(&message)).await;
            }
            FaultKind::Hang => {
                // Keep the connection open and silent until the server is dropped.
                std::future::pending::<()>().await;
            }
            FaultKind::Truncated => {
                let body = reply(Some("{\"truncated\": false}"), &[], None);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body[..body.len() / 2]).await;
                let _ = stream.flush().await;
                let _ = stream.shutdown().await;
            }
            FaultKind::Prose => {
                answer(&mut stream, &recorded, &reply(Some(PROSE_REPLY), &[], None)).await
            }
            FaultKind::WrongShape => {
                let body = reply(Some(WRONG_SHAPE_REPLY), &[], None);
                answer(&mut stream, &recorded, &body).await
            }
            FaultKind::Ramble | FaultKind::RambleOpen if streamed(&recorded) => {
                let json = match fault.kind {
                    FaultKind::Ramble => RAMBLE_JSON,
                    _ => RAMBLE_OPEN_JSON,
                };
                if !ramble_streamed(&mut stream, json).await {
                    shared
                        .hang_ups
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            FaultKind::Ramble | FaultKind::RambleOpen => {
                let json = match fault.kind {
                    FaultKind::Ramble => RAMBLE_JSON,
                    _ => RAMBLE_OPEN_JSON,
                };
                let text = format!("{json}{}", RAMBLE_PROSE.repeat(RAMBLE_REPEATS));
                let body =
                    success_body(&recorded, Some(&text), &[], ScriptedUsage::default(), true);
                respond(&mut stream, 200, &[], &body).await
            }
            FaultKind::CutOff => {
                let usage = ScriptedUsage {
                    prompt_tokens: 100,
                    completion_tokens: 64,
                    cached_tokens: 0,
                };
                let body = success_body(&recorded, Some(CUT_OFF_REPLY), &[], usage, true);
                answer(&mut stream, &recorded, &body).await
            }
            FaultKind::Huge => {
                huge_reply(
                    &mut stream,
                    fault.bytes.unwrap_or(HUGE_REPLY_BYTES),
                    fault.chunked,
                )
                .await
            }
        },
    }
}

/// The request asks for a streamed reply (Anthropic's `stream: true`).
fn streamed(request: &RecordedRequest) -> bool {
    request.wire == Wire::Anthropic && request.body.get("stream") == Some(&Value::Bool(true))
}

/// A successful reply, as server-sent events when the request asked for a stream.
async fn answer(stream: &mut TcpStream, request: &RecordedRequest, body: &[u8]) {
    if !streamed(request) {
        return respond(stream, 200, &[], body).await;
    }
    let message: Value = serde_json::from_slice(body).expect("a reply body is JSON");
    let mut events = vec![message_start(&message)];
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let mut start = block.clone();
        let delta = if block["type"] == "tool_use" {
            start["input"] = json!({});
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()})
        } else {
            start["text"] = json!("");
            json!({"type": "text_delta", "text": block["text"]})
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]},
                       "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    );
    events.push(json!({"type": "message_stop"}));
    let _ = stream.write_all(EVENT_STREAM_HEAD.as_bytes()).await;
    for event in events {
        let _ = stream.write_all(sse(&event).as_bytes()).await;
    }
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

const EVENT_STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

fn sse(event: &Value) -> String {
    format!(
        "event: {}\ndata: {event}\n\n",
        event["type"].as_str().unwrap_or("message")
    )
}

fn message_start(message: &Value) -> Value {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    json!({"type": "message_start", "message": start})
}

/// `json` a few characters at a time, then numbered prose every 20 ms for up to 30 s; `false`
/// when the client hung up before the end.
async fn ramble_streamed(stream: &mut TcpStream, json: &str) -> bool {
    let message = json!({"id": "msg_ramble", "type": "message", "role": "assistant",
        "model": "scripted-model", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 100, "output_tokens": 0}});
    let mut events = vec![
        message_start(&message),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ];
    let chars: Vec<char> = json.chars().collect();
    for piece in chars.chunks(5) {
        let text: String = piece.iter().collect();
        events.push(json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": text}}));
    }
    if stream
        .write_all(EVENT_STREAM_HEAD.as_bytes())
        .await
        .is_err()
    {
        return false;
    }
    for event in &events {
        if stream.write_all(sse(event).as_bytes()).await.is_err() {
            return false;
        }
    }
    // Numbered, so that it does not go round in a loop a client would stop at.
    for part in 0..1500 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let prose = json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": format!("{RAMBLE_PROSE}({part}) ")}});
        let sent = stream.write_all(sse(&prose).as_bytes()).await;
        if sent.is_err() || stream.flush().await.is_err() {
            return false;
        }
    }
    let end = [
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4096}}),
        json!({"type": "message_stop"}),
    ];
    for event in &end {
        let _ = stream.write_all(sse(event).as_bytes()).await;
    }
    let _ = stream.shutdown().await;
    true
}

/// A JSON reply of `bytes` bytes (one long string), written in 64 KiB pieces so the server never
/// holds it whole; with `chunked` it has no `Content-Length`.
async fn huge_reply(stream: &mut TcpStream, bytes: u64, chunked: bool) {
    const PIECE: usize = 64 * 1024;
    let prefix = b"{\"choices\": [{\"message\": {\"content\": \"";
    let suffix = b"\"}}]}";
    let filler = bytes.saturating_sub((prefix.len() + suffix.len()) as u64);
    let head = if chunked {
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_string()
    } else {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {bytes}\r\nconnection: close\r\n\r\n"
        )
    };
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let piece = vec![b'a'; PIECE];
    let mut parts: Vec<&[u8]> = vec![prefix];
    let whole = (filler / PIECE as u64) as usize;
    let rest = (filler % PIECE as u64) as usize;
    parts.extend(std::iter::repeat_n(piece.as_slice(), whole));
    parts.push(&piece[..rest]);
    parts.push(suffix);
    for part in parts {
        let sent = if chunked {
            let mut framed = format!("{:x}\r\n", part.len()).into_bytes();
            framed.extend_from_slice(part);
            framed.extend_from_slice(b"\r\n");
            stream.write_all(&framed).await
        } else {
            stream.write_all(part).await
        };
        // The client hangs up once it has read more than its cap.
        if sent.is_err() {
            return;
        }
    }
    if chunked {
        let _ = stream.write_all(b"0\r\n\r\n").await;
    }
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn success_body(
    request: &RecordedRequest,
    text: Option<&str>,
    calls: &[ScriptedToolCall],
    usage: ScriptedUsage,
    cut_off: bool,
) -> Vec<u8> {
    let model = request
        .body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-model");
    let body = match request.wire {
        Wire::OpenAi => {
            let mut tool_calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({"id": format!("call_{}", i + 1), "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                })
                .collect();
            // `structured_output: tool`: a forced function call carries the reply as arguments.
            let forced = request
                .body
                .pointer("/tool_choice/function/name")
                .and_then(Value::as_str);
            let mut text = text;
            if let (Some(name), Some(reply), false) = (forced, text, cut_off) {
                tool_calls.push(json!({"id": "call_structured", "type": "function",
                                       "function": {"name": name, "arguments": reply}}));
                text = None;
            }
            let mut message = json!({"role": "assistant", "content": text});
            let calls_made = !tool_calls.is_empty();
            if calls_made {
                message["tool_calls"] = Value::Array(tool_calls);
            }
            json!({
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message,
                             "finish_reason": if cut_off { "length" } else if !calls_made { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": usage.prompt_tokens,
                          "completion_tokens": usage.completion_tokens,
                          "total_tokens": usage.prompt_tokens + usage.completion_tokens,
                          "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}},
            })
        }
        Wire::Anthropic => {
            let forced = request
                .body
                .get("tool_choice")
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("tool"))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str);
            let mut content = Vec::new();
            let structured = forced.filter(|_| !cut_off).and_then(|name| {
                let input = serde_json::from_str::<Value>(text?.trim()).ok()?;
                input.is_object().then_some((name, input))
            });
            match (structured, text) {
                (Some((name, input)), _) => content.push(
                    json!({"type": "tool_use", "id": "toolu_structured", "name": name, "input": input}),
                ),
                (None, Some(text)) => content.push(json!({"type": "text", "text": text})),
                (None, None) => {}
            }
            for (i, c) in calls.iter().enumerate() {
                content.push(json!({"type": "tool_use", "id": format!("toolu_{}", i + 1),
                                    "name": c.name, "input": c.arguments}));
            }
            let stop_reason = if cut_off {
                "max_tokens"
            } else if calls.is_empty() && forced.is_none() {
                "end_turn"
            } else {
                "tool_use"
            };
            json!({
                "id": "msg_scripted",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "usage": {"input_tokens": usage.prompt_tokens - usage.cached_tokens.min(usage.prompt_tokens),
                          "cache_read_input_tokens": usage.cached_tokens,
                          "output_tokens": usage.completion_tokens},
            })
        }
    };
    body.to_string().into_bytes()
}

/// System prompt and message texts of either wire format (strings, text parts, tool results).
fn prompt_texts(body: &Value) -> Vec<String> {
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
        }
    }
    out
}
