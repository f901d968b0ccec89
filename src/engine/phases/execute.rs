//! Phase 4 (seed 001 §2.4): one attempt at a subtask — a tool-calling loop over the registry, an
//! execution decision after every action (seed 000 §7), reflection on errors and every
//! `trigger_interval` actions, then the task judge (seed 004). The attempt's entries are appended
//! together, so an attempt cut short by a killed job is simply run again on resume.

use super::{judge, reflect};
use crate::engine::batch::Batch;
use crate::engine::context;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::decide::{DecisionAsk, DecisionOutcome, decide, decision_format};
use crate::engine::evidence;
use crate::engine::folded::{FoldedTurn, is_folded};
use crate::engine::instructions;
use crate::engine::judge::JudgeVerdict;
use crate::history::entry::{ActionOutcome, EntryBody, RunStatus};
use crate::llm::{
    ChatRequest, ChatResponse, Message, ResponseSchema, ToolCall, tool_call_in_text,
    tool_call_schema,
};
use crate::plan::{ReplanDecision, ReplanTrigger};
use crate::tools::{ToolError, ToolErrorKind};
use sha2::{Digest, Sha256};

/// Model turns per attempt. Each turn is a paid call; a subtask that needs more is better judged
/// (continue / split) than left looping, and NEEDS_CONTINUATION gives it another attempt.
pub const MAX_TOOL_TURNS: usize = 12;

/// Longest tool output kept in an action's summary (history lines stay small and secret-poor).
const SUMMARY_CHARS: usize = 200;

/// How one attempt ended before the judge.
enum AttemptEnd {
    /// The model stopped calling tools (or ran out of turns): judge the subtask, with the
    /// verdict the final reply carried when decisions are folded.
    Judge(String, Option<JudgeVerdict>),
    /// A replan, a pause or a hand-off was recorded: no judge.
    Stop(Option<RunStatus>),
}

/// The last tool result, whose decision (and reflection, when due) is still owed.
struct Owed {
    tool: String,
    content: String,
    error: Option<ToolError>,
    consecutive_errors: u32,
    reflect: Option<&'static str>,
}

/// What the attempt does after a settled tool result.
enum Settled {
    Go,
    Retry,
    Stop(AttemptEnd),
}

pub async fn attempt(
    cx: &Cx<'_>,
    batch: &mut Batch,
    task_id: &str,
) -> Result<StepEffects, CycleError> {
    let mut fx = StepEffects::default();
    let start = evidence::attempt::start(cx).await;
    let end = tool_loop(cx, batch, task_id, &mut fx).await?;
    match end {
        AttemptEnd::Stop(status) => {
            fx.end = status;
            Ok(fx)
        }
        AttemptEnd::Judge(report, verdict) => {
            match evidence::attempt::verify(cx, batch, task_id, start).await {
                None => {
                    judge::judge_task(cx, batch, task_id, &report, verdict, None, &mut fx).await?
                }
                // The model's own verdict was given without the failure: the judge is asked
                // with it in view.
                Some(failed) => {
                    let report = format!("{report}\n\nThe checks failed:\n{}", failed.report);
                    judge::judge_task(cx, batch, task_id, &report, None, Some(&failed), &mut fx)
                        .await?
                }
            }
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
    let folded = is_folded(cx.cfg().planning.decisions);
    let (mut request, mut given) = execute_request(cx, batch, task_id, folded)?;
    let version = batch.state.plan_version;
    let mut consecutive_errors = 0u32;
    let mut owed: Option<Owed> = None;
    for _turn in 0..MAX_TOOL_TURNS {
        let response = cx.deps.llm.chat(&request).await?;
        let forced = request.require_tool_call;
        // Only the first turn must act; later ones may give the final answer.
        request.require_tool_call = false;
        batch.usage_of(&response.model, response.totals());
        let calls = match tool_calls_of(&response, &request) {
            calls if calls.is_empty() && forced => tool_reask(cx, batch, &request, task_id).await?,
            calls => calls,
        };
        let turn = if folded {
            FoldedTurn::parse(response.text.as_deref())
        } else {
            FoldedTurn::default()
        };
        if let Some(o) = owed.take() {
            match settle(cx, batch, &request, task_id, version, o, &turn, fx).await? {
                Settled::Go => {}
                Settled::Stop(end) => return Ok(end),
                Settled::Retry if calls.is_empty() => {
                    request
                        .messages
                        .push(Message::assistant(response.text.unwrap_or_default()));
                    request.messages.push(Message::user(RETRY));
                    continue;
                }
                // The model already made its next move, which is the retry.
                Settled::Retry => {}
            }
        }
        if calls.is_empty() {
            let text = response.text.unwrap_or_default();
            return Ok(AttemptEnd::Judge(
                turn.report.clone().unwrap_or(text),
                turn.verdict,
            ));
        }
        // A call read from the text is sent back as a native call: the text would repeat it.
        let content = if response.tool_calls.is_empty() {
            String::new()
        } else {
            response.text.clone().unwrap_or_default()
        };
        request.messages.push(Message {
            tool_calls: calls.clone(),
            ..Message::assistant(content)
        });
        for call in &calls {
            let t0 = (cx.deps.clock)();
            let result = cx.deps.tools.call(&call.name, call.arguments.clone()).await;
            let duration_ms = ((cx.deps.clock)() - t0).num_milliseconds().max(0) as u64;
            let (outcome, content, error) = match &result {
                Ok(out) => (ActionOutcome::Ok, out.content.clone(), None),
                Err(e) => (
                    ActionOutcome::Err(e.kind),
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
            consecutive_errors = if error.is_some() {
                consecutive_errors + 1
            } else {
                0
            };
            let reflect = reflection_due(cx, batch, error.is_some())
                .or(owed.as_ref().and_then(|o| o.reflect));
            // A file the call reaches whose directory or globs have instructions of their own:
            // they come with the result, once an attempt.
            let reached = instructions::argument_paths(&call.arguments);
            let content_sent =
                format!("{content}{}", scoped_instructions(cx, &mut given, &reached));
            let this = Owed {
                tool: call.name.clone(),
                content: content.clone(),
                error,
                consecutive_errors,
                reflect,
            };
            if folded {
                // The decision on this result (and a due reflection) rides on the next reply.
                let note = reflect.map(|r| reflection_note(cx, r)).transpose()?;
                let sent = match note {
                    Some(note) => format!("{content_sent}\n\n{note}"),
                    None => content_sent,
                };
                request
                    .messages
                    .push(Message::tool_result(call.id.clone(), sent));
                owed = Some(this);
                continue;
            }
            request
                .messages
                .push(Message::tool_result(call.id.clone(), content_sent));
            let none = FoldedTurn::default();
            match settle(cx, batch, &request, task_id, version, this, &none, fx).await? {
                Settled::Go => {}
                Settled::Retry => request.messages.push(Message::user(RETRY)),
                Settled::Stop(end) => return Ok(end),
            }
        }
    }
    if let Some(o) = owed.take() {
        // No turn was left to carry the decision: ask it on its own.
        let none = FoldedTurn::default();
        if let Settled::Stop(end) =
            settle(cx, batch, &request, task_id, version, o, &none, fx).await?
        {
            return Ok(end);
        }
    }
    Ok(AttemptEnd::Judge(
        format!("(the attempt used all {MAX_TOOL_TURNS} model turns without a final report)"),
        None,
    ))
}

/// The reply's tool calls: native ones, else one written in its text (see `text_tool_call`).
fn tool_calls_of(response: &ChatResponse, request: &ChatRequest) -> Vec<ToolCall> {
    calls_read_with(response, request, tool_call_in_text)
}

/// The native calls of `response`, else the one call `read` finds in its text.
fn calls_read_with(
    response: &ChatResponse,
    request: &ChatRequest,
    read: fn(&str, &[crate::llm::ToolSpec]) -> Option<ToolCall>,
) -> Vec<ToolCall> {
    if !response.tool_calls.is_empty() {
        return response.tool_calls.clone();
    }
    let text = response.text.as_deref().unwrap_or_default();
    let Some(mut call) = read(text, &request.tools) else {
        return Vec::new();
    };
    // Unique in the conversation, as the wire formats want call ids to be.
    call.id = format!("text_call_{}", request.messages.len());
    vec![call]
}

/// The forced first turn came back without a call (the server did not enforce `tool_choice`):
/// ask once more for the call alone as a structured reply, whose schema allows only complete
/// calls of the offered tools (a grammar on llama-server). The prose reply is left out of the
/// conversation, so the prompt prefix stays the cached one.
async fn tool_reask(
    cx: &Cx<'_>,
    batch: &mut Batch,
    request: &ChatRequest,
    task_id: &str,
) -> Result<Vec<ToolCall>, CycleError> {
    let example = request
        .tools
        .iter()
        .find(|t| EXPLORING_TOOLS.contains(&t.name.as_str()))
        .or(request.tools.first())
        .map(|t| format!(r#"{{"tool": "{}", "arguments": {{}}}}"#, t.name))
        .unwrap_or_default();
    let mut reask = request.clone();
    reask.purpose = format!("{}.tool_reask", request.purpose);
    reask.messages.push(Message::user(cx.render(
        "execute_tool_reask",
        &[("task_id", task_id), ("example", &example)],
    )?));
    reask.response_schema = Some(ResponseSchema {
        name: "tool_call".into(),
        schema: tool_call_schema(&request.tools),
    });
    // Where no schema is enforced (llama-server's Anthropic endpoint), a model that answered
    // the forced turn in prose still continues a call it was handed the start of.
    reask.prefill = Some(r#"{"tool": ""#.into());
    // Only the call: a reply that runs on past it is not worth the execute limit.
    reask.max_tokens = reask.max_tokens.map(|n| n.min(REASK_MAX_TOKENS));
    let response = cx.deps.llm.chat(&reask).await?;
    batch.usage_of(&response.model, response.totals());
    Ok(calls_read_with(
        &response,
        request,
        crate::llm::requested_tool_call,
    ))
}

/// Output limit of the call-only re-ask: room for a call with a page of content, not for the
/// prose a small model runs on with after it.
const REASK_MAX_TOKENS: u32 = 512;

const RETRY: &str =
    "The last action should be retried: call the tool again (the error looked transient).";

/// The repository's instructions for `paths` not yet `given` (see `engine::instructions`);
/// `given` gains them.
fn scoped_instructions(cx: &Cx<'_>, given: &mut Vec<String>, paths: &[String]) -> String {
    let repo = cx.deps.prompts.instructions();
    let fresh: Vec<_> = repo
        .for_paths(paths)
        .into_iter()
        .filter(|f| !given.contains(&f.path))
        .collect();
    given.extend(fresh.iter().map(|f| f.path.clone()));
    repo.scoped_block(&fresh)
}

/// The attempt's request: the plan and the reply rules first (byte-identical for every subtask of
/// a plan, so providers can cache them), the subtask last, with the repository's instructions for
/// the files it names; and the paths of the instruction files it carries.
fn execute_request(
    cx: &Cx<'_>,
    batch: &Batch,
    task_id: &str,
    folded: bool,
) -> Result<(ChatRequest, Vec<String>), CycleError> {
    let plan = batch.state.plan.clone().unwrap_or_default();
    let Some(task) = plan.subtask(task_id).cloned() else {
        return Err(CycleError::Fatal(format!(
            "subtask {task_id} is not in the plan"
        )));
    };
    let own: Vec<&crate::plan::PlannedAction> = plan
        .action_plan
        .actions
        .iter()
        .filter(|a| a.task_id == task_id)
        .collect();
    let planned: Vec<String> = own
        .iter()
        .map(|a| {
            format!(
                "{} → {}: {}",
                a.tool.as_deref().unwrap_or(a.action_type.as_str()),
                a.purpose,
                a.expected_outcome
            )
        })
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
    let remaining = crate::engine::step::ordered_subtasks(&plan)
        .into_iter()
        .filter(|t| !batch.state.task_state(&t.id).is_terminal() && t.id != task_id)
        .count();
    let rules = if folded {
        cx.render("execute_folded_rules", &[])?
    } else {
        cx.render("execute_separate_rules", &[])?
    };
    let prompt = cx.render(
        "execute",
        &[
            ("goal", &plan.goal_understanding.main_objective),
            ("plan", &context::compact_plan(&plan)),
            ("reply_rules", &rules),
            ("task_id", task_id),
            ("task_description", &task.description),
            ("planned_actions", &context::bullet_list(&planned)),
            (
                "progress",
                &format!(
                    "{}/{} subtasks done, {remaining} others left; {} actions so far, {} failed",
                    batch.state.tasks_done(),
                    batch.state.tasks_total(),
                    batch.state.actions_executed,
                    batch.state.action_errors
                ),
            ),
            ("attempt_notes", &notes),
        ],
    )?;
    let named = instructions::mentioned_paths(&format!(
        "{}\n{}",
        task.description,
        own.iter()
            .map(|a| format!("{} {}", a.purpose, a.expected_outcome))
            .collect::<Vec<_>>()
            .join("\n")
    ));
    let mut given = Vec::new();
    let scoped = scoped_instructions(cx, &mut given, &named);
    let mut request = cx.request(&format!("execute.{task_id}"), format!("{prompt}{scoped}"))?;
    request.tools = plan_tools(cx, &plan);
    // An attempt starts by acting when its planned actions name a tool of this run, or when
    // nothing is planned for it (the weak-model fallback's "do the issue" subtask).
    let names_a_tool = |a: &&crate::plan::PlannedAction| {
        a.tool
            .as_deref()
            .is_some_and(|t| request.tools.iter().any(|spec| spec.name == t))
    };
    request.require_tool_call =
        !request.tools.is_empty() && (own.is_empty() || own.iter().any(names_a_tool));
    Ok((request, given))
}

/// Tools any subtask may look around with, whatever the plan names (a plan that needs `search`
/// names it: its spec is the largest of the built-ins).
const EXPLORING_TOOLS: [&str; 2] = ["read_file", "list_files"];

/// The specs of the tools the plan uses plus the exploring ones: every spec is paid on every
/// turn, and the set stays the same for the whole plan so it stays in the cached prefix. A plan
/// that names no known tool gets them all.
fn plan_tools(cx: &Cx<'_>, plan: &crate::plan::Plan) -> Vec<crate::llm::ToolSpec> {
    let named = context::tools_named_by(plan);
    let all = cx.deps.tools.specs();
    if !all.iter().any(|t| named.contains(&t.name.as_str())) {
        return all;
    }
    all.into_iter()
        .filter(|t| named.contains(&t.name.as_str()) || EXPLORING_TOOLS.contains(&t.name.as_str()))
        .collect()
}

/// Seed 001 §7.4.1 `_should_reflect`: on error, and every `trigger_interval` actions.
fn reflection_due(cx: &Cx<'_>, batch: &Batch, failed: bool) -> Option<&'static str> {
    let rcfg = &cx.cfg().planning.reflection;
    if !rcfg.enabled {
        return None;
    }
    let interval = u64::from(rcfg.trigger_interval);
    if failed && rcfg.trigger_on_error {
        Some("a tool returned an error")
    } else if interval > 0 && batch.state.actions_executed.is_multiple_of(interval) {
        Some("periodic reflection")
    } else {
        None
    }
}

fn reflection_note(cx: &Cx<'_>, reason: &str) -> Result<String, CycleError> {
    cx.render("reflection_folded", &[("reason", reason)])
}

/// The decision on one tool result (seed 000 §7), then a due reflection; each taken from the
/// folded reply when it carries it, else asked on its own.
#[allow(clippy::too_many_arguments)]
async fn settle(
    cx: &Cx<'_>,
    batch: &mut Batch,
    request: &ChatRequest,
    task_id: &str,
    version: u32,
    owed: Owed,
    turn: &FoldedTurn,
    fx: &mut StepEffects,
) -> Result<Settled, CycleError> {
    let outcome = execution_decision(
        cx,
        batch,
        request,
        &owed.tool,
        &owed.content,
        owed.error.as_ref(),
        owed.consecutive_errors,
        turn.replan_decision.clone(),
        fx,
    )
    .await?;
    let retry = match outcome {
        DecisionOutcome::Continue => false,
        DecisionOutcome::Retry => true,
        DecisionOutcome::Replan(_) => return Ok(Settled::Stop(AttemptEnd::Stop(None))),
        DecisionOutcome::Waiting(status) => {
            return Ok(Settled::Stop(AttemptEnd::Stop(Some(status))));
        }
        DecisionOutcome::HumanNeeded => {
            return Ok(Settled::Stop(AttemptEnd::Stop(Some(
                RunStatus::RequiresHumanIntervention,
            ))));
        }
    };
    if let Some(reason) = owed.reflect {
        let given = turn.reflection_response();
        match reflect::reflect(cx, batch, task_id, reason, given, fx).await? {
            reflect::ReflectEnd::Continue => {}
            reflect::ReflectEnd::Revised => return Ok(Settled::Stop(AttemptEnd::Stop(None))),
            reflect::ReflectEnd::HumanNeeded => {
                return Ok(Settled::Stop(AttemptEnd::Stop(Some(
                    RunStatus::RequiresHumanIntervention,
                ))));
            }
        }
    }
    if batch.state.plan_version != version || batch.state.planning.is_some() {
        return Ok(Settled::Stop(AttemptEnd::Stop(None)));
    }
    Ok(if retry { Settled::Retry } else { Settled::Go })
}

#[allow(clippy::too_many_arguments)]
async fn execution_decision(
    cx: &Cx<'_>,
    batch: &mut Batch,
    request: &ChatRequest,
    tool: &str,
    content: &str,
    error: Option<&ToolError>,
    consecutive_errors: u32,
    answer: Option<ReplanDecision>,
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
            answer,
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
