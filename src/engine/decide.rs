//! Seed 000 replan decisions: ask the phase's decision, parse it (fallback: no replan, logged,
//! §13.1), weigh it with the policy (limits, confidence bands, loops), escalate when it cannot be
//! executed, and record exactly what was decided and done as a `replan_decision` entry.

use super::batch::Batch;
use super::cx::{Cx, CycleError};
use super::phases::complete::human_needed;
use super::replan::{
    Assessment, Escalation, EscalationPolicy, EscalationStep, ReplanCounters, assess,
    effective_type, resolve_target, trigger_key,
};
use crate::history::entry::{DecisionRecord, DecisionResult, EntryBody, Question, RunStatus};
use crate::plan::{Phase, ReplanDecision, ReplanDecisionResponse, ReplanTrigger, ReplanType};
use crate::report::Notice;

/// What the caller does after the decision.
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionOutcome {
    /// Go on with the current plan or draft.
    Continue,
    /// A replan was executed: planning restarts at this phase (recorded already).
    Replan(Phase),
    /// Level 1: retry the same action.
    Retry,
    /// A person must answer or approve; the run ends with this status.
    Waiting(RunStatus),
    /// Escalation found no way forward; a `requires_human_intervention` completion is recorded.
    HumanNeeded,
}

pub struct DecisionAsk {
    pub phase: Phase,
    pub trigger: Option<ReplanTrigger>,
    /// The full decision prompt (seed 000 §4.2–8.2 with the decision format filled in); sent
    /// when no `answer` was folded into another reply, and with an escalation.
    pub prompt: String,
    /// The decision the model already gave inside another reply (`planning.decisions: folded`):
    /// no call is made for it.
    pub answer: Option<ReplanDecision>,
}

/// The `{replan_decision_format}` block with the phase's own fields (§4.4–8.4).
pub fn decision_format(cx: &Cx<'_>, phase: Phase) -> Result<String, CycleError> {
    let fields = match phase {
        Phase::GoalUnderstanding => {
            r#"    "assumptions_to_make": ["Assumption used if the user does not answer"]"#
        }
        Phase::TaskDecomposition => {
            r#"    "missing_steps": ["Step that is missing"],
    "recommended_granularity": "finer|coarser|as is",
    "scope_adjustment": "Suggested change of scope""#
        }
        Phase::ActionSequence => {
            r#"    "assumptions_to_make": ["Assumption used if the user does not answer"],
    "missing_steps": ["Step that is missing"],
    "unavailable_tools": ["tool"],
    "alternative_tools": ["tool"],
    "dependency_issues": ["Issue"],
    "plan_adjustments": ["Adjustment"]"#
        }
        Phase::Execution => {
            r#"    "error_classification": "transient|persistent|fatal",
    "recovery_strategy": "How to recover",
    "affected_actions": ["task_2"]"#
        }
        Phase::Reflection => {
            r#"    "evaluation_result": "success|partial_success|failure",
    "achievement_rate": 100,
    "issues_identified": ["Issue"],
    "additional_actions": ["Action"],
    "revision_scope": "minor|moderate|major""#
        }
    };
    cx.render("decision_format", &[("phase_fields", fields)])
}

pub async fn decide(
    cx: &Cx<'_>,
    batch: &mut Batch,
    ask: DecisionAsk,
    notices: &mut Vec<Notice>,
) -> Result<DecisionOutcome, CycleError> {
    let cfg = &cx.cfg().planning.replanning;
    let started = (cx.deps.clock)();
    let purpose = format!("replan_decision.{}", ask.phase.as_str());
    let reply = match ask.answer.clone() {
        Some(replan_decision) => Ok(ReplanDecisionResponse { replan_decision }),
        None => {
            cx.ask::<ReplanDecisionResponse>(batch, &purpose, ask.prompt.clone())
                .await?
        }
    };
    let (decision, parse_error, raw_reply) = match reply {
        Ok(r) => (r.replan_decision, None, None),
        Err(failure) => {
            tracing::warn!(phase = %ask.phase, error = %failure.error,
                "replan decision unusable after a re-ask; continuing without a replan (seed 000 §13.1)");
            (
                ReplanDecision::default(),
                Some(failure.error),
                Some(failure.raw_reply),
            )
        }
    };
    let counters = ReplanCounters::from_state(&batch.state);
    let key = trigger_key(ask.phase, &decision);
    let assessment = if parse_error.is_some() {
        Assessment::NoReplan
    } else {
        assess(&decision, ask.phase, &counters, cfg, &key)
    };
    let mut rec = Record {
        phase: ask.phase,
        trigger: ask.trigger,
        key,
        parse_error,
        raw_reply,
        started,
    };
    match assessment {
        Assessment::Override { reason } => match Escalation::new(reason.clone(), ask.phase) {
            Some(esc) => escalate(cx, batch, &ask, decision, esc, &counters, rec, notices).await,
            None => {
                rec.skip(cx, batch, &decision, reason.to_string(), notices);
                Ok(DecisionOutcome::Continue)
            }
        },
        other => Ok(act(cx, batch, decision, other, &mut rec, notices)),
    }
}

/// Weigh a decision that did not come from a decision call (seed 001 §10.1.1 unclear goal).
pub fn weigh_given(
    cx: &Cx<'_>,
    batch: &mut Batch,
    phase: Phase,
    decision: ReplanDecision,
    notices: &mut Vec<Notice>,
) -> DecisionOutcome {
    let counters = ReplanCounters::from_state(&batch.state);
    let key = trigger_key(phase, &decision);
    let assessment = assess(
        &decision,
        phase,
        &counters,
        &cx.cfg().planning.replanning,
        &key,
    );
    let mut rec = Record {
        phase,
        trigger: None,
        key,
        parse_error: None,
        raw_reply: None,
        started: (cx.deps.clock)(),
    };
    act(cx, batch, decision, assessment, &mut rec, notices)
}

/// What the engine did with a decision (seed 000 §10.1 `executed`, `result`, `override_reason`).
struct Done {
    executed: bool,
    result: DecisionResult,
    override_reason: Option<String>,
    restart_phase: Option<Phase>,
}

impl Done {
    fn new(executed: bool, result: DecisionResult) -> Self {
        Done {
            executed,
            result,
            override_reason: None,
            restart_phase: None,
        }
    }

    fn because(mut self, reason: Option<String>) -> Self {
        self.override_reason = reason;
        self
    }

    fn restart(mut self, phase: Option<Phase>) -> Self {
        self.restart_phase = phase;
        self
    }
}

struct Record {
    phase: Phase,
    trigger: Option<ReplanTrigger>,
    key: String,
    parse_error: Option<String>,
    raw_reply: Option<String>,
    started: chrono::DateTime<chrono::Utc>,
}

impl Record {
    fn push(
        &self,
        cx: &Cx<'_>,
        batch: &mut Batch,
        decision: &ReplanDecision,
        done: Done,
    ) -> String {
        let Done {
            executed,
            result,
            override_reason,
            restart_phase,
        } = done;
        let replan_id = format!("replan-{}", batch.state.decisions.len() + 1);
        let duration_ms = ((cx.deps.clock)() - self.started).num_milliseconds().max(0) as u64;
        batch.push(EntryBody::ReplanDecision(Box::new(DecisionRecord {
            replan_id: replan_id.clone(),
            phase: self.phase,
            llm_decision: decision.clone(),
            confidence: decision.confidence,
            executed,
            override_reason,
            result,
            duration_ms,
            trigger: self.trigger,
            trigger_key: self.key.clone(),
            parse_error: self.parse_error.clone(),
            raw_reply: self.raw_reply.clone(),
            restart_phase,
        })));
        replan_id
    }

    fn skip(
        &mut self,
        cx: &Cx<'_>,
        batch: &mut Batch,
        decision: &ReplanDecision,
        reason: String,
        notices: &mut Vec<Notice>,
    ) {
        self.push(
            cx,
            batch,
            decision,
            Done::new(false, DecisionResult::Skipped).because(Some(reason.clone())),
        );
        notices.push(Notice::Override {
            phase: self.phase,
            reason,
        });
    }
}

/// Where planning restarts for an executed decision; None for a retry (level 1).
fn restart_phase(decision: &ReplanDecision, phase: Phase) -> Option<Phase> {
    if phase == Phase::Reflection {
        // Nothing is left to retry once every task is finished: revise the tasks instead.
        return match resolve_target(decision, phase).phase {
            p @ (Phase::GoalUnderstanding | Phase::TaskDecomposition | Phase::ActionSequence) => {
                Some(p)
            }
            _ => Some(Phase::TaskDecomposition),
        };
    }
    match resolve_target(decision, phase).phase {
        p @ (Phase::GoalUnderstanding | Phase::TaskDecomposition | Phase::ActionSequence) => {
            Some(p)
        }
        Phase::Execution if effective_type(decision) == ReplanType::Retry => None,
        Phase::Execution => Some(Phase::ActionSequence),
        // The monitoring phase revises the plan: new or changed tasks, progress kept.
        Phase::Reflection => Some(Phase::TaskDecomposition),
    }
}

fn act(
    cx: &Cx<'_>,
    batch: &mut Batch,
    decision: ReplanDecision,
    assessment: Assessment,
    rec: &mut Record,
    notices: &mut Vec<Notice>,
) -> DecisionOutcome {
    match assessment {
        Assessment::NoReplan => {
            let why = rec
                .parse_error
                .as_ref()
                .map(|e| format!("the decision could not be parsed ({e}); no replan"));
            rec.push(
                cx,
                batch,
                &decision,
                Done::new(false, DecisionResult::Skipped).because(why),
            );
            DecisionOutcome::Continue
        }
        Assessment::Skip { reason } => {
            rec.skip(cx, batch, &decision, reason, notices);
            DecisionOutcome::Continue
        }
        Assessment::Override { reason } => {
            rec.skip(cx, batch, &decision, reason.to_string(), notices);
            DecisionOutcome::Continue
        }
        Assessment::AskApproval => {
            let restart = restart_phase(&decision, rec.phase);
            let replan_id = rec.push(
                cx,
                batch,
                &decision,
                Done::new(false, DecisionResult::Pending)
                    .because(Some(format!(
                        "confidence {:.2} needs a person's /approve",
                        decision.confidence
                    )))
                    .restart(restart),
            );
            let summary = format!(
                "{} in the {} phase: {}",
                effective_type(&decision).as_str(),
                rec.phase.title(),
                decision.reasoning
            );
            batch.push(EntryBody::Approval {
                request_id: replan_id.clone(),
                decision: None,
                author: None,
                reason: None,
                subject: serde_json::json!({
                    "kind": "replan_decision",
                    "replan_id": replan_id,
                    "phase": rec.phase,
                    "summary": summary,
                }),
            });
            notices.push(Notice::ApprovalRequest {
                summary,
                confidence: decision.confidence,
            });
            DecisionOutcome::Waiting(RunStatus::WaitingForApproval)
        }
        Assessment::Execute { warn } => {
            if warn {
                tracing::warn!(phase = %rec.phase, confidence = decision.confidence,
                    "executing a replan decided with medium confidence");
            }
            if effective_type(&decision) == ReplanType::ClarificationRequest {
                rec.push(
                    cx,
                    batch,
                    &decision,
                    Done::new(true, DecisionResult::Success),
                );
                let (questions, assumptions) = (decision.questions(), decision.assumptions());
                batch.push(EntryBody::Question(Question {
                    questions: questions.clone(),
                    context: decision.reasoning.clone(),
                    assumptions: assumptions.clone(),
                    phase: rec.phase,
                }));
                notices.push(Notice::Clarification {
                    questions,
                    context: decision.reasoning.clone(),
                    assumptions,
                });
                return DecisionOutcome::Waiting(RunStatus::WaitingForAnswer);
            }
            let restart = restart_phase(&decision, rec.phase);
            rec.push(
                cx,
                batch,
                &decision,
                Done::new(true, DecisionResult::Success).restart(restart),
            );
            notices.push(Notice::Decision {
                phase: rec.phase,
                decision: Box::new(decision),
            });
            match restart {
                Some(p) => DecisionOutcome::Replan(p),
                None => DecisionOutcome::Retry,
            }
        }
    }
}

/// Seed 000 §9.4: tell the model the limit, ask for an alternative, then ask a person.
#[allow(clippy::too_many_arguments)]
async fn escalate(
    cx: &Cx<'_>,
    batch: &mut Batch,
    ask: &DecisionAsk,
    decision: ReplanDecision,
    esc: Escalation,
    counters: &ReplanCounters,
    mut rec: Record,
    notices: &mut Vec<Notice>,
) -> Result<DecisionOutcome, CycleError> {
    let cfg = &cx.cfg().planning.replanning;
    rec.skip(
        cx,
        batch,
        &decision,
        format!(
            "{}; escalated: asking the model for an alternative",
            esc.reason
        ),
        notices,
    );
    let template = cx
        .deps
        .prompts
        .template("escalation")
        .map_err(CycleError::from)?;
    let EscalationStep::AskAlternative { prompt } =
        esc.first_step(template, &decision, counters, cfg)
    else {
        return Ok(DecisionOutcome::Continue);
    };
    let purpose = format!("replan_decision.{}.escalation", ask.phase.as_str());
    let reply = cx
        .ask::<ReplanDecisionResponse>(batch, &purpose, format!("{}\n\n{prompt}", ask.prompt))
        .await?;
    let alt = match reply {
        Ok(r) => r.replan_decision,
        Err(f) => {
            tracing::warn!(error = %f.error, "escalation reply unusable; treating it as no alternative");
            ReplanDecision {
                replan_needed: true,
                confidence: 0.0,
                ..ReplanDecision::default()
            }
        }
    };
    let counters = ReplanCounters::from_state(&batch.state);
    let key = trigger_key(ask.phase, &alt);
    let alt_assessment = assess(&alt, ask.phase, &counters, cfg, &key);
    let mut alt_rec = Record {
        phase: ask.phase,
        trigger: ask.trigger,
        key,
        parse_error: None,
        raw_reply: None,
        started: (cx.deps.clock)(),
    };
    match esc.on_alternative(&alt_assessment, &alt, EscalationPolicy::from_config(cfg)) {
        EscalationStep::UseAlternative { assessment } => {
            Ok(act(cx, batch, alt, assessment, &mut alt_rec, notices))
        }
        EscalationStep::ContinueOnAssumptions { notice, .. } => {
            alt_rec.skip(cx, batch, &alt, notice, notices);
            Ok(DecisionOutcome::Continue)
        }
        EscalationStep::HumanNeeded { notice } => {
            alt_rec.push(
                cx,
                batch,
                &alt,
                Done::new(false, DecisionResult::Failure).because(Some(notice.clone())),
            );
            human_needed(batch, &notice, alt.recommended_actions.clone(), notices);
            Ok(DecisionOutcome::HumanNeeded)
        }
        EscalationStep::KeepCurrentPlan | EscalationStep::AskAlternative { .. } => {
            Ok(DecisionOutcome::Continue)
        }
    }
}
