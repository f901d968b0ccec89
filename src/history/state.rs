//! `SessionState = replay(entries)`: everything a run needs to know about a thread, derived from its
//! history and never stored twice. Replay is pure: same entries, same state.

use super::entry::{
    ApprovalDecision, DecisionRecord, Entry, EntryBody, RunRequest, RunStatus, UsageTotals,
};
use crate::plan::{Completion, Phase, Plan, Reflection, ReplanType, ReplanningInfo, TaskState};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskStatus {
    pub state: TaskState,
    pub replanning_info: Option<ReplanningInfo>,
    pub note: Option<String>,
}

/// A plan that was current once, kept for the checklist's "Previous Plan History".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanSnapshot {
    pub version: u32,
    pub plan: Plan,
    pub started_at: DateTime<Utc>,
    /// Why this plan replaced the previous one (None for the first plan).
    pub reason: Option<String>,
    pub replan_type: ReplanType,
    /// Task states when this plan was replaced (filled when the next plan arrives).
    pub final_tasks: BTreeMap<String, TaskState>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Pending {
    Question {
        questions: Vec<String>,
        context: String,
        assumptions: Vec<String>,
        phase: Phase,
        asked_at: DateTime<Utc>,
    },
    Approval {
        request_id: String,
        subject: Value,
        asked_at: DateTime<Utc>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub request: RunRequest,
    pub started_at: DateTime<Utc>,
    pub status: Option<RunStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionState {
    pub plan: Option<Plan>,
    pub plan_version: u32,
    pub plan_history: Vec<PlanSnapshot>,
    pub tasks: BTreeMap<String, TaskStatus>,
    pub decisions: Vec<DecisionRecord>,
    pub reflections: Vec<Reflection>,
    pub pending: Option<Pending>,
    pub checklist_comment_id: Option<String>,
    pub runs: Vec<RunSummary>,
    pub actions_executed: u64,
    pub action_errors: u64,
    pub completion: Option<Completion>,
    pub usage: UsageTotals,
    pub last_seq: u64,
    pub last_status: Option<RunStatus>,
}

impl SessionState {
    pub fn has_plan(&self) -> bool {
        self.plan.is_some()
    }

    pub fn task_state(&self, id: &str) -> TaskState {
        self.tasks.get(id).map(|t| t.state).unwrap_or_default()
    }

    /// Number of plan revisions so far (plans after the first).
    pub fn revision_count(&self) -> u32 {
        self.plan_version.saturating_sub(1)
    }
}

/// Rebuild the session from its entries. Entries must be in file order; unknown or out-of-order
/// information never panics.
pub fn replay<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> SessionState {
    let mut s = SessionState::default();
    for e in entries {
        apply(&mut s, e);
    }
    s
}

/// Apply one entry. Public so a running engine keeps its state in step with what it appends.
pub fn apply(s: &mut SessionState, e: &Entry) {
    s.last_seq = s.last_seq.max(e.seq);
    match &e.body {
        EntryBody::RunStarted { request } => s.runs.push(RunSummary {
            run_id: e.run_id.clone(),
            request: request.clone(),
            started_at: e.ts,
            status: None,
        }),
        EntryBody::Plan { version, plan } => {
            set_plan(s, *version, (**plan).clone(), e.ts, None, ReplanType::None)
        }
        EntryBody::Revision {
            version,
            reason,
            updated_plan,
            replan_type,
            ..
        } => set_plan(
            s,
            *version,
            (**updated_plan).clone(),
            e.ts,
            Some(reason.clone()),
            *replan_type,
        ),
        EntryBody::Reflection { reflection, .. } => s.reflections.push(reflection.clone()),
        EntryBody::ReplanDecision(d) => s.decisions.push((**d).clone()),
        EntryBody::Question {
            questions,
            context,
            assumptions,
            phase,
        } => {
            s.pending = Some(Pending::Question {
                questions: questions.clone(),
                context: context.clone(),
                assumptions: assumptions.clone(),
                phase: *phase,
                asked_at: e.ts,
            })
        }
        EntryBody::Answer { .. } => {
            if matches!(s.pending, Some(Pending::Question { .. })) {
                s.pending = None;
            }
        }
        EntryBody::Approval {
            request_id,
            decision,
            subject,
            ..
        } => match decision {
            None => {
                s.pending = Some(Pending::Approval {
                    request_id: request_id.clone(),
                    subject: subject.clone(),
                    asked_at: e.ts,
                })
            }
            Some(ApprovalDecision::Approved | ApprovalDecision::Rejected) => {
                if matches!(&s.pending, Some(Pending::Approval { request_id: r, .. }) if r == request_id)
                {
                    s.pending = None;
                }
            }
        },
        EntryBody::TaskState {
            task_id,
            state,
            replanning_info,
            note,
        } => {
            let t = s.tasks.entry(task_id.clone()).or_default();
            t.state = *state;
            if replanning_info.is_some() {
                t.replanning_info = replanning_info.clone();
            }
            t.note = note.clone();
        }
        EntryBody::TaskSplit { .. } => {}
        EntryBody::Action { outcome, .. } => {
            s.actions_executed += 1;
            if *outcome != super::entry::ActionOutcome::Ok {
                s.action_errors += 1;
            }
        }
        EntryBody::Checklist { comment_id } => s.checklist_comment_id = Some(comment_id.clone()),
        EntryBody::Usage { usage } => {
            s.usage.calls += usage.calls;
            s.usage.prompt_tokens += usage.prompt_tokens;
            s.usage.completion_tokens += usage.completion_tokens;
            s.usage.cached_tokens += usage.cached_tokens;
            s.usage.cost_usd += usage.cost_usd;
        }
        EntryBody::Completion { completion } => s.completion = Some((**completion).clone()),
        EntryBody::RunFinished { status, .. } => {
            s.last_status = Some(*status);
            if let Some(run) = s.runs.iter_mut().rev().find(|r| r.run_id == e.run_id) {
                run.status = Some(*status);
            }
        }
        EntryBody::Refinement { .. } | EntryBody::Judge { .. } => {}
    }
}

fn set_plan(
    s: &mut SessionState,
    version: u32,
    plan: Plan,
    at: DateTime<Utc>,
    reason: Option<String>,
    replan_type: ReplanType,
) {
    if let Some(prev) = s.plan_history.last_mut() {
        prev.final_tasks = s.tasks.iter().map(|(k, v)| (k.clone(), v.state)).collect();
    }
    s.plan_history.push(PlanSnapshot {
        version,
        plan: plan.clone(),
        started_at: at,
        reason,
        replan_type,
        final_tasks: BTreeMap::new(),
    });
    s.plan_version = version;
    s.plan = Some(plan);
}
