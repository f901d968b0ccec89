//! Issue 15: every prompt template has a token budget (`engine::prompts::BUDGETS`), and the
//! requests the sample issue (`replan demo`) sends stay within them in every planning and
//! decision mode. Tokens are counted as the bench counts them: 4 characters a token over the
//! system prompt, the messages, tool calls, tool specs and the response schema.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use replan::config::{Config, DecisionMode, PlanningMode};
use replan::engine::demo::{DEMO_SCENARIO, FirstMatchLlm, run_demo_with};
use replan::engine::prompts::{BUDGETS, template_of_purpose};
use replan::llm::{ChatRequest, ChatResponse, Llm, LlmError};

struct Recording {
    inner: FirstMatchLlm,
    /// (purpose, tokens) of every request.
    seen: Mutex<Vec<(String, usize)>>,
}

fn request_tokens(request: &ChatRequest) -> usize {
    let mut chars = request.system.len();
    for m in &request.messages {
        chars += m.content.len();
        if !m.tool_calls.is_empty() {
            chars += serde_json::to_string(&m.tool_calls).unwrap().len();
        }
    }
    if !request.tools.is_empty() {
        chars += serde_json::to_string(&request.tools).unwrap().len();
    }
    if let Some(schema) = &request.response_schema {
        chars += schema.schema.to_string().len();
    }
    chars.div_ceil(4)
}

#[async_trait]
impl Llm for Recording {
    fn describe(&self) -> String {
        "recording".into()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen
            .lock()
            .unwrap()
            .push((request.purpose.clone(), request_tokens(request)));
        self.inner.chat(request).await
    }
}

async fn largest_per_template(config: Config) -> BTreeMap<&'static str, usize> {
    let llm = Arc::new(Recording {
        inner: FirstMatchLlm::new(DEMO_SCENARIO).unwrap(),
        seen: Mutex::new(Vec::new()),
    });
    let dir = tempfile::tempdir().unwrap();
    run_demo_with(
        Some(dir.path().to_path_buf()),
        config.clone(),
        Some(llm.clone()),
    )
    .await
    .unwrap();
    let mut out = BTreeMap::new();
    for (purpose, tokens) in llm.seen.lock().unwrap().iter() {
        let template = template_of_purpose(purpose, &config)
            .unwrap_or_else(|| panic!("no template is known for the purpose `{purpose}`"));
        let max = out.entry(template).or_insert(0);
        *max = (*max).max(*tokens);
    }
    out
}

#[tokio::test]
async fn every_request_of_the_sample_issue_stays_within_its_templates_budget() {
    let mut over = Vec::new();
    for mode in [PlanningMode::SingleCall, PlanningMode::PerPhase] {
        for decisions in [DecisionMode::Folded, DecisionMode::Separate] {
            let mut config = Config::default();
            config.planning.mode = mode;
            config.planning.decisions = decisions;
            for (template, tokens) in largest_per_template(config).await {
                let budget = BUDGETS
                    .iter()
                    .find(|(name, _)| *name == template)
                    .map(|(_, b)| *b)
                    .unwrap_or_else(|| panic!("prompts/{template}.md has no budget"));
                eprintln!("{mode:?}/{decisions:?}: {template} {tokens} of {budget}");
                if tokens > budget {
                    over.push(format!(
                        "{template}: {tokens} > {budget} ({mode:?}, {decisions:?})"
                    ));
                }
            }
        }
    }
    assert!(over.is_empty(), "over budget: {over:#?}");
}

#[test]
fn the_issue_15_limits_hold_for_planning_and_reflection() {
    let budget = |name: &str| BUDGETS.iter().find(|(n, _)| *n == name).unwrap().1;
    assert!(budget("planning_single") < 2_000 && budget("planning_phase") < 2_000);
    assert!(budget("reflection") < 500 && budget("reflection_folded") < 500);
}
