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
use crate::history::HistoryBackend;
use crate::history::entry::{RunRequest, RunStatus};
use crate::history::local::LocalHistory;
use crate::llm::scenario::{Scenario, ScenarioMode};
use crate::llm::{ChatRequest, ChatResponse, Llm, LlmError, ScriptedLlm};
use crate::report::checklist::{self, ChecklistContext};
use crate::report::forge_reporter::ForgeReporter;
use crate::report::markers;
use crate::tools::registry_builder::{ToolContext, build_registry};
use crate::tools::workspace::Workspace;
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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
    run_demo_with(dir, Config::default(), None).await
}

/// The demo under another configuration (e.g. `planning.decisions: separate`), with `llm` in
/// place of the bundled scripted model (e.g. one that records the requests around it).
pub async fn run_demo_with(
    dir: Option<PathBuf>,
    config: Config,
    llm: Option<Arc<dyn Llm>>,
) -> Result<DemoReport, DemoError> {
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
    let state = crate::history::replay_text(&loaded.text).0;
    let reporter = Arc::new(
        ForgeReporter::new(
            forge.clone(),
            thread,
            ChecklistContext::default(),
            Arc::new(|text: &str| text.to_owned()),
        )
        .with_min_interval(Duration::ZERO),
    );
    let input = EngineInput::Start {
        title: ISSUE_TITLE.into(),
        body: format!("<issue-body>\n{ISSUE_BODY}\n</issue-body>"),
        author: "octocat".into(),
    };
    let deps = CycleDeps {
        llm: match llm {
            Some(llm) => llm,
            None => Arc::new(FirstMatchLlm::new(DEMO_SCENARIO)?),
        },
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
        scope: crate::engine::Scope::Whole,
        workspace: None,
    };
    let outcome = run_cycle(&deps, state, &input).await?;
    tools.mcp.shutdown().await;
    let notices = notice_headlines(forge.as_ref(), &thread).await;
    Ok(DemoReport {
        history_file: history.path(&thread),
        workspace: workspace_dir,
        dir,
        status: outcome.status,
        plan_version: outcome.plan_version,
        tasks_done: outcome.tasks_done,
        tasks_total: outcome.tasks_total,
        checklist: without_marker(&checklist::render(
            &outcome.state,
            &ChecklistContext::default(),
        )),
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

/// Comments start with a hidden marker line that means nothing on a terminal.
fn without_marker(body: &str) -> String {
    match body.split_once('\n') {
        Some((first, rest)) if markers::is_ours(first) => rest.to_owned(),
        _ => body.to_owned(),
    }
}

/// One line per notice comment the run posted on the local issue: its heading, and for a
/// decision the model's reasoning.
async fn notice_headlines(forge: &LocalForge, thread: &ThreadRef) -> Vec<String> {
    let comments = forge.comments(thread).await.unwrap_or_default();
    comments
        .iter()
        .filter(|c| !c.body.starts_with(markers::CHECKLIST_MARKER))
        .filter_map(|c| {
            let body = without_marker(&c.body);
            let mut lines = body.lines().map(str::trim).filter(|l| !l.is_empty());
            let heading = lines.next()?.trim_start_matches('#').trim().to_owned();
            let reasoning = body
                .split_once("**Reasoning**:")
                .and_then(|(_, rest)| rest.lines().map(str::trim).find(|l| !l.is_empty()));
            Some(match reasoning {
                Some(r) => format!("{heading}: {r}"),
                None => heading,
            })
        })
        .collect()
}
