//! Bounded, honestly counted LLM calls against the scripted server, in both wire formats: an
//! output limit per purpose on every request, cut-off replies re-asked shorter (never the
//! identical request), every HTTP attempt counted, huge bodies refused, and the structured
//! output mode the user picked.

use replan::config::{LlmConfig, StructuredOutput};
use replan::llm::{
    Budgeted, ChatRequest, Llm, Message, StructuredOptions, StructuredReply, ask_json,
    create_provider,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::llm::{both_wires, config, key_env, text_reply_config};
use crate::support::llm_server::{LlmServer, Wire};

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Decision {
    should_replan: bool,
    confidence: f64,
}

const DECISION: &str = r#"{"should_replan": false, "confidence": 0.85}"#;

fn budgeted(cfg: &LlmConfig) -> Budgeted {
    Budgeted::new(create_provider(cfg, &key_env()).unwrap(), cfg)
}

fn request(purpose: &str) -> ChatRequest {
    ChatRequest {
        system: "You are Replan.".into(),
        messages: vec![Message::user("Decide whether to replan; answer as JSON.")],
        purpose: purpose.into(),
        ..Default::default()
    }
}

/// A decision asked for with an output limit of its own.
async fn ask_with_limit(llm: &Budgeted, purpose: &str, limit: u32) -> StructuredReply<Decision> {
    let mut asked = request(purpose);
    asked.max_tokens = Some(limit);
    ask_json::<Decision>(llm, asked, &StructuredOptions::default())
        .await
        .unwrap()
}

fn max_tokens(body: &Value) -> Option<u64> {
    body.get("max_tokens").and_then(Value::as_u64)
}

both_wires!(
    every_request_carries_the_output_limit_of_its_purpose,
    a_cut_off_reply_is_reasked_shorter_with_a_higher_limit,
    a_cut_off_reply_at_the_ceiling_is_invalid_without_a_retry,
    usage_counts_every_attempt_the_server_saw,
    a_timed_out_call_is_reasked_with_a_lower_limit_and_both_are_counted,
    a_huge_reply_is_refused_as_too_large,
    a_huge_chunked_reply_is_refused_as_too_large,
    prompt_mode_sends_no_schema_machinery_and_reads_json_from_prose,
    tool_mode_forces_a_call_whose_input_is_the_reply,
);

async fn every_request_carries_the_output_limit_of_its_purpose(wire: Wire) {
    let server = LlmServer::from_yaml("steps:\n  - reply: a\n  - reply: b\n  - reply: c\n");
    let mut cfg = config(wire, &server);
    cfg.max_output_tokens.decision = 300;
    let llm = budgeted(&cfg);
    for purpose in ["replan_decision.execution", "execute.t1", "planning"] {
        llm.chat(&request(purpose)).await.unwrap();
    }
    let limits: Vec<Option<u64>> = server
        .requests()
        .iter()
        .map(|r| max_tokens(&r.body))
        .collect();
    assert_eq!(limits, vec![Some(300), Some(1024), Some(2048)]);
}

async fn a_cut_off_reply_is_reasked_shorter_with_a_higher_limit(wire: Wire) {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: cut_off }}\n  - reply: '{DECISION}'\n"
    ));
    let cfg = text_reply_config(wire, &server);
    let llm = budgeted(&cfg);
    let reply = ask_with_limit(&llm, "replan_decision.execution", 256).await;
    assert_eq!(reply.value.unwrap().confidence, 0.85);
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_ne!(
        sent[0].body, sent[1].body,
        "a cut-off reply was retried identically"
    );
    assert_eq!(max_tokens(&sent[0].body), Some(256));
    assert_eq!(max_tokens(&sent[1].body), Some(512));
    let texts = sent[1].texts().join("\n");
    assert!(texts.contains("cut off at the output limit"), "{texts}");
    assert!(
        !texts.contains("The plan looks fine because the first"),
        "the cut-off text is not sent back to be continued: {texts}"
    );
    assert_eq!(reply.calls, 2);
    assert_eq!(reply.attempts.wasted_calls, 1);
    assert_eq!(llm.usage().calls, 2);
}

async fn a_cut_off_reply_at_the_ceiling_is_invalid_without_a_retry(wire: Wire) {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: cut_off }}\n  - reply: '{DECISION}'\n"
    ));
    let llm = budgeted(&text_reply_config(wire, &server));
    let reply = ask_with_limit(&llm, "planning", 4096).await;
    let failure = reply.value.unwrap_err();
    assert!(failure.error.contains("cut off"), "{}", failure.error);
    assert!(failure.error.contains("no room"), "{}", failure.error);
    assert_eq!(server.requests().len(), 1);
    assert_eq!((reply.calls, reply.attempts.wasted_calls), (1, 1));
}

async fn usage_counts_every_attempt_the_server_saw(wire: Wire) {
    let server = LlmServer::from_yaml(
        "steps:\n  - reply: ok\n    usage: { prompt_tokens: 10, completion_tokens: 2 }\n    fault: { kind: status, status: 503, times: 2 }\n  - fault: { kind: status, status: 500, times: 3 }\n",
    );
    let llm = budgeted(&config(wire, &server));
    let ok = llm.chat(&request("execute.t1")).await.unwrap();
    assert_eq!(ok.attempts.calls, 3);
    assert_eq!(ok.attempts.wasted_calls, 2);
    llm.chat(&request("execute.t1")).await.unwrap_err();
    let usage = llm.usage();
    assert_eq!(usage.calls as usize, server.requests().len());
    // max_retries 2: three attempts each.
    assert_eq!(usage.calls, 3 + 3);
    assert_eq!(usage.wasted_calls, 2 + 3);
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (10, 2));
    assert!(usage.wasted_ms <= usage.wall_ms);
}

async fn a_timed_out_call_is_reasked_with_a_lower_limit_and_both_are_counted(wire: Wire) {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: hang }}\n  - reply: '{DECISION}'\n"
    ));
    let mut cfg = config(wire, &server);
    cfg.timeout_seconds = 1;
    let llm = budgeted(&cfg);
    let reply = ask_with_limit(&llm, "replan_decision.execution", 400).await;
    assert_eq!(reply.value.unwrap().confidence, 0.85);
    let sent = server.requests();
    assert_eq!(sent.len(), 2, "one timed-out call and one re-ask");
    assert_ne!(
        sent[0].body, sent[1].body,
        "a timed-out call was re-sent identically"
    );
    assert_eq!(max_tokens(&sent[0].body), Some(400));
    assert_eq!(max_tokens(&sent[1].body), Some(200));
    let usage = llm.usage();
    assert_eq!(usage.calls, 2, "the timed-out attempt is a call too");
    assert_eq!(usage.wasted_calls, 1);
    assert!(usage.wasted_ms >= 1000, "{usage:?}");
    assert_eq!(reply.calls, 2);
}

async fn huge_reply_is_refused(wire: Wire, chunked: bool) {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: huge, bytes: 314572800, chunked: {chunked} }}\n"
    ));
    let llm = budgeted(&config(wire, &server));
    let started = std::time::Instant::now();
    let error = llm.chat(&request("planning")).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("too large"), "{message}");
    assert!(message.contains("llm.max_reply_bytes"), "{message}");
    assert_eq!(
        server.requests().len(),
        1,
        "a too-large reply is not retried"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the body was read to the end: {:?}",
        started.elapsed()
    );
}

async fn a_huge_reply_is_refused_as_too_large(wire: Wire) {
    huge_reply_is_refused(wire, false).await
}

async fn a_huge_chunked_reply_is_refused_as_too_large(wire: Wire) {
    huge_reply_is_refused(wire, true).await
}

async fn prompt_mode_sends_no_schema_machinery_and_reads_json_from_prose(wire: Wire) {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - reply: 'Sure, here it is: {DECISION} Hope that helps.'\n"
    ));
    let mut cfg = config(wire, &server);
    cfg.structured_output = StructuredOutput::Prompt;
    let llm = budgeted(&cfg);
    let reply = ask_json::<Decision>(&llm, request("judge.t1"), &StructuredOptions::default())
        .await
        .unwrap();
    assert!(!reply.value.unwrap().should_replan);
    let body = &server.requests()[0].body;
    for key in ["response_format", "tool_choice", "tools"] {
        assert!(body.get(key).is_none(), "{key} sent in prompt mode: {body}");
    }
}

async fn tool_mode_forces_a_call_whose_input_is_the_reply(wire: Wire) {
    let server = LlmServer::from_yaml(&format!("steps:\n  - reply: '{DECISION}'\n"));
    let mut cfg = config(wire, &server);
    cfg.structured_output = StructuredOutput::Tool;
    let llm = budgeted(&cfg);
    let opts = StructuredOptions {
        tool_names: vec!["read_file".into()],
        ..Default::default()
    };
    let reply = ask_json::<Decision>(&llm, request("judge.t1"), &opts)
        .await
        .unwrap();
    assert_eq!(reply.value.unwrap().confidence, 0.85);
    let body = &server.requests()[0].body;
    assert!(body.get("response_format").is_none(), "{body}");
    let (forced, schema) = match wire {
        Wire::OpenAi => (
            body.pointer("/tool_choice/function/name"),
            body.pointer("/tools/0/function/parameters"),
        ),
        Wire::Anthropic => (
            body.pointer("/tool_choice/name"),
            body.pointer("/tools/0/input_schema"),
        ),
    };
    assert_eq!(forced.and_then(Value::as_str), Some("Decision"), "{body}");
    let confidence = &schema.unwrap()["properties"]["confidence"];
    assert_eq!(
        (
            confidence["minimum"].as_f64(),
            confidence["maximum"].as_f64()
        ),
        (Some(0.0), Some(1.0)),
        "{body}"
    );
}

#[tokio::test]
async fn json_object_mode_asks_for_a_json_object() {
    let server = LlmServer::from_yaml(&format!("steps:\n  - reply: '{DECISION}'\n"));
    let mut cfg = config(Wire::OpenAi, &server);
    cfg.structured_output = StructuredOutput::JsonObject;
    let llm = budgeted(&cfg);
    let reply = ask_json::<Decision>(&llm, request("judge.t1"), &StructuredOptions::default())
        .await
        .unwrap();
    assert!(reply.value.is_ok());
    let body = &server.requests()[0].body;
    assert_eq!(
        body["response_format"],
        serde_json::json!({"type": "json_object"})
    );
}

#[test]
fn structured_output_accepts_the_old_booleans_and_names_the_modes() {
    let parse = |yaml: &str| serde_saphyr::from_str::<LlmConfig>(yaml);
    assert_eq!(
        parse("structured_output: true").unwrap().structured_output,
        StructuredOutput::Auto
    );
    assert_eq!(
        parse("structured_output: false").unwrap().structured_output,
        StructuredOutput::Prompt
    );
    assert_eq!(
        parse("structured_output: json_schema")
            .unwrap()
            .structured_output,
        StructuredOutput::JsonSchema
    );
    let error = parse("structured_output: xml").unwrap_err().to_string();
    assert!(error.contains("json_object"), "{error}");
}

/// The server notices a hang-up at its next write; the client's runtime closes the connection
/// once it gets to run, so this waits without blocking it.
async fn hang_ups_after_a_moment(server: &LlmServer) -> usize {
    for _ in 0..100 {
        if server.hang_ups() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.hang_ups()
}

/// Asks for a planning decision from a server that rambles: the ramble goes on for 30 s unless
/// the client hangs up, so an answer within 10 s means it stopped reading.
async fn ask_past_a_ramble(llm: &Budgeted) -> StructuredReply<Decision> {
    let started = std::time::Instant::now();
    let reply = ask_json::<Decision>(llm, request("planning"), &StructuredOptions::default())
        .await
        .unwrap();
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    reply
}

/// A weak model closes its JSON and then rambles on up to the output limit: a streamed,
/// prefilled reply is read only until its object closes, the connection is dropped (the server
/// stops generating), and the reply counts as one complete call, its tokens estimated.
#[tokio::test]
async fn a_streamed_reply_is_read_until_its_json_closes_and_the_rest_is_dropped() {
    let server = LlmServer::from_yaml("steps:\n  - fault: { kind: ramble }\n");
    let mut cfg = config(Wire::Anthropic, &server);
    cfg.structured_output = StructuredOutput::Prompt;
    let llm = budgeted(&cfg);
    let reply = ask_past_a_ramble(&llm).await;
    assert_eq!(reply.value.unwrap().confidence, 0.9);
    assert_eq!((reply.calls, reply.reasked), (1, false));
    assert_eq!(hang_ups_after_a_moment(&server).await, 1);
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(max_tokens(&sent[0].body), Some(2048));
    let messages = sent[0].body["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["role"],
        "assistant",
        "the `{{` prefill"
    );
    let usage = llm.usage();
    assert_eq!((usage.calls, usage.wasted_calls), (1, 0));
    // Input tokens as the server said, output tokens estimated from what was read.
    assert_eq!(usage.prompt_tokens, 100);
    assert!(usage.completion_tokens > 0);
}

/// llama-server's Messages endpoint answers a forced tool call in text: under `auto` the first
/// text ends the call (counted, as wasted), and the same request is asked again the way that
/// works there (a `{` prefill, streamed), which `auto` keeps for the rest of the run.
#[tokio::test]
async fn auto_drops_a_forced_call_answered_in_text_and_asks_with_a_prefill() {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: ramble }}\n  - reply: '{DECISION}'\n"
    ));
    let llm = budgeted(&config(Wire::Anthropic, &server));
    let reply = ask_past_a_ramble(&llm).await;
    assert_eq!(reply.value.unwrap().confidence, 0.85);
    assert_eq!(hang_ups_after_a_moment(&server).await, 1);
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body["tool_choice"]["name"], "Decision");
    assert_eq!(sent[0].body["stream"], true);
    assert!(
        sent[1].body.get("tool_choice").is_none(),
        "{}",
        sent[1].body
    );
    assert_eq!(sent[1].body["stream"], true);
    let last = sent[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["text"], "{");
    let usage = llm.usage();
    assert_eq!((usage.calls, usage.wasted_calls), (2, 1));
    assert_eq!(llm.structured_output(), Some(StructuredOutput::Prompt));
}

/// A reply whose JSON never closes, still being written when `llm.timeout_seconds` comes, is kept
/// as cut off there (what was read is counted), not thrown away as a time-out: the cut-off rule
/// applies (one shorter re-ask with a higher limit), not the time-out's halved limit.
#[tokio::test]
async fn a_streamed_reply_still_being_written_at_the_time_limit_is_cut_off_there() {
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - fault: {{ kind: ramble_open }}\n  - reply: '{DECISION}'\n"
    ));
    let mut cfg = config(Wire::Anthropic, &server);
    cfg.structured_output = StructuredOutput::Prompt;
    cfg.timeout_seconds = 2;
    let llm = budgeted(&cfg);
    let reply = ask_with_limit(&llm, "replan_decision.execution", 256).await;
    assert_eq!(reply.value.unwrap().confidence, 0.85);
    assert_eq!(hang_ups_after_a_moment(&server).await, 1);
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(max_tokens(&sent[1].body), Some(512), "raised, not halved");
    let texts = sent[1].texts().join("\n");
    assert!(texts.contains("cut off at the output limit"), "{texts}");
    assert_eq!((reply.calls, reply.attempts.wasted_calls), (2, 1));
    assert!(reply.attempts.wasted_ms >= 2000, "{:?}", reply.attempts);
    let usage = llm.usage();
    assert_eq!(usage.calls, 2);
    assert!(usage.completion_tokens > 0, "what was read is counted");
}
