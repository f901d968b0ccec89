//! The bundled sample issue of `replan demo` (scenarios/demo.yaml: one partial replan, one
//! reflection revision), run in-process with a recording model. The demo's scenario matches on
//! the request's purpose, which an HTTP server never sees, hence in-process and not over HTTP.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use replan::config::{Config, PlanningMode};
use replan::engine::demo::{DEMO_SCENARIO, FirstMatchLlm};
use replan::engine::journal::BackendSink;
use replan::engine::prompts::Prompts;
use replan::engine::{CycleDeps, EngineInput, run_cycle};
use replan::forge::local::LocalForge;
use replan::history::HistoryBackend;
use replan::history::entry::{RunRequest, RunStatus};
use replan::history::local::LocalHistory;
use replan::llm::{ChatRequest, ChatResponse, Llm, LlmError};
use replan::tools::registry_builder::{ToolContext, build_registry};
use replan::tools::workspace::Workspace;
use replan::trigger::ThreadRef;

use crate::quiet::Quiet;
use crate::tokens::Prompt;

const TITLE: &str = "Add a CONTRIBUTING.md and link it from the README";
const BODY: &str = "New contributors do not know how to start. Please add a CONTRIBUTING.md \
with the basics and link it from the README.";

struct Recording {
    inner: FirstMatchLlm,
    prompts: Mutex<Vec<Prompt>>,
}

#[async_trait]
impl Llm for Recording {
    fn describe(&self) -> String {
        "recording scripted model".into()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let response = self.inner.chat(request).await;
        let mut text = request.system.clone();
        for m in &request.messages {
            text.push('\n');
            text.push_str(&m.content);
            if !m.tool_calls.is_empty() {
                text.push_str(&serde_json::to_string(&m.tool_calls).unwrap_or_default());
            }
        }
        let extra_chars = serde_json::to_string(&request.tools).map_or(0, |s| s.len())
            + request
                .response_schema
                .as_ref()
                .map_or(0, |s| s.schema.to_string().len());
        let reply_chars = response.as_ref().map_or(0, |r| {
            r.text.as_deref().map_or(0, str::len)
                + r.tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.to_string().len())
                    .sum::<usize>()
        });
        self.prompts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Prompt {
                kind: kind_of_purpose(&request.purpose),
                system_chars: request.system.len(),
                text,
                extra_chars,
                reply_chars,
                folded_reflection_chars: request
                    .messages
                    .last()
                    .and_then(|m| {
                        m.content
                            .find("Reflection due (")
                            .map(|at| m.content.len() - at)
                    })
                    .unwrap_or(0),
            });
        response
    }
}

fn kind_of_purpose(purpose: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("planning", "planning"),
        ("quality_judge", "quality_judge"),
        ("judge", "task_judge"),
        ("reflection", "reflection"),
        ("completion", "completion"),
        ("replan_decision", "replan_decision"),
        ("execute", "execute"),
    ];
    KINDS
        .iter()
        .find(|(prefix, _)| purpose.starts_with(prefix))
        .map_or("other", |(_, kind)| kind)
}

/// One demo cycle; its prompts in request order and the final status.
pub async fn run(mode: PlanningMode) -> (Vec<Prompt>, RunStatus) {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().join("sample-repo");
    std::fs::create_dir_all(root.join("src")).expect("sample dir");
    std::fs::write(
        root.join("README.md"),
        "# sample\n\nA tiny sample project.\n",
    )
    .expect("README");
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )
    .expect("lib.rs");
    let mut config = Config::default();
    config.planning.mode = mode;
    let workspace = Workspace::new(&root).expect("workspace");
    let tools = build_registry(ToolContext::new(workspace, config.tools.clone())).await;
    let thread = ThreadRef::issue(1);
    let forge = Arc::new(LocalForge::new(dir.path().join("forge")));
    forge
        .create_thread(thread, TITLE, BODY, "octocat")
        .await
        .expect("local thread");
    let history = Arc::new(LocalHistory::new(
        dir.path().join("history"),
        config.history.directory.clone(),
    ));
    let loaded = history.load(&thread).await.expect("history");
    let state = replan::history::replay_text(&loaded.text).0;
    let llm = Arc::new(Recording {
        inner: FirstMatchLlm::new(DEMO_SCENARIO).expect("demo scenario"),
        prompts: Mutex::new(Vec::new()),
    });
    let body = format!("<issue-body>\n{BODY}\n</issue-body>");
    let deps = CycleDeps {
        llm: llm.clone(),
        tools: tools.registry,
        reporter: Arc::new(Quiet),
        store: Arc::new(BackendSink {
            backend: history.clone(),
            thread,
        }),
        config,
        clock: Arc::new(chrono::Utc::now),
        run_id: "bench-demo-1".into(),
        prompts: Prompts::with_overrides(&root).expect("prompts"),
        request: RunRequest {
            event: "demo".into(),
            actor: "octocat".into(),
            request: "start".into(),
            title: Some(TITLE.into()),
            text: Some(body.clone()),
            run_url: None,
        },
        scope: replan::engine::Scope::Whole,
        workspace: None,
    };
    let input = EngineInput::Start {
        title: TITLE.into(),
        body,
        author: "octocat".into(),
    };
    let outcome = run_cycle(&deps, state, &input).await.expect("demo cycle");
    tools.mcp.shutdown().await;
    let prompts = std::mem::take(&mut *llm.prompts.lock().unwrap_or_else(|e| e.into_inner()));
    (prompts, outcome.status)
}
