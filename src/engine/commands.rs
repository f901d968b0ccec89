//! What a person's request does before the cycle goes on (SPEC F1 commands). Each command's effect
//! is recorded in the same append as `run_started`, so a restarted run never applies it twice.

use super::EngineInput;
use super::batch::Batch;
use super::cx::{Cx, CycleError, StepEffects};
use super::plan_commands::{self, pending_plan};
use crate::history::entry::{
    ApprovalDecision, DecisionRecord, DecisionResult, EntryBody, RunStatus,
};
use crate::history::state::Pending;
use crate::plan::{Phase, ReplanDecision, ReplanTrigger, ReplanType, TaskState};
use crate::report::Notice;
use chrono::Duration;

pub async fn handle(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let fx = StepEffects::default();
    Ok(match cx.input {
        EngineInput::Start { .. } => fx,
        EngineInput::Replan {
            target,
            reason,
            author,
        } => {
            human_replan(batch, *target, reason.as_deref(), author);
            fx
        }
        EngineInput::Approve { author, hash } => match (pending_plan(batch), hash) {
            (Some(plan), hash) => plan_commands::approve(batch, plan, author, hash.as_deref()),
            (None, Some(given)) => plan_commands::hash_without_plan(given),
            (None, None) => approve_other(batch, author, fx),
        },
        EngineInput::Reject { reason, author } => {
            match (pending_plan(batch), pending_approval(batch)) {
                (Some(plan), _) => {
                    plan_commands::reject(batch, plan, author, reason.as_deref());
                    human_replan(batch, None, reason.as_deref(), author);
                    fx
                }
                (None, Some(request_id)) => {
                    batch.push(EntryBody::Approval {
                        request_id: request_id.0,
                        decision: Some(ApprovalDecision::Rejected),
                        author: Some(author.clone()),
                        reason: reason.clone(),
                        subject: request_id.1,
                    });
                    fx
                }
                (None, None) => fx.notice(Notice::Info {
                    text: "Nothing is waiting for approval.".into(),
                }),
            }
        }
        EngineInput::Stop { author } => StepEffects {
            notices: vec![Notice::Info {
                text: format!("Stopped by @{author}. Comment `/resume` or `/replan` to go on."),
            }],
            end: Some(RunStatus::Stopped),
        },
        EngineInput::Resume { author } => {
            let blocked: Vec<String> = batch
                .state
                .tasks
                .iter()
                .filter(|(_, t)| t.state == TaskState::Blocked)
                .map(|(id, _)| id.clone())
                .collect();
            for id in blocked {
                batch.push(EntryBody::TaskState {
                    task_id: id,
                    state: TaskState::Ready,
                    replanning_info: None,
                    note: Some(format!("resumed by @{author}")),
                });
            }
            fx
        }
        EngineInput::Status { .. } => {
            let s = &batch.state;
            let text = format!(
                "Plan v{}: {}/{} tasks done; {} replan decisions, {} actions. Status: {}.",
                s.plan_version,
                s.tasks_done(),
                s.tasks_total(),
                s.decisions.len(),
                s.actions_executed,
                match &s.pending {
                    Some(Pending::Question { .. }) => "waiting for an answer".to_string(),
                    Some(Pending::Approval { .. }) => "waiting for `/approve`".to_string(),
                    None => s
                        .last_status
                        .map(|st| format!("{st:?}"))
                        .unwrap_or_else(|| "not started".into()),
                }
            );
            StepEffects {
                notices: vec![Notice::Info { text }],
                end: Some(batch.state.last_status.unwrap_or(RunStatus::Completed)),
            }
        }
        EngineInput::Answer { text, author } => {
            if matches!(batch.state.pending, Some(Pending::Question { .. })) {
                batch.push(EntryBody::Answer {
                    author: author.clone(),
                    text: text.clone(),
                    assumed: false,
                });
            }
            fx
        }
        EngineInput::Sweep => sweep(cx, batch),
        EngineInput::Budget { amount, author } => {
            super::budget_command::handle(cx, batch, amount.as_ref(), author)
        }
        EngineInput::Review { round } => {
            review_replan(batch, round);
            fx
        }
    })
}

/// `/approve` of a decision or an alternative (seed 000 §11.2, seed 003).
fn approve_other(batch: &mut Batch, author: &str, fx: StepEffects) -> StepEffects {
    match pending_approval(batch) {
        Some(request_id) => {
            batch.push(EntryBody::Approval {
                request_id: request_id.0,
                decision: Some(ApprovalDecision::Approved),
                author: Some(author.to_owned()),
                reason: None,
                subject: request_id.1,
            });
            fx
        }
        None => fx.notice(Notice::Info {
            text: "Nothing is waiting for approval.".into(),
        }),
    }
}

fn pending_approval(batch: &Batch) -> Option<(String, serde_json::Value)> {
    match &batch.state.pending {
        Some(Pending::Approval {
            request_id,
            subject,
            ..
        }) => Some((request_id.clone(), subject.clone())),
        _ => None,
    }
}

/// `/replan [goal|tasks|actions] reason`: a replan from that phase with the reason as feedback.
/// Without a phase the tasks are decomposed again (the goal stays).
fn human_replan(batch: &mut Batch, target: Option<Phase>, reason: Option<&str>, author: &str) {
    if let Some((request_id, subject)) = pending_approval(batch) {
        batch.push(EntryBody::Approval {
            request_id,
            decision: Some(ApprovalDecision::Rejected),
            author: Some(author.to_string()),
            reason: Some("superseded by /replan".into()),
            subject,
        });
    }
    if matches!(batch.state.pending, Some(Pending::Question { .. })) {
        batch.push(EntryBody::Answer {
            author: author.to_string(),
            text: reason.unwrap_or("(see /replan)").to_string(),
            assumed: false,
        });
    }
    let phase = match target {
        Some(p @ (Phase::GoalUnderstanding | Phase::TaskDecomposition | Phase::ActionSequence)) => {
            p
        }
        _ => Phase::TaskDecomposition,
    };
    let replan_type = match phase {
        Phase::GoalUnderstanding => ReplanType::GoalRevision,
        Phase::ActionSequence => ReplanType::ActionRegeneration,
        _ => ReplanType::TaskRedecomposition,
    };
    let reasoning = match reason {
        Some(r) if !r.trim().is_empty() => format!("@{author} asked for a replan: {r}"),
        _ => format!("@{author} asked for a replan"),
    };
    let decision = ReplanDecision {
        replan_needed: true,
        confidence: 1.0,
        reasoning,
        replan_type,
        target_phase: Some(phase),
        ..ReplanDecision::default()
    };
    push_requested_replan(batch, phase, decision, |n| {
        format!("human:{}:{}", phase.as_str(), n)
    });
}

/// A review round: recorded (so later events of the same review stay silent), then a
/// `partial_replan` from the task decomposition: the done tasks stay done, and the revised plan
/// adds the tasks the review asks for. The review threads are feedback, quoted as data.
fn review_replan(batch: &mut Batch, round: &crate::history::review::ReviewRound) {
    batch.push(EntryBody::Review {
        round: round.clone(),
    });
    let phase = Phase::TaskDecomposition;
    let decision = ReplanDecision {
        replan_needed: true,
        confidence: 1.0,
        reasoning: super::review_feedback::feedback(round),
        replan_type: ReplanType::PartialReplan,
        target_phase: Some(phase),
        ..ReplanDecision::default()
    };
    push_requested_replan(batch, phase, decision, |n| {
        format!("review:{}:{}", round.review_id, n)
    });
}

/// A replan a person asked for (a command or a review), executed as decided: the decision entry
/// with its trigger key made from the decision's number.
fn push_requested_replan(
    batch: &mut Batch,
    phase: Phase,
    decision: ReplanDecision,
    trigger_key: impl FnOnce(usize) -> String,
) {
    let n = batch.state.decisions.len() + 1;
    batch.push(EntryBody::ReplanDecision(Box::new(DecisionRecord {
        replan_id: format!("replan-{n}"),
        phase: Phase::Execution,
        trigger_key: trigger_key(n),
        llm_decision: decision,
        confidence: 1.0,
        executed: true,
        override_reason: None,
        result: DecisionResult::Success,
        duration_ms: 0,
        trigger: Some(ReplanTrigger::HumanRequest),
        parse_error: None,
        raw_reply: None,
        restart_phase: Some(phase),
    })));
}

/// The scheduled sweep (seed 000 §11.3, §12.1): a question unanswered for
/// `auto_assume_timeout_minutes` is answered with its own assumptions.
fn sweep(cx: &Cx<'_>, batch: &mut Batch) -> StepEffects {
    let limits = &cx.cfg().planning.replanning.goal_understanding;
    let now = (cx.deps.clock)();
    match &batch.state.pending {
        Some(Pending::Question { asked_at, .. }) => {
            let waited = now - *asked_at;
            if limits.auto_assume_on_no_response
                && waited >= Duration::minutes(i64::from(limits.auto_assume_timeout_minutes))
            {
                batch.push(EntryBody::Answer {
                    author: "replan".into(),
                    text: "(no answer in time: continuing on the stated assumptions)".into(),
                    assumed: true,
                });
                StepEffects::default()
            } else {
                StepEffects {
                    notices: vec![],
                    end: Some(RunStatus::WaitingForAnswer),
                }
            }
        }
        Some(Pending::Approval { .. }) => StepEffects {
            notices: vec![],
            end: Some(RunStatus::WaitingForApproval),
        },
        None => StepEffects {
            notices: vec![],
            end: Some(batch.state.last_status.unwrap_or(RunStatus::Completed)),
        },
    }
}
