//! Legacy mode (seed 001 §7.5, `planning.enabled: false`): no plan, no decisions — one plain
//! tool-calling loop on the request, then a completion entry.

use super::execute::{MAX_TOOL_TURNS, arguments_digest};
use crate::engine::batch::Batch;
use crate::engine::context;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::history::entry::{ActionOutcome, EntryBody, RunStatus};
use crate::llm::Message;
use crate::plan::{Completion, CompletionSummary};
use crate::report::Notice;

/// The plain loop has no plan to bound it, so it gets a few planning-sized attempts' worth of
/// turns before it must stop and summarise.
const LEGACY_TURNS: usize = MAX_TOOL_TURNS * 3;

pub async fn run(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let prompt = cx.render(
        "legacy",
        &[
            ("task_request", &context::task_request(&batch.state)),
            ("past_history", &context::past_history(&batch.state)),
        ],
    )?;
    let mut request = cx.request("legacy", prompt)?;
    request.tools = cx.deps.tools.specs();
    let mut summary = format!("(stopped after {LEGACY_TURNS} model turns)");
    let mut failed = 0u32;
    for _ in 0..LEGACY_TURNS {
        let response = cx.deps.llm.chat(&request).await?;
        batch.usage_of(&response.model, response.totals());
        if response.tool_calls.is_empty() {
            summary = response.text.unwrap_or_default();
            break;
        }
        request.messages.push(response.as_message());
        for call in &response.tool_calls {
            let t0 = (cx.deps.clock)();
            let result = cx.deps.tools.call(&call.name, call.arguments.clone()).await;
            let (outcome, content) = match result {
                Ok(out) => (ActionOutcome::Ok, out.content),
                Err(e) => {
                    failed += 1;
                    (
                        ActionOutcome::FAILED,
                        format!("ERROR ({:?}): {}", e.kind, e.message),
                    )
                }
            };
            batch.push(EntryBody::Action {
                task_id: "legacy".into(),
                tool: call.name.clone(),
                arguments_digest: arguments_digest(&call.arguments),
                outcome,
                summary: content.chars().take(200).collect(),
                duration_ms: ((cx.deps.clock)() - t0).num_milliseconds().max(0) as u64,
            });
            request
                .messages
                .push(Message::tool_result(call.id.clone(), content));
        }
    }
    batch.push(EntryBody::Completion {
        completion: Box::new(Completion {
            phase: "completion".into(),
            status: None,
            summary: CompletionSummary {
                goal_achieved: true,
                tasks_completed: 1,
                tasks_failed: failed.min(1),
                key_outcomes: vec![summary.clone()],
                ..CompletionSummary::default()
            },
            done: true,
            comment: None,
            review_threads: vec![],
        }),
    });
    Ok(StepEffects {
        notices: vec![Notice::Completion { summary }],
        end: Some(RunStatus::Completed),
    })
}
