//! `replan demo`: the whole cycle on a bundled example, with no keys and no network — a sample
//! issue ("Add a CONTRIBUTING.md and link it from the README") on a tiny sample repository, the
//! scripted model of `scenarios/demo.yaml` (one partial replan, one reflection revision), the
//! workspace tools, a local forge and a local history.

use super::EngineInput;
use super::cycle::{CycleDeps, CycleError, run_cycle};
use super::journal::BackendSink;
use super::prompts::Prompts;
use crate::config::Config;
use crate::forge::Forge;
use crate::forge::local::LocalForge;
use crate::history::entry::{RunRequest, RunStatus};
use crate::history::local::LocalHistory;
use crate::history::{HistoryBackend, SessionState, replay};
use crate::llm::scenario::{Scenario, ScenarioMode};
use crate::llm::{ChatRequest, ChatResponse, Llm, LlmError, ScriptedLlm};
use crate::plan::TaskState;
use crate::report::{Notice, Reporter};
use crate::tools::registry_builder::{ToolContext, build_registry};
use crate::tools::workspace::Workspace;
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/demo.yaml");
const ISSUE_TITLE: &str = "Add a CONTRIBUTING.md and link it from the README";
const ISSUE_BODY: &str = "New contributors do not know how to start. Please add a CONTRIBUTING.md \
with the basics and link it from the README.";
const SAMPLE_README: &str = "# sample\n\nA tiny sample project.\n";
const SAMPLE_LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("cannot prepare the demo directory {path}: {message}")]
    Setup { path: String, message: String },
    #[error("the demo cycle failed: {0}")]
    Cycle(#[from] CycleError),
}

#[derive(Debug, Clone)]
pub struct DemoReport {
    pub dir: PathBuf,
    pub workspace: PathBuf,
    pub history_file: PathBuf,
    pub status: RunStatus,
    pub plan_version: u32,
    pub tasks_done: usize,
    pub tasks_total: usize,
    pub checklist: String,
    pub notices: Vec<String>,
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.checklist)?;
        writeln!(f, "Notices posted on the issue:")?;
        for n in &self.notices {
            writeln!(f, "  - {n}")?;
        }
        writeln!(
            f,
            "\nStatus: {:?} — plan v{}, {}/{} tasks done",
            self.status, self.plan_version, self.tasks_done, self.tasks_total
        )?;
        writeln!(f, "Sample repository: {}", self.workspace.display())?;
        write!(f, "History (JSONL):   {}", self.history_file.display())
    }
}

/// Run the demo in `dir` (created if needed) or in a new directory under the system temp dir.
pub async fn run_demo(dir: Option<PathBuf>) -> Result<DemoReport, DemoError> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "replan-demo-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_millis()
        )),
    };
    let workspace_dir = dir.join("sample-repo");
    write_sample(&workspace_dir)?;
    let setup = |e: String| DemoError::Setup {
        path: dir.display().to_string(),
        message: e,
    };
    let workspace = Workspace::new(&workspace_dir).map_err(setup)?;
    let config = Config::default();
    let tools = build_registry(ToolContext::new(workspace, config.tools.clone())).await;

    let thread = ThreadRef::issue(1);
    let forge = Arc::new(LocalForge::new(dir.join("forge")));
    forge
        .create_thread(thread, ISSUE_TITLE, ISSUE_BODY, "octocat")
        .await
        .map_err(|e| setup(e.to_string()))?;
    let history = Arc::new(LocalHistory::new(
        dir.join("history"),
        config.history.directory.clone(),
    ));
    let loaded = history
        .load(&thread)
        .await
        .map_err(|e| setup(e.to_string()))?;
    let state = replay(&crate::history::jsonl::parse(&loaded.text).entries);
    let reporter = Arc::new(DemoReporter {
        forge: forge.clone(),
        thread,
        comment: Mutex::new(state.checklist_comment_id.clone()),
        notices: Mutex::new(vec![]),
    });
    let input = EngineInput::Start {
        title: ISSUE_TITLE.into(),
        body: format!("<issue-body>\n{ISSUE_BODY}\n</issue-body>"),
        author: "octocat".into(),
    };
    let deps = CycleDeps {
        llm: Arc::new(FirstMatchLlm::new(DEMO_SCENARIO)?),
        tools: tools.registry,
        reporter: reporter.clone(),
        store: Arc::new(BackendSink {
            backend: history.clone(),
            thread,
        }),
        config,
        clock: Arc::new(chrono::Utc::now),
        run_id: format!("local-demo-{}", state.runs.len() + 1),
        prompts: Prompts::with_overrides(&workspace_dir).map_err(|e| setup(e.to_string()))?,
        request: RunRequest {
            event: "demo".into(),
            actor: "octocat".into(),
            request: "start".into(),
            title: Some(ISSUE_TITLE.into()),
            text: Some(format!("<issue-body>\n{ISSUE_BODY}\n</issue-body>")),
            run_url: None,
        },
    };
    let outcome = run_cycle(&deps, state, &input).await?;
    tools.mcp.shutdown().await;
    let notices = reporter
        .notices
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    Ok(DemoReport {
        history_file: history.path(&thread),
        workspace: workspace_dir,
        dir,
        status: outcome.status,
        plan_version: outcome.plan_version,
        tasks_done: outcome.tasks_done,
        tasks_total: outcome.tasks_total,
        checklist: render_checklist(&outcome.state),
        notices,
    })
}

fn write_sample(root: &Path) -> Result<(), DemoError> {
    let err = |e: std::io::Error| DemoError::Setup {
        path: root.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(root.join("src")).map_err(err)?;
    if !root.join("README.md").exists() {
        std::fs::write(root.join("README.md"), SAMPLE_README).map_err(err)?;
    }
    std::fs::write(root.join("src/lib.rs"), SAMPLE_LIB).map_err(err)?;
    Ok(())
}

/// Answers each request with the first scenario step that matches it: a deterministic model, so
/// a demo interrupted and run again in the same directory resumes with the same answers.
pub struct FirstMatchLlm {
    scenario: Scenario,
}

impl FirstMatchLlm {
    pub fn new(yaml: &str) -> Result<Self, DemoError> {
        let mut scenario = Scenario::from_yaml(yaml).map_err(|e| DemoError::Setup {
            path: "scenarios/demo.yaml".into(),
            message: e.to_string(),
        })?;
        scenario.mode = ScenarioMode::Matched;
        Ok(FirstMatchLlm { scenario })
    }
}

#[async_trait]
impl Llm for FirstMatchLlm {
    fn describe(&self) -> String {
        "scripted (demo)".into()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        ScriptedLlm::new(self.scenario.clone()).chat(request).await
    }
}

/// The checklist of seed 000 §11.4.2 in its simplest form, for the demo's terminal output and
/// its local comment.
pub fn render_checklist(state: &SessionState) -> String {
    let mut out = if state.plan_version > 1 {
        format!(
            "## 📋 Execution Plan (Revised #{})\n\n",
            state.revision_count()
        )
    } else {
        "## 📋 Execution Plan\n\n".to_string()
    };
    if let Some(snap) = state.plan_history.last()
        && let Some(reason) = &snap.reason
    {
        out.push_str(&format!("**Revision Reason**: {reason}\n\n"));
    }
    if let Some(plan) = &state.plan {
        for t in &plan.task_decomposition.subtasks {
            let mark = if state.task_state(&t.id) == TaskState::Done {
                "x"
            } else {
                " "
            };
            out.push_str(&format!("- [{mark}] **{}**: {}\n", t.id, t.description));
        }
    }
    let total = state.tasks_total().max(1);
    out.push_str(&format!(
        "\n*Progress: {}/{} ({}%) complete | Plan revisions: {}*\n",
        state.tasks_done(),
        state.tasks_total(),
        state.tasks_done() * 100 / total,
        state.revision_count()
    ));
    out
}

struct DemoReporter {
    forge: Arc<LocalForge>,
    thread: ThreadRef,
    comment: Mutex<Option<String>>,
    notices: Mutex<Vec<String>>,
}

fn notice_line(n: &Notice) -> String {
    match n {
        Notice::Decision { phase, decision } => format!(
            "🔄 Plan revision decided in {} ({:.0}%): {}",
            phase.title(),
            decision.confidence * 100.0,
            decision.reasoning
        ),
        Notice::Clarification { questions, .. } => {
            format!("❓ Clarification needed: {}", questions.join(" / "))
        }
        Notice::ApprovalRequest {
            summary,
            confidence,
        } => {
            format!("✋ Approval needed ({:.0}%): {summary}", confidence * 100.0)
        }
        Notice::Override { phase, reason } => {
            format!("⚠️ Decision in {} overridden: {reason}", phase.title())
        }
        Notice::HumanNeeded { reason, .. } => format!("🙋 A person is needed: {reason}"),
        Notice::Failure { message } => format!("❌ Failure: {message}"),
        Notice::Completion { summary } => format!("✅ {summary}"),
        Notice::Info { text } => format!("ℹ️ {text}"),
    }
}

#[async_trait]
impl Reporter for DemoReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        let body = render_checklist(state);
        let existing = self
            .comment
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match existing {
            Some(id) => {
                let _ = self.forge.update_comment(&self.thread, &id, &body).await;
                None
            }
            None => {
                let c = self.forge.post_comment(&self.thread, &body).await.ok()?;
                *self.comment.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.id.clone());
                Some(c.id)
            }
        }
    }

    async fn notice(&self, _state: &SessionState, notice: &Notice) -> Option<String> {
        let line = notice_line(notice);
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.clone());
        self.forge
            .post_comment(&self.thread, &line)
            .await
            .ok()
            .map(|c| c.id)
    }

    async fn finish(&self, _state: &SessionState) {}
}
