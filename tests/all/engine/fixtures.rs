//! Shared set-up for engine scenarios: a first-match scripted LLM, test tools, a recording
//! reporter, and a runner over an in-memory history.

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use replan::config::Config;
use replan::engine::journal::MemorySink;
use replan::engine::prompts::Prompts;
use replan::engine::{CycleDeps, CycleOutcome, EngineInput, run_cycle};
use replan::history::entry::{EntryBody, RunRequest};
use replan::history::{Entry, SessionState, replay};
use replan::llm::ToolSpec;
use replan::llm::scenario::{Scenario, ScenarioMode, Step};
use replan::llm::{ChatRequest, ChatResponse, Llm, LlmError, ScriptedLlm};
use replan::report::{Notice, Reporter};
use replan::tools::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolRegistry, ToolResult};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

pub const BASE: &str = include_str!("../../scenarios/engine_base.yaml");

/// Answers every request with the first scenario step that matches it. Stateless, so a resumed
/// cycle gets the same answers to the same prompts — like a deterministic model.
pub struct FirstMatch {
    scenario: Scenario,
    requests: Mutex<Vec<ChatRequest>>,
}

impl FirstMatch {
    /// `overrides` (YAML step list of a scenario file) go in front of the base steps.
    pub fn new(overrides: &str) -> Arc<Self> {
        let mut scenario = Scenario::from_yaml(BASE).expect("base scenario");
        if !overrides.trim().is_empty() {
            let extra = Scenario::from_yaml(overrides).expect("override scenario");
            let mut steps: Vec<Step> = extra.steps;
            steps.extend(scenario.steps);
            scenario.steps = steps;
        }
        scenario.mode = ScenarioMode::Matched;
        Arc::new(FirstMatch {
            scenario,
            requests: Mutex::new(vec![]),
        })
    }

    /// Base steps with `steps` in front.
    pub fn with_steps(steps: Vec<Step>) -> Arc<Self> {
        let mut scenario = Scenario::from_yaml(BASE).expect("base scenario");
        let mut all = steps;
        all.extend(scenario.steps);
        scenario.steps = all;
        scenario.mode = ScenarioMode::Matched;
        Arc::new(FirstMatch {
            scenario,
            requests: Mutex::new(vec![]),
        })
    }

    pub fn from_file(name: &str) -> Arc<Self> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/scenarios")
            .join(name);
        Self::new(&std::fs::read_to_string(path).expect("scenario file"))
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn purposes(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.purpose).collect()
    }

    pub fn count(&self, purpose_prefix: &str) -> usize {
        self.purposes()
            .iter()
            .filter(|p| p.starts_with(purpose_prefix))
            .count()
    }
}

#[async_trait]
impl Llm for FirstMatch {
    fn describe(&self) -> String {
        "first-match scripted".into()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        ScriptedLlm::new(self.scenario.clone()).chat(request).await
    }
}

/// Appends `text` to `notes.txt` in its directory.
pub struct NoteTool {
    pub dir: PathBuf,
}

#[async_trait]
impl Tool for NoteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "note".into(),
            description: "Append a line to notes.txt".into(),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        }
    }

    async fn call(&self, arguments: Value) -> ToolResult {
        let Some(text) = arguments.get("text").and_then(Value::as_str) else {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "`text` is required",
            ));
        };
        let path = self.dir.join("notes.txt");
        let mut old = std::fs::read_to_string(&path).unwrap_or_default();
        old.push_str(text);
        old.push('\n');
        std::fs::write(&path, old)
            .map_err(|e| ToolError::new(ToolErrorKind::Failed, e.to_string()))?;
        Ok(ToolOutput {
            content: format!("noted: {text}"),
        })
    }
}

/// Fails its first `failures` calls, then succeeds.
pub struct FlakyTool {
    pub failures: u32,
    pub calls: AtomicU32,
}

#[async_trait]
impl Tool for FlakyTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "flaky".into(),
            description: "A service that is sometimes down".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    async fn call(&self, _arguments: Value) -> ToolResult {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.failures {
            Err(ToolError::new(
                ToolErrorKind::Timeout,
                "service unavailable",
            ))
        } else {
            Ok(ToolOutput {
                content: "flaky ok".into(),
            })
        }
    }
}

/// Records notices and renders a plain checklist from the state on every progress call.
#[derive(Default)]
pub struct RecordingReporter {
    pub notices: Mutex<Vec<Notice>>,
    pub checklists: Mutex<Vec<String>>,
}

impl RecordingReporter {
    pub fn notices(&self) -> Vec<Notice> {
        self.notices.lock().unwrap().clone()
    }

    pub fn last_checklist(&self) -> String {
        self.checklists
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}

/// The checklist as a person reads it: version, each live task ticked or not.
pub fn checklist_text(state: &SessionState) -> String {
    let mut out = format!("Plan v{}\n", state.plan_version);
    if let Some(plan) = &state.plan {
        for t in &plan.task_decomposition.subtasks {
            let mark = match state.task_state(&t.id) {
                replan::plan::TaskState::Done => "x",
                replan::plan::TaskState::ReplacedByReplan => "~",
                replan::plan::TaskState::Blocked => "!",
                _ => " ",
            };
            out.push_str(&format!("- [{mark}] {}: {}\n", t.id, t.description));
        }
    }
    out.push_str(&format!(
        "Progress: {}/{}\n",
        state.tasks_done(),
        state.tasks_total()
    ));
    out
}

#[async_trait]
impl Reporter for RecordingReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        self.checklists.lock().unwrap().push(checklist_text(state));
        state
            .checklist_comment_id
            .is_none()
            .then(|| "checklist-1".to_string())
    }

    async fn notice(&self, _state: &SessionState, notice: &Notice) -> Option<String> {
        self.notices.lock().unwrap().push(notice.clone());
        None
    }

    async fn finish(&self, _state: &SessionState) {}
}

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
}

/// A thread under test: its history, workspace and settings.
pub struct Thread {
    pub entries: Vec<Entry>,
    pub dir: tempfile::TempDir,
    pub config: Config,
    pub reporter: Arc<RecordingReporter>,
    pub flaky_failures: u32,
    pub now: DateTime<Utc>,
}

impl Thread {
    pub fn new() -> Self {
        Thread {
            entries: vec![],
            dir: tempfile::tempdir().unwrap(),
            config: Config::default(),
            reporter: Arc::new(RecordingReporter::default()),
            flaky_failures: 0,
            now: t0(),
        }
    }

    pub fn state(&self) -> SessionState {
        replay(&self.entries)
    }

    pub fn types(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.body.type_name()).collect()
    }

    pub fn bodies(&self) -> impl Iterator<Item = &EntryBody> {
        self.entries.iter().map(|e| &e.body)
    }

    pub fn notes(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("notes.txt")).unwrap_or_default()
    }

    pub fn tools(&self) -> ToolRegistry {
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(NoteTool {
            dir: self.dir.path().to_path_buf(),
        }));
        tools.register(Arc::new(FlakyTool {
            failures: self.flaky_failures,
            calls: AtomicU32::new(0),
        }));
        tools
    }

    pub fn deps(
        &self,
        llm: Arc<dyn Llm>,
        sink: Arc<MemorySink>,
        run_id: &str,
        input: &EngineInput,
    ) -> CycleDeps {
        let now = self.now;
        CycleDeps {
            llm,
            tools: self.tools(),
            reporter: self.reporter.clone(),
            store: sink,
            config: self.config.clone(),
            clock: Arc::new(move || now),
            run_id: run_id.into(),
            prompts: Prompts::built_in(),
            request: request_for(input),
            scope: replan::engine::Scope::Whole,
            workspace: None,
        }
    }

    /// Run one cycle to its end and keep what it appended.
    pub async fn run(&mut self, llm: Arc<dyn Llm>, input: EngineInput) -> CycleOutcome {
        let run_id = format!("run-{}", self.state().runs.len() + 1);
        let sink = Arc::new(MemorySink::new(self.entries.clone()));
        let deps = self.deps(llm, sink.clone(), &run_id, &input);
        let out = run_cycle(&deps, self.state(), &input).await;
        self.entries = sink.entries();
        out.expect("cycle failed")
    }

    pub fn advance(&mut self, minutes: i64) {
        self.now += Duration::minutes(minutes);
    }
}

/// The base scenario's plan reply (two notes), for tests that vary it.
pub fn base_plan_reply() -> String {
    Scenario::from_yaml(BASE).unwrap().steps[0]
        .reply
        .clone()
        .unwrap()
}

/// A step answering requests whose purpose starts with `purpose` (and contain `contains`).
pub fn reply(purpose: &str, contains: Option<&str>, text: &str) -> Step {
    Step {
        when: Some(replan::llm::scenario::When {
            purpose: Some(purpose.into()),
            contains: contains.map(str::to_string),
        }),
        reply: Some(text.into()),
        ..Step::default()
    }
}

pub fn start() -> EngineInput {
    EngineInput::Start {
        title: "Write two notes".into(),
        body: "<issue-body>Please write two notes.</issue-body>".into(),
        author: "alice".into(),
    }
}

pub fn request_for(input: &EngineInput) -> RunRequest {
    let (request, actor, title, text) = match input {
        EngineInput::Start {
            title,
            body,
            author,
        } => (
            "start",
            author.clone(),
            Some(title.clone()),
            Some(body.clone()),
        ),
        EngineInput::Replan { reason, author, .. } => {
            ("command:/replan", author.clone(), None, reason.clone())
        }
        EngineInput::Approve { author, .. } => ("command:/approve", author.clone(), None, None),
        EngineInput::Reject { reason, author } => {
            ("command:/reject", author.clone(), None, reason.clone())
        }
        EngineInput::Stop { author } => ("command:/stop", author.clone(), None, None),
        EngineInput::Resume { author } => ("command:/resume", author.clone(), None, None),
        EngineInput::Status { author } => ("command:/status", author.clone(), None, None),
        EngineInput::Answer { text, author } => {
            ("answer", author.clone(), None, Some(text.clone()))
        }
        EngineInput::Sweep => ("sweep", "replan".into(), None, None),
        EngineInput::Budget { author, .. } => ("command:/budget", author.clone(), None, None),
        EngineInput::Review { round } => ("review", round.reviewer.clone(), None, None),
    };
    RunRequest {
        event: "test".into(),
        actor,
        request: request.into(),
        title,
        text,
        run_url: None,
    }
}

/// Decision records in file order.
pub fn decisions(thread: &Thread) -> Vec<replan::history::entry::DecisionRecord> {
    thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::ReplanDecision(d) => Some((**d).clone()),
            _ => None,
        })
        .collect()
}
