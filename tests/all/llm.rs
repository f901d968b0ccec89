//! LLM providers against the scripted LLM server, for both wire formats (OpenAI chat
//! completions and Anthropic messages): tool calls, schema replies, every fault, the budget,
//! auto-detection, and that the API key never shows in logs or errors.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use replan::config::{LlmConfig, ProviderKind};
use replan::llm::{
    Budgeted, ChatRequest, Llm, LlmError, Message, StructuredOptions, ToolSpec, ask_json,
    create_provider,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::llm_server::{LlmServer, Wire};

const KEY: &str = "sk-test-SECRET-KEY-0123456789abcdef";
const KEY_VAR: &str = "REPLAN_TEST_SECRET_KEY";

/// Everything logged (all targets, TRACE) while the guard lives on this thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).to_string()
    }

    fn assert_no_key(&self) {
        let text = self.text();
        assert!(
            !text.contains(KEY),
            "the API key leaked into the logs:\n{text}"
        );
        assert!(
            !text.contains("SECRET-KEY"),
            "part of the key leaked:\n{text}"
        );
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    (logs, guard)
}

pub(crate) fn config(wire: Wire, server: &LlmServer) -> LlmConfig {
    let mut cfg = LlmConfig {
        model: Some("test-model".into()),
        api_key_env: Some(KEY_VAR.into()),
        timeout_seconds: 5,
        max_retries: 2,
        ..Default::default()
    };
    match wire {
        Wire::OpenAi => {
            cfg.provider = ProviderKind::Openai;
            cfg.base_url = Some(server.openai_base());
        }
        Wire::Anthropic => {
            cfg.provider = ProviderKind::Anthropic;
            cfg.base_url = Some(server.url());
        }
    }
    cfg
}

/// [`config`] for tests of unusable replies: under `auto` the Anthropic client drops a forced
/// call answered in text and asks again with a prefill (`auto_drops_*` tests that), so the
/// Anthropic wire asks in `prompt` mode here, streamed with a `{` prefill.
pub(crate) fn text_reply_config(wire: Wire, server: &LlmServer) -> LlmConfig {
    let mut cfg = config(wire, server);
    if wire == Wire::Anthropic {
        cfg.structured_output = replan::config::StructuredOutput::Prompt;
    }
    cfg
}

pub(crate) fn key_env() -> BTreeMap<String, String> {
    BTreeMap::from([(KEY_VAR.to_string(), KEY.to_string())])
}

fn provider(wire: Wire, server: &LlmServer) -> Box<dyn Llm> {
    create_provider(&config(wire, server), &key_env()).unwrap()
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the workspace".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        system: "You are Replan's executor.".into(),
        messages: vec![Message::user(text)],
        purpose: "execute".into(),
        ..Default::default()
    }
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Decision {
    should_replan: bool,
    confidence: f64,
}

const DECISION: &str = r#"{"should_replan": false, "confidence": 0.85}"#;

/// One test per wire format for each check.
macro_rules! both_wires {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            use super::*;
            #[tokio::test]
            async fn openai() {
                super::$check(Wire::OpenAi).await
            }
            #[tokio::test]
            async fn anthropic() {
                super::$check(Wire::Anthropic).await
            }
        }
    )*};
}
pub(crate) use both_wires;

both_wires!(
    tool_calls_round_trip,
    schema_reply,
    retry_after_is_honoured,
    server_error_then_success,
    hang_times_out,
    truncated_body_is_retried,
    prose_gets_one_reask,
    wrong_shape_reasks_once_then_falls_back,
    budget_exhaustion_stops_before_calling,
    wall_time_budget_interrupts_a_hanging_call,
    echoed_key_in_an_error_body_is_redacted,
);

async fn tool_calls_round_trip(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(
        r##"
steps:
  - tool_calls: [ { name: read_file, arguments: { path: README.md } } ]
    usage: { prompt_tokens: 120, completion_tokens: 20 }
  - when: { contains: "# Replan readme" }
    reply: "The readme describes Replan."
    usage: { prompt_tokens: 200, completion_tokens: 10 }
"##,
    );
    let llm = provider(wire, &server);
    let mut req = request("Summarise the readme");
    req.tools = vec![read_file_tool()];
    let first = llm.chat(&req).await.unwrap();
    assert_eq!(first.tool_calls.len(), 1);
    let call = first.tool_calls[0].clone();
    assert_eq!(call.name, "read_file");
    assert_eq!(call.arguments, json!({"path": "README.md"}));
    assert_eq!(first.usage.prompt_tokens, 120);
    assert_eq!(first.usage.completion_tokens, 20);

    let mut assistant = Message::assistant(first.text.clone().unwrap_or_default());
    assistant.tool_calls = first.tool_calls.clone();
    req.messages.push(assistant);
    req.messages
        .push(Message::tool_result(&call.id, "# Replan readme"));
    let second = llm.chat(&req).await.unwrap();
    assert_eq!(second.text.as_deref(), Some("The readme describes Replan."));
    assert!(second.tool_calls.is_empty());

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let (first_body, second_body) = (&sent[0].body, &sent[1].body);
    assert_eq!(first_body["model"], "test-model");
    match wire {
        Wire::OpenAi => {
            assert_eq!(sent[0].target, "/v1/chat/completions");
            assert_eq!(
                sent[0].header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            assert_eq!(first_body["tools"][0]["function"]["name"], "read_file");
            assert_eq!(first_body["messages"][0]["role"], "system");
            let messages = second_body["messages"].as_array().unwrap();
            let assistant = &messages[2];
            assert_eq!(assistant["tool_calls"][0]["id"], call.id.as_str());
            let args: Value = serde_json::from_str(
                assistant["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(args, json!({"path": "README.md"}));
            assert_eq!(
                messages[3],
                json!({"role": "tool", "tool_call_id": call.id, "content": "# Replan readme"})
            );
        }
        Wire::Anthropic => {
            assert_eq!(sent[0].target, "/v1/messages");
            assert_eq!(sent[0].header("x-api-key"), Some(KEY));
            assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(sent[0].header("authorization"), None);
            assert_eq!(
                first_body["system"][0]["cache_control"],
                json!({"type": "ephemeral"})
            );
            assert_eq!(
                first_body["tools"][0]["input_schema"]["required"][0],
                "path"
            );
            let messages = second_body["messages"].as_array().unwrap();
            assert_eq!(messages[1]["content"][0]["type"], "tool_use");
            assert_eq!(messages[1]["content"][0]["id"], call.id.as_str());
            assert_eq!(
                messages[1]["content"][0]["input"],
                json!({"path": "README.md"})
            );
            // The last block is a cache breakpoint: the next turn repeats everything up to it.
            assert_eq!(
                messages[2]["content"][0],
                json!({"type": "tool_result", "tool_use_id": call.id, "content": "# Replan readme",
                       "cache_control": {"type": "ephemeral"}})
            );
        }
    }
    logs.assert_no_key();
}

async fn schema_reply(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(&format!("steps:\n  - reply: '{DECISION}'\n"));
    let llm = provider(wire, &server);
    let reply = ask_json::<Decision>(&*llm, request("Decide"), &StructuredOptions::default())
        .await
        .unwrap();
    assert_eq!(
        reply.value.unwrap(),
        Decision {
            should_replan: false,
            confidence: 0.85
        }
    );
    assert_eq!((reply.calls, reply.reasked), (1, false));
    let body = &server.requests()[0].body;
    match wire {
        Wire::OpenAi => {
            assert_eq!(body["response_format"]["type"], "json_schema");
            assert_eq!(body["response_format"]["json_schema"]["name"], "Decision");
            assert_eq!(body["response_format"]["json_schema"]["strict"], false);
            assert!(
                body["response_format"]["json_schema"]["schema"]["properties"]["confidence"]
                    .is_object()
            );
        }
        Wire::Anthropic => {
            assert_eq!(
                body["tool_choice"],
                json!({"type": "tool", "name": "Decision"})
            );
            let tool = body["tools"].as_array().unwrap().last().unwrap();
            assert_eq!(tool["name"], "Decision");
            assert!(tool["input_schema"]["properties"]["should_replan"].is_object());
        }
    }
    logs.assert_no_key();
}

async fn retry_after_is_honoured(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(
        "steps:\n  - reply: recovered\n    fault: { kind: status, status: 429, retry_after: 1 }\n",
    );
    let llm = provider(wire, &server);
    let reply = llm.chat(&request("hi")).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("recovered"));
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let waited = sent[1].received_at - sent[0].received_at;
    assert!(
        waited >= Duration::from_millis(950),
        "retried after {waited:?}, before Retry-After: 1"
    );
    assert!(
        logs.text().contains("honouring_retry_after=true"),
        "{}",
        logs.text()
    );
    logs.assert_no_key();
}

async fn server_error_then_success(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(
        "steps:\n  - reply: fine now\n    fault: { kind: status, status: 500 }\n",
    );
    let llm = provider(wire, &server);
    assert_eq!(
        llm.chat(&request("hi")).await.unwrap().text.as_deref(),
        Some("fine now")
    );
    assert_eq!(server.requests().len(), 2);
    logs.assert_no_key();
}

async fn hang_times_out(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml("steps:\n  - fault: { kind: hang, times: 10 }\n");
    let mut cfg = config(wire, &server);
    cfg.timeout_seconds = 1;
    cfg.max_retries = 1;
    let llm = create_provider(&cfg, &key_env()).unwrap();
    let started = Instant::now();
    let err = llm.chat(&request("hi")).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { seconds: 1 }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    // Never the identical body again: the budget wrapper re-asks with a lower output limit.
    assert_eq!(
        server.requests().len(),
        1,
        "a time-out is not re-sent as is"
    );
    assert!(err.is_transient());
    logs.assert_no_key();
}

async fn truncated_body_is_retried(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(
        "steps:\n  - reply: whole\n    fault: { kind: truncated }\n  - fault: { kind: truncated, times: 5 }\n",
    );
    let llm = provider(wire, &server);
    assert_eq!(
        llm.chat(&request("hi")).await.unwrap().text.as_deref(),
        Some("whole")
    );
    assert_eq!(server.requests().len(), 2);
    // Truncated every time: the retries run out and the error says the reply was cut.
    let err = llm.chat(&request("again")).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Connection(_) | LlmError::BadReply(_)),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 5, "one try and two retries");
    logs.assert_no_key();
}

async fn prose_gets_one_reask(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(&format!(
        "steps:\n  - reply: '{DECISION}'\n    fault: {{ kind: prose }}\n"
    ));
    let llm = create_provider(&text_reply_config(wire, &server), &key_env()).unwrap();
    let reply = ask_json::<Decision>(&*llm, request("Decide"), &StructuredOptions::default())
        .await
        .unwrap();
    assert!(reply.value.is_ok(), "{:?}", reply.value);
    assert_eq!((reply.calls, reply.reasked), (2, true));
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let texts = sent[1].texts().join("\n");
    assert!(
        texts.contains("Sure! I looked at the issue"),
        "the prose reply is kept: {texts}"
    );
    // The Anthropic reply was prefilled with `{`: broken JSON rather than no JSON.
    let error = match wire {
        Wire::OpenAi => "the reply contains no JSON object",
        Wire::Anthropic => "the reply is not valid JSON",
    };
    assert!(texts.contains(error), "the error is quoted: {texts}");
    assert!(logs.text().contains("re-asking once"), "{}", logs.text());
    logs.assert_no_key();
}

async fn wrong_shape_reasks_once_then_falls_back(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml("steps:\n  - fault: { kind: wrong_shape, times: 2 }\n");
    let llm = provider(wire, &server);
    let reply = ask_json::<Decision>(&*llm, request("Decide"), &StructuredOptions::default())
        .await
        .unwrap();
    let failure = reply.value.unwrap_err();
    assert!(
        failure.error.contains("`should_replan`: missing"),
        "{}",
        failure.error
    );
    let raw: Value = serde_json::from_str(&failure.raw_reply).unwrap();
    assert_eq!(raw["unexpected"], "shape");
    assert_eq!((reply.calls, reply.reasked), (2, true));
    assert_eq!(server.requests().len(), 2, "exactly one re-ask");
    let texts = server.requests()[1].texts().join("\n");
    assert!(
        texts.contains("does not match the expected schema"),
        "{texts}"
    );
    assert!(
        logs.text().contains("the caller falls back"),
        "{}",
        logs.text()
    );
    logs.assert_no_key();
}

async fn budget_exhaustion_stops_before_calling(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(
        "steps:\n  - reply: one\n    usage: { prompt_tokens: 800, completion_tokens: 300 }\n  - reply: two\n",
    );
    let mut cfg = config(wire, &server);
    cfg.budget.max_tokens = Some(1_000);
    cfg.prices.insert(
        "test-model".into(),
        replan::config::Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        },
    );
    let llm = Budgeted::new(create_provider(&cfg, &key_env()).unwrap(), &cfg);
    let first = llm.chat(&request("one")).await.unwrap();
    assert!((first.cost_usd - 0.0069).abs() < 1e-9, "{}", first.cost_usd);
    let err = llm.chat(&request("two")).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::BudgetExhausted(w) if w.contains("max_tokens 1000")),
        "{err:?}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the refused call never reached the server"
    );
    let usage = llm.usage();
    assert_eq!(
        (usage.calls, usage.prompt_tokens, usage.completion_tokens),
        (1, 800, 300)
    );
    assert!((usage.cost_usd - 0.0069).abs() < 1e-9);
    logs.assert_no_key();
}

async fn wall_time_budget_interrupts_a_hanging_call(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml("steps:\n  - fault: { kind: hang }\n");
    let mut cfg = config(wire, &server);
    cfg.timeout_seconds = 30;
    cfg.budget.max_wall_seconds = Some(1);
    let llm = Budgeted::new(create_provider(&cfg, &key_env()).unwrap(), &cfg);
    let started = Instant::now();
    let err = llm.chat(&request("hi")).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::BudgetExhausted(w) if w.contains("max_wall_seconds 1")),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The interrupted attempt reached the server: it counts, as wasted time.
    assert_eq!(server.requests().len(), 1);
    let usage = llm.usage();
    assert_eq!((usage.calls, usage.wasted_calls), (1, 1));
    assert!(usage.wasted_ms >= 900, "{usage:?}");
    logs.assert_no_key();
}

async fn echoed_key_in_an_error_body_is_redacted(wire: Wire) {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml("steps:\n  - fault: { kind: status, status: 401 }\n");
    let llm = provider(wire, &server);
    let err = llm.chat(&request("hi")).await.unwrap_err();
    let shown = err.to_string();
    assert!(matches!(err, LlmError::Http { status: 401, .. }), "{err:?}");
    assert!(shown.contains("***"), "{shown}");
    assert!(shown.contains("the API key was refused"), "{shown}");
    if std::env::var_os("REPLAN_SHOW_TEST_LOGS").is_some() {
        eprintln!("{}", logs.text());
    }
    assert!(!shown.contains(KEY), "{shown}");
    assert!(!format!("{err:?}").contains(KEY));
    assert_eq!(server.requests().len(), 1, "401 is not retried");
    logs.assert_no_key();
}

#[tokio::test]
async fn auto_detection_order_reaches_the_right_endpoint() {
    let (logs, _guard) = capture_logs();
    let server = LlmServer::from_yaml(&format!("steps:\n{}", "  - reply: ok\n".repeat(4)));
    let auto = LlmConfig::default();
    let base = BTreeMap::from([
        ("ANTHROPIC_API_KEY".to_string(), KEY.to_string()),
        ("ANTHROPIC_BASE_URL".to_string(), server.url()),
        ("OPENAI_API_KEY".to_string(), format!("{KEY}-openai")),
        ("OPENAI_BASE_URL".to_string(), server.openai_base()),
        ("AZURE_OPENAI_API_KEY".to_string(), format!("{KEY}-azure")),
        ("AZURE_OPENAI_ENDPOINT".to_string(), server.url()),
        ("AZURE_OPENAI_DEPLOYMENT".to_string(), "planner".to_string()),
        ("GITHUB_ACTIONS".to_string(), "true".to_string()),
        ("GITHUB_TOKEN".to_string(), format!("{KEY}-github")),
    ]);
    let without = |names: &[&str]| {
        let mut env = base.clone();
        for name in names {
            env.remove(*name);
        }
        env
    };

    // Everything set: Anthropic first.
    create_provider(&auto, &base)
        .unwrap()
        .chat(&request("a"))
        .await
        .unwrap();
    // Then OpenAI (with its base URL).
    create_provider(&auto, &without(&["ANTHROPIC_API_KEY"]))
        .unwrap()
        .chat(&request("b"))
        .await
        .unwrap();
    // Then Azure.
    create_provider(&auto, &without(&["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]))
        .unwrap()
        .chat(&request("c"))
        .await
        .unwrap();
    // Then GitHub Models in Actions (its fixed base URL replaced through config for the test).
    let github = LlmConfig {
        base_url: Some(server.openai_base()),
        ..Default::default()
    };
    let env = without(&[
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
    ]);
    let llm = create_provider(&github, &env).unwrap();
    assert_eq!(llm.describe(), "github_models openai/gpt-4o");
    llm.chat(&request("d")).await.unwrap();

    let sent = server.requests();
    assert_eq!(sent[0].target, "/v1/messages");
    assert_eq!(sent[0].header("x-api-key"), Some(KEY));
    assert_eq!(sent[0].body["model"], "claude-sonnet-4-20250514");
    assert_eq!(sent[1].target, "/v1/chat/completions");
    assert_eq!(
        sent[1].header("authorization"),
        Some(format!("Bearer {KEY}-openai").as_str())
    );
    assert_eq!(sent[1].body["model"], "gpt-4o");
    assert_eq!(
        sent[2].target,
        "/openai/deployments/planner/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        sent[2].header("api-key"),
        Some(format!("{KEY}-azure").as_str())
    );
    assert_eq!(sent[2].header("authorization"), None);
    assert_eq!(sent[3].target, "/v1/chat/completions");
    assert_eq!(
        sent[3].header("authorization"),
        Some(format!("Bearer {KEY}-github").as_str())
    );
    assert_eq!(sent[3].body["model"], "openai/gpt-4o");

    // Nothing set: a clear error that lists what to set.
    let err = create_provider(&auto, &BTreeMap::new())
        .err()
        .unwrap()
        .to_string();
    for name in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "GITHUB_TOKEN",
    ] {
        assert!(err.contains(name), "{name} not in: {err}");
    }
    // An explicit provider wins over every credential.
    let explicit = LlmConfig {
        provider: ProviderKind::Ollama,
        model: Some("llama3.1".into()),
        ..Default::default()
    };
    assert_eq!(
        create_provider(&explicit, &base).unwrap().describe(),
        "ollama llama3.1"
    );
    logs.assert_no_key();
}

#[tokio::test]
async fn the_scripted_provider_replays_a_scenario_file_from_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.yml");
    std::fs::write(
        &path,
        format!("steps:\n  - when: {{ purpose: replan_decision }}\n    reply: '{DECISION}'\n"),
    )
    .unwrap();
    let cfg = LlmConfig {
        scenario: Some(path),
        ..Default::default()
    };
    let llm = create_provider(&cfg, &BTreeMap::new()).unwrap();
    let mut req = request("Decide");
    req.purpose = "replan_decision.execution".into();
    let reply = ask_json::<Decision>(&*llm, req, &StructuredOptions::default())
        .await
        .unwrap();
    assert!(reply.value.is_ok());
}

#[test]
fn server_fault_machinery_from_a_sync_test() {
    let server = LlmServer::from_yaml(
        r#"
steps:
  - fault: { kind: status, status: 429, retry_after: 7 }
  - fault: { kind: status, status: 503 }
  - fault: { kind: truncated }
  - fault: { kind: prose }
  - fault: { kind: wrong_shape }
  - fault: { kind: hang }
"#,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = replan::http::builder().unwrap().build().unwrap();
        let url = format!("{}/chat/completions", server.openai_base());
        let post = || {
            client
                .post(&url)
                .header("authorization", "Bearer abc")
                .json(&json!({"messages": [{"role": "user", "content": "x"}]}))
                .timeout(Duration::from_millis(500))
                .send()
        };
        let r = post().await.unwrap();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "7");
        assert_eq!(post().await.unwrap().status(), 503);
        let truncated = post().await.unwrap();
        assert_eq!(truncated.status(), 200);
        assert!(truncated.text().await.is_err(), "the body is cut short");
        let prose: Value = post().await.unwrap().json().await.unwrap();
        assert!(
            prose["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .starts_with("Sure!")
        );
        let shape: Value = post().await.unwrap().json().await.unwrap();
        assert!(
            shape["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .contains("unexpected")
        );
        let hang = post().await.unwrap_err();
        assert!(hang.is_timeout(), "{hang}");
        // Out of steps: a 400 naming the request, so clients do not retry a scripting mistake.
        let r = post().await.unwrap();
        assert_eq!(r.status(), 400);
        assert!(
            r.text()
                .await
                .unwrap()
                .contains("no step left for request #7")
        );
        let missing = client
            .post(format!("{}/nope", server.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status(), 404);
    });
    let sent = server.requests();
    assert_eq!(sent.len(), 7);
    assert_eq!(sent[0].header("Authorization"), Some("Bearer abc"));
    assert_eq!(sent[0].wire, Wire::OpenAi);
    assert_eq!(sent[0].texts(), vec!["x".to_string()]);
}

/// Opt-in: the same checks against a real OpenAI-compatible server.
/// `REPLAN_TEST_LLM_URL` (base URL, e.g. `http://localhost:11434/v1`), optional
/// `REPLAN_TEST_LLM_MODEL` and `REPLAN_TEST_LLM_KEY`.
#[tokio::test]
#[ignore = "needs a real OpenAI-compatible server: set REPLAN_TEST_LLM_URL and run with --ignored"]
async fn real_openai_compatible_server_when_configured() {
    // Run on purpose (`--ignored`) without a server: a failure, never a silent pass.
    let url = std::env::var("REPLAN_TEST_LLM_URL")
        .expect("set REPLAN_TEST_LLM_URL to run the LLM checks against a real server");
    let (logs, _guard) = capture_logs();
    let key = std::env::var("REPLAN_TEST_LLM_KEY").ok();
    let cfg = LlmConfig {
        provider: ProviderKind::Openai,
        base_url: Some(url),
        model: std::env::var("REPLAN_TEST_LLM_MODEL").ok(),
        api_key_env: Some("REPLAN_TEST_LLM_KEY".into()),
        timeout_seconds: 300,
        ..Default::default()
    };
    let env: BTreeMap<String, String> = key
        .clone()
        .map(|k| ("REPLAN_TEST_LLM_KEY".to_string(), k))
        .into_iter()
        .collect();
    let llm = create_provider(&cfg, &env).unwrap();

    // Tool call round trip.
    let mut req = request("Read the file README.md with the read_file tool. Call the tool now.");
    req.tools = vec![read_file_tool()];
    let first = llm.chat(&req).await.unwrap();
    let call = first
        .tool_calls
        .first()
        .unwrap_or_else(|| panic!("no tool call in {first:?}"))
        .clone();
    assert_eq!(call.name, "read_file");
    assert!(
        call.arguments_error().is_none(),
        "{:?}",
        call.arguments_error()
    );
    let mut assistant = Message::assistant(first.text.clone().unwrap_or_default());
    assistant.tool_calls = first.tool_calls.clone();
    req.messages.push(assistant);
    req.messages.push(Message::tool_result(
        &call.id,
        "# Replan\nA planning agent that lives in CI.",
    ));
    let second = llm.chat(&req).await.unwrap();
    assert!(
        second.text.as_deref().is_some_and(|t| !t.trim().is_empty()),
        "{second:?}"
    );

    // Schema reply.
    let reply = ask_json::<Decision>(
        &*llm,
        request("Should the plan be replanned? It is going well. Answer as JSON with should_replan and confidence (0..1)."),
        &StructuredOptions::default(),
    )
    .await
    .unwrap();
    let decision = reply.value.unwrap();
    assert!((0.0..=1.0).contains(&decision.confidence), "{decision:?}");

    if let Some(key) = key.filter(|k| k.len() >= 8) {
        assert!(
            !logs.text().contains(&key),
            "the API key leaked into the logs"
        );
    }
}
