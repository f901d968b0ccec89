//! A streamed Messages reply (`stream: true`) rebuilt into the body a non-streamed call returns,
//! read only as far as it is of use: a prefilled JSON reply ends where its object closes (a weak
//! model otherwise goes on in prose up to the output limit, and llama-server enforces nothing),
//! and a forced tool call answered in text ends at that text (the server does not enforce
//! `tool_choice`; the caller asks again without it). Dropping the connection is what stops the
//! server generating.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::http::{EventReader, Flow};
use super::structured::balanced_end;

/// How much of a turn that must call a tool is read when it starts in prose: a call written in
/// the text starts early (`{` or `<tool_call>`), and the caller re-asks for the call alone.
const PROSE_CHARS: usize = 240;

/// A reply whose last [`LOOP_WORDS`] words hold no more than [`LOOP_DISTINCT`] different
/// ones goes round in a loop (`"plan planning plan planning"`, one key over and over): a weak
/// model never gets out of it, and would only fill the output limit. Checked every
/// [`LOOP_CHECK_CHARS`] characters.
const LOOP_WORDS: usize = 48;
const LOOP_DISTINCT: usize = 8;
const LOOP_CHECK_CHARS: usize = 100;

/// Characters per token when the server did not say how many it wrote (a reply read only in
/// part never gets to the final usage event).
const CHARS_PER_TOKEN: usize = 4;

/// Why the reply was read only in part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CutShort {
    /// The prefilled JSON object is closed: the reply is complete.
    JsonComplete,
    /// A forced tool call came back as text: the reply is thrown away.
    AnsweredInText,
    /// A turn that must call a tool began in prose with no call in sight.
    Prose,
    /// The attempt's time limit came first: the reply is cut off there.
    OutOfTime,
    /// The reply went round in a loop: cut off there, as it would be at the output limit.
    Looping,
}

#[derive(Debug, Default)]
pub struct MessageStream {
    /// The start of the reply handed to the model (`{`): the reply is complete once it and the
    /// text form a closed JSON object.
    prefill: Option<String>,
    /// The request forces a tool call: any text means the server does not enforce it.
    forced_call: bool,
    /// The turn must call one of its tools, on a server known not to enforce that: prose is
    /// read only until it is clear no call is coming.
    wants_call: bool,
    /// `message_start`'s message (id, model, input usage).
    message: Map<String, Value>,
    blocks: Vec<Value>,
    /// Tool inputs as they arrive (`input_json_delta`), by block index.
    partial_inputs: BTreeMap<usize, String>,
    stop_reason: Option<String>,
    output_tokens: Option<u64>,
    ended: bool,
    error: Option<String>,
    cut_short: Option<CutShort>,
    /// Text length at the last loop check.
    loop_checked_at: usize,
}

/// The reply text with the prefill in front: the API answers with the continuation only, but
/// llama-server repeats the prefill.
pub fn with_prefill(prefill: &str, text: &str) -> String {
    if text.starts_with(prefill) {
        text.to_string()
    } else {
        format!("{prefill}{text}")
    }
}

/// The end of `text` repeats a few words over and over (see [`LOOP_WORDS`]).
fn repeats_itself(text: &str) -> bool {
    let words: Vec<&str> = text
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .take(LOOP_WORDS)
        .collect();
    words.len() == LOOP_WORDS
        && words
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            <= LOOP_DISTINCT
}

/// Where the JSON object that `text` starts with ends (the index of its closing `}`).
fn closed_object_end(text: &str) -> Option<usize> {
    let start = text.len() - text.trim_start().len();
    (text[start..].starts_with('{'))
        .then(|| balanced_end(text.as_bytes(), start))
        .flatten()
}

impl MessageStream {
    pub fn new(prefill: Option<String>, forced_call: bool) -> Self {
        MessageStream {
            prefill,
            forced_call,
            ..Default::default()
        }
    }

    /// `wants_call`: the turn must call a tool, on a server that does not enforce it.
    pub fn wanting_a_call(self, wants_call: bool) -> Self {
        MessageStream { wants_call, ..self }
    }

    /// The reply was abandoned at the first text of a forced tool call.
    pub fn answered_in_text(&self) -> bool {
        self.cut_short == Some(CutShort::AnsweredInText)
    }

    /// The body a non-streamed call would have returned, with what was read.
    pub fn into_body(mut self) -> Value {
        for (index, raw) in std::mem::take(&mut self.partial_inputs) {
            self.set_input(index, raw);
        }
        let written: usize = self
            .blocks
            .iter()
            .map(|block| match block.get("text").and_then(Value::as_str) {
                Some(text) => text.chars().count(),
                None => block.get("input").map_or(0, |i| i.to_string().len()),
            })
            .sum();
        let output_tokens = self
            .output_tokens
            .unwrap_or_else(|| written.div_ceil(CHARS_PER_TOKEN) as u64);
        let stop_reason = match self.cut_short {
            Some(CutShort::JsonComplete | CutShort::Prose) => Some("end_turn".to_string()),
            Some(CutShort::OutOfTime | CutShort::Looping) => Some("max_tokens".to_string()),
            _ => self.stop_reason,
        };
        let mut body = self.message;
        let usage = body
            .entry("usage")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|usage| {
                usage.insert("output_tokens".into(), json!(output_tokens));
                Value::Object(usage.clone())
            })
            .unwrap_or_else(|| json!({"output_tokens": output_tokens}));
        body.insert("usage".into(), usage);
        body.insert("content".into(), Value::Array(self.blocks));
        body.insert("stop_reason".into(), json!(stop_reason));
        Value::Object(body)
    }

    fn block(&mut self, index: usize) -> &mut Value {
        if self.blocks.len() <= index {
            self.blocks
                .resize(index + 1, json!({"type": "text", "text": ""}));
        }
        &mut self.blocks[index]
    }

    /// A tool input, parsed; kept as its text when it is not JSON (the engine reports it).
    fn set_input(&mut self, index: usize, raw: String) {
        let input = match raw.trim() {
            "" => json!({}),
            text => serde_json::from_str(text).unwrap_or(Value::String(raw)),
        };
        self.block(index)["input"] = input;
    }

    fn text_delta(&mut self, index: usize, delta: &str) -> Flow {
        let block = self.block(index);
        let mut text = block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        text.push_str(delta);
        block["text"] = json!(text);
        if self.forced_call && !text.trim().is_empty() {
            self.cut_short = Some(CutShort::AnsweredInText);
            return Flow::Enough;
        }
        if self.wants_call {
            let started = text.trim_start();
            let call_in_sight = started.contains('{') || started.contains("<tool_call>");
            if !call_in_sight && started.chars().count() >= PROSE_CHARS {
                self.cut_short = Some(CutShort::Prose);
                return Flow::Enough;
            }
        }
        if text.len() >= self.loop_checked_at + LOOP_CHECK_CHARS {
            self.loop_checked_at = text.len();
            if repeats_itself(&text) {
                tracing::warn!(
                    chars = text.len(),
                    "the reply goes round in a loop; it is read as cut off here"
                );
                self.cut_short = Some(CutShort::Looping);
                return Flow::Enough;
            }
        }
        let Some(prefill) = &self.prefill else {
            return Flow::More;
        };
        if !delta.contains('}') {
            return Flow::More;
        }
        let whole = with_prefill(prefill, &text);
        let Some(end) = closed_object_end(&whole) else {
            return Flow::More;
        };
        // What came after the object is not part of the reply.
        let added = whole.len() - text.len();
        text.truncate((end + 1).saturating_sub(added));
        self.blocks[index]["text"] = json!(text);
        self.cut_short = Some(CutShort::JsonComplete);
        Flow::Enough
    }
}

impl EventReader for MessageStream {
    fn event(&mut self, data: &str) -> Flow {
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            return Flow::More;
        };
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                if let Some(message) = event.get("message").and_then(Value::as_object) {
                    self.message = message.clone();
                }
            }
            Some("content_block_start") => {
                let mut block = event
                    .get("content_block")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "text", "text": ""}));
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    block["input"] = json!({});
                }
                *self.block(index) = block;
            }
            Some("content_block_delta") => {
                let delta = event.get("delta").cloned().unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        return self.text_delta(index, text);
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.partial_inputs.entry(index).or_default().push_str(part);
                    }
                    _ => {}
                }
            }
            Some("content_block_stop") => {
                if let Some(raw) = self.partial_inputs.remove(&index) {
                    self.set_input(index, raw);
                }
            }
            Some("message_delta") => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(tokens) = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.output_tokens = Some(tokens);
                }
            }
            Some("message_stop") => self.ended = true,
            Some("error") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                self.error = Some(message.to_string());
            }
            _ => {}
        }
        Flow::More
    }

    fn unfinished(&self) -> Option<String> {
        if let Some(error) = &self.error {
            return Some(format!(
                "the server reported an error in the stream: {error}"
            ));
        }
        (!self.ended && self.cut_short.is_none())
            .then(|| "the streamed reply ended before its `message_stop` event".to_string())
    }

    fn out_of_time(&mut self) -> bool {
        let written = self.blocks.iter().any(|block| {
            block
                .get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| !t.is_empty())
        }) || !self.partial_inputs.is_empty();
        if written && self.cut_short.is_none() {
            self.cut_short = Some(CutShort::OutOfTime);
        }
        self.cut_short == Some(CutShort::OutOfTime)
    }

    fn thrown_away(&self) -> bool {
        self.answered_in_text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(stream: &mut MessageStream, events: &[Value]) -> Vec<Flow> {
        events
            .iter()
            .map(|e| stream.event(&e.to_string()))
            .collect()
    }

    fn text(t: &str) -> Value {
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
    }

    #[test]
    fn a_prefilled_reply_ends_where_its_object_closes_and_counts_what_was_read() {
        let mut stream = MessageStream::new(Some("{".into()), false);
        let start = json!({"type": "message_start", "message": {"model": "m", "content": [],
            "usage": {"input_tokens": 40, "cache_read_input_tokens": 2}}});
        let flows = feed(
            &mut stream,
            &[
                start,
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                text("{\n \"a\": \"} {\\\""),
                text("\", \"b\": [1, {\"c\": 2}]"),
                text("}\n\nHere is more prose {"),
            ],
        );
        assert_eq!(flows.last(), Some(&Flow::Enough));
        assert!(flows[..4].iter().all(|f| *f == Flow::More));
        assert_eq!(stream.unfinished(), None);
        assert!(!stream.thrown_away());
        let body = stream.into_body();
        let text = body["content"][0]["text"].as_str().unwrap();
        assert_eq!(text, "{\n \"a\": \"} {\\\"\", \"b\": [1, {\"c\": 2}]}");
        assert_eq!(body["stop_reason"], "end_turn");
        assert_eq!(body["usage"]["input_tokens"], 40);
        assert_eq!(
            body["usage"]["output_tokens"],
            text.len().div_ceil(4) as u64
        );
    }

    #[test]
    fn a_continuation_without_the_prefill_is_closed_with_it() {
        let mut stream = MessageStream::new(Some("{".into()), false);
        assert_eq!(stream.event(&text("\"ok\": true").to_string()), Flow::More);
        assert_eq!(stream.event(&text("} and more").to_string()), Flow::Enough);
        assert_eq!(
            stream.into_body()["content"][0]["text"],
            "\"ok\": true}",
            "the caller puts the prefill back in front"
        );
    }

    #[test]
    fn a_forced_call_answered_in_text_is_dropped_at_the_first_text() {
        let mut stream = MessageStream::new(None, true);
        assert_eq!(stream.event(&text("  ").to_string()), Flow::More);
        assert_eq!(stream.event(&text("Sure, ").to_string()), Flow::Enough);
        assert!(stream.thrown_away() && stream.answered_in_text());
    }

    #[test]
    fn a_whole_stream_with_a_tool_call_reads_like_the_plain_body() {
        let mut stream = MessageStream::new(None, true);
        let flows = feed(
            &mut stream,
            &[
                json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 5}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "Decision", "input": {}}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"ok\": "}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "true}"}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
            ],
        );
        assert!(flows.iter().all(|f| *f == Flow::More));
        assert!(stream.unfinished().is_some(), "no message_stop yet");
        stream.event(&json!({"type": "message_stop"}).to_string());
        assert_eq!(stream.unfinished(), None);
        let body = stream.into_body();
        assert_eq!(body["content"][0]["input"], json!({"ok": true}));
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(body["usage"]["output_tokens"], 7);
    }

    #[test]
    fn a_turn_that_must_call_a_tool_is_read_until_its_prose_shows_no_call() {
        let mut stream = MessageStream::default().wanting_a_call(true);
        let line = "The plan is to add a hello file. ";
        let flows: Vec<Flow> = (0..10)
            .map(|_| stream.event(&text(line).to_string()))
            .collect();
        let read = flows.iter().position(|f| *f == Flow::Enough).unwrap() + 1;
        assert_eq!(read, PROSE_CHARS.div_ceil(line.len()));
        assert_eq!(stream.into_body()["stop_reason"], "end_turn");
        // A call written in the text is read whole.
        let mut stream = MessageStream::default().wanting_a_call(true);
        stream.event(&text("Let me look: {\"tool\": \"list_files\", ").to_string());
        for i in 0..10 {
            let part = format!("part {i} of what comes after the call, ");
            assert_eq!(stream.event(&text(&part).to_string()), Flow::More);
        }
    }

    #[test]
    fn a_reply_still_being_written_at_the_time_limit_is_cut_off_there() {
        let mut stream = MessageStream::new(Some("{".into()), false);
        assert!(!stream.out_of_time(), "nothing written yet: a time-out");
        stream.event(&text("{\"a\": [1, 2").to_string());
        assert!(stream.out_of_time());
        assert_eq!(stream.unfinished(), None);
        let body = stream.into_body();
        assert_eq!(body["stop_reason"], "max_tokens");
        assert_eq!(body["content"][0]["text"], "{\"a\": [1, 2");
    }

    #[test]
    fn a_json_reply_going_round_in_a_loop_is_cut_off_there() {
        let mut stream = MessageStream::new(Some("{".into()), false);
        let start = "{\"goal\": \"Add a hello file to the repository\", \"steps\": [\"read the README\", \"write hello.md with the word hello\", \"check the file\"], \"notes\": \"";
        assert_eq!(stream.event(&text(start).to_string()), Flow::More);
        let mut flows = Vec::new();
        for _ in 0..40 {
            flows.push(stream.event(&text("plan planning plan ").to_string()));
        }
        let read = flows.iter().position(|f| *f == Flow::Enough).unwrap();
        assert!(read < 25, "{read}");
        assert_eq!(stream.into_body()["stop_reason"], "max_tokens");
        // Varied JSON of the same length is read on.
        let mut stream = MessageStream::new(Some("{".into()), false);
        for i in 0..60 {
            let item = format!("\"item_{i}\": \"value number {i} of the list\", ");
            assert_eq!(stream.event(&text(&item).to_string()), Flow::More);
        }
    }

    #[test]
    fn a_text_reply_going_round_in_a_loop_is_cut_off_too() {
        let mut stream = MessageStream::new(None, false);
        let flows: Vec<Flow> = (0..100)
            .map(|_| stream.event(&text("Accounts-").to_string()))
            .collect();
        assert!(flows.contains(&Flow::Enough));
        assert_eq!(stream.into_body()["stop_reason"], "max_tokens");
    }

    #[test]
    fn an_error_event_makes_the_stream_unfinished() {
        let mut stream = MessageStream::new(None, false);
        stream.event(
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}"#,
        );
        stream.event(r#"{"type": "message_stop"}"#);
        assert!(stream.unfinished().unwrap().contains("busy"));
    }
}
