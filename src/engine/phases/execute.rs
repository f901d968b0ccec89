//! Phase 4 (seed 001 §2.4): one attempt at a subtask — a tool-calling loop over the registry, an
//! execution decision after every action (seed 000 §7), reflection on errors and every
//! `trigger_interval` actions, then the task judge (seed 004). The attempt's entries are appended
//! together, so an attempt cut short by a killed job is simply run again on resume.

use super::{judge, reflect};
use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cycle::{Cx, CycleError, StepEffects};
use crate::engine::decide::{DecisionAsk, DecisionOutcome, decide, decision_format};
use crate::history::entry::{ActionOutcome, EntryBody, RunStatus};
use crate::llm::{ChatRequest, Message, Role};
use crate::plan::{ReplanTrigger, TaskState};
use crate::tools::ToolErrorKind;
use sha2::{Digest, Sha256};

/// Model turns per attempt. Each turn is a paid call; a subtask that needs more is better judged
/// (continue / split) than left looping, and NEEDS_CONTINUATION gives it another attempt.
pub const MAX_TOOL_TURNS: usize = 12;

/// Longest tool output kept in an action's summary (history lines stay small and secret-poor).
const SUMMARY_CHARS: usize = 200;

/// How one attempt ended before the judge.
enum AttemptEnd {
    /// The model stopped calling tools (or ran out of turns): judge the subtask.
    Judge(String),
    /// A replan, a pause or a hand-off was recorded: no judge.
    Stop(Option<RunStatus>),
}

pub async fn attempt(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
) -> Result<StepEffects, CycleError> {
    let mut fx = StepEffects::default();
    let end = tool_loop(cx, batch, task_id, &mut fx).await?;
    match end {
        AttemptEnd::Stop(status) => {
            fx.end = status;
            Ok(fx)
        }
        AttemptEnd::Judge(report) => {
            judge::judge_task(cx, batch, task_id, &report, &mut fx).await?;
            Ok(fx)
        }
    }
}

async fn tool_loop(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
    fx: &mut StepEffects,
) -> Result<AttemptEnd, CycleError> {
    let plan = batch.state.plan.clone().unwrap_or_default();
    let version = batch.state.plan_version;
    let Some(task) = plan.subtask(task_id).cloned() else {
        return Err(CycleError::Fatal(format!(
            "subtask {task_id} is not in the plan"
        )));
    };
    let planned: Vec<_> = plan
        .action_plan
        .actions
        .iter()
        .filter(|a| a.task_id == task_id)
        .cloned()
        .collect();
    let done: Vec<String> = plan
        .task_decomposition
        .subtasks
        .iter()
        .filter(|t| batch.state.task_state(&t.id) == TaskState::Done)
        .map(|t| format!("{}: {}", t.id, t.description))
        .collect();
    let notes = match batch.state.continuations.get(task_id) {
        Some(n) => format!(
            "This is continuation #{n}: the previous attempt did not finish the subtask. {}",
            batch
                .state
                .tasks
                .get(task_id)
                .and_then(|t| t.note.clone())
                .unwrap_or_default()
        ),
        None => "(first attempt)".to_string(),
    };
    let prompt = cx.render(
        "execute",
        &[
            ("task_id", task_id),
            ("task_description", &task.description),
            ("planned_actions", &json(&planned)),
            ("goal", &plan.goal_understanding.main_objective),
            ("done_tasks", &context::bullet_list(&done)),
            ("attempt_notes", &notes),
        ],
    )?;
    let mut request = cx.request(&format!("execute.{task_id}"), prompt)?;
    request.tools = cx.deps.tools.specs();
    let mut consecutive_errors = 0u32;
    for _turn in 0..MAX_TOOL_TURNS {
        let response = cx.deps.llm.chat(&request).await?;
        batch.usage(response.totals());
        if response.tool_calls.is_empty() {
            return Ok(AttemptEnd::Judge(response.text.unwrap_or_default()));
        }
        request.messages.push(Message {
            role: Role::Assistant,
            content: response.text.clone().unwrap_or_default(),
            tool_calls: response.tool_calls.clone(),
            tool_call_id: None,
        });
        for call in &response.tool_calls {
            let t0 = (cx.deps.clock)();
            let result = cx.deps.tools.call(&call.name, call.arguments.clone()).await;
            let duration_ms = ((cx.deps.clock)() - t0).num_milliseconds().max(0) as u64;
            let (outcome, content, error) = match &result {
                Ok(out) => (ActionOutcome::Ok, out.content.clone(), None),
                Err(e) => (
                    outcome_of(e.kind),
                    format!("ERROR ({:?}): {}", e.kind, e.message),
                    Some(e.clone()),
                ),
            };
            batch.push(EntryBody::Action {
                task_id: task_id.to_string(),
                tool: call.name.clone(),
                arguments_digest: arguments_digest(&call.arguments),
                outcome,
                summary: content.chars().take(SUMMARY_CHARS).collect(),
                duration_ms,
            });
            request
                .messages
                .push(Message::tool_result(call.id.clone(), content.clone()));
            consecutive_errors = if error.is_some() {
                consecutive_errors + 1
            } else {
                0
            };

            // Seed 000 §7: the execution decision after every action.
            let outcome = execution_decision(
                cx,
                batch,
                &request,
                &call.name,
                &content,
                error.as_ref(),
                consecutive_errors,
                fx,
            )
            .await?;
            match outcome {
                DecisionOutcome::Continue => {}
                DecisionOutcome::Retry => request.messages.push(Message::user(
                    "The last action should be retried: call the tool again (the error looked transient).",
                )),
                DecisionOutcome::Replan(_) => return Ok(AttemptEnd::Stop(None)),
                DecisionOutcome::Waiting(status) => return Ok(AttemptEnd::Stop(Some(status))),
                DecisionOutcome::HumanNeeded => {
                    return Ok(AttemptEnd::Stop(Some(RunStatus::RequiresHumanIntervention)));
                }
            }

            // Seed 001 §7.4.1 `_should_reflect`: on error, and every `trigger_interval` actions.
            let rcfg = &cx.cfg().planning.reflection;
            let interval = u64::from(rcfg.trigger_interval);
            let reason = if error.is_some() && rcfg.trigger_on_error {
                Some("a tool returned an error")
            } else if interval > 0 && batch.state.actions_executed.is_multiple_of(interval) {
                Some("periodic reflection")
            } else {
                None
            };
            if rcfg.enabled
                && let Some(reason) = reason
            {
                match reflect::reflect(cx, batch, task_id, reason, fx).await? {
                    reflect::ReflectEnd::Continue => {}
                    reflect::ReflectEnd::Revised => return Ok(AttemptEnd::Stop(None)),
                    reflect::ReflectEnd::HumanNeeded => {
                        return Ok(AttemptEnd::Stop(Some(RunStatus::RequiresHumanIntervention)));
                    }
                }
            }
            if batch.state.plan_version != version || batch.state.planning.is_some() {
                return Ok(AttemptEnd::Stop(None));
            }
        }
    }
    Ok(AttemptEnd::Judge(format!(
        "(the attempt used all {MAX_TOOL_TURNS} model turns without a final report)"
    )))
}

#[allow(clippy::too_many_arguments)]
async fn execution_decision(
    cx: &Cx<'_>,
    batch: &mut Batch,
    request: &ChatRequest,
    tool: &str,
    content: &str,
    error: Option<&crate::tools::ToolError>,
    consecutive_errors: u32,
    fx: &mut StepEffects,
) -> Result<DecisionOutcome, CycleError> {
    let plan = batch.state.plan.clone().unwrap_or_default();
    let remaining: Vec<String> = crate::engine::step::execution_order(&plan)
        .into_iter()
        .filter(|id| !batch.state.task_state(id).is_terminal())
        .collect();
    let total = batch.state.tasks_total();
    let prompt = cx.render(
        "decision_execution",
        &[
            (
                "executed_action",
                &executed_action(&plan, tool, request.purpose.trim_start_matches("execute.")),
            ),
            (
                "execution_result",
                &content.chars().take(2000).collect::<String>(),
            ),
            (
                "error_info",
                &error
                    .map(|e| {
                        format!(
                            "{:?} ({:?} by default): {}",
                            e.kind,
                            e.kind.classification(),
                            e.message
                        )
                    })
                    .unwrap_or_else(|| "(none)".into()),
            ),
            ("completed_count", &batch.state.tasks_done().to_string()),
            ("total_count", &total.to_string()),
            ("error_count", &batch.state.action_errors.to_string()),
            ("consecutive_errors", &consecutive_errors.to_string()),
            ("remaining_actions", &remaining.join(", ")),
            (
                "replan_decision_format",
                &decision_format(cx, crate::plan::Phase::Execution)?,
            ),
        ],
    )?;
    let trigger = error.map(|e| {
        if matches!(e.kind, ToolErrorKind::Timeout | ToolErrorKind::Unavailable) {
            ReplanTrigger::Timeout
        } else {
            ReplanTrigger::TaskFailed
        }
    });
    decide(
        cx,
        batch,
        DecisionAsk {
            phase: crate::plan::Phase::Execution,
            trigger: trigger.or(Some(ReplanTrigger::ContextChanged)),
            prompt,
        },
        &mut fx.notices,
    )
    .await
}

/// "tool (subtask id: planned purpose)" — what the model needs to judge the action against.
fn executed_action(plan: &crate::plan::Plan, tool: &str, task_id: &str) -> String {
    let purposes: Vec<&str> = plan
        .action_plan
        .actions
        .iter()
        .filter(|a| a.task_id == task_id)
        .map(|a| a.purpose.as_str())
        .collect();
    format!("{tool} (subtask {task_id}: {})", purposes.join("; "))
}

fn outcome_of(kind: ToolErrorKind) -> ActionOutcome {
    match kind {
        ToolErrorKind::NotFound => ActionOutcome::NotFound,
        ToolErrorKind::Denied => ActionOutcome::Denied,
        ToolErrorKind::Timeout => ActionOutcome::Timeout,
        ToolErrorKind::InvalidArguments => ActionOutcome::InvalidArguments,
        ToolErrorKind::Failed => ActionOutcome::Failed,
        ToolErrorKind::Unavailable => ActionOutcome::Unavailable,
    }
}

/// SHA-256 of the arguments as canonical JSON (object keys sorted), so equal calls match.
pub fn arguments_digest(arguments: &serde_json::Value) -> String {
    let canonical = canonical(arguments);
    let text = serde_json::to_string(&canonical).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn canonical(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(canonical).collect())
        }
        other => other.clone(),
    }
}
