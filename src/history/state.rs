//! `SessionState = replay(entries)`: everything a run needs to know about a thread, derived from its
//! history and never stored twice. Replay is pure: same entries, same state.

use super::entry::{
    ApprovalDecision, DecisionRecord, DecisionResult, DraftSource, Entry, EntryBody, JudgeOutcome,
    Question, RefinementVerdict, RunRequest, RunStatus, UsageTotals,
};
use crate::plan::{
    ActionPlan, Completion, GoalUnderstanding, Phase, Plan, Reflection, ReplanTrigger, ReplanType,
    ReplanningInfo, TaskDecomposition, TaskState,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One quality-judge round of the refinement loop (seed 002) on the current draft.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefinementRound {
    pub attempt: u32,
    pub score: Option<f64>,
    pub is_acceptable: bool,
    pub verdict: RefinementVerdict,
    /// The replan was asked for because of suggestions on an acceptable plan.
    pub for_suggestions: bool,
}

/// A plan being (re)written. Nothing in here is the current plan until a `plan` or `revision`
/// entry makes it so; a cycle killed half-way resumes from exactly this.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlanningWork {
    /// The first phase being (re)planned; earlier phases are kept from the previous plan.
    pub from: Option<Phase>,
    pub replan_type: ReplanType,
    pub trigger: Option<ReplanTrigger>,
    /// Why this planning started (None for the first plan).
    pub reason: Option<String>,
    /// Feedback the planner must take into account (decision issues, a person's reason, answers).
    pub feedback: Vec<String>,
    pub goal: Option<GoalUnderstanding>,
    pub decomposition: Option<TaskDecomposition>,
    pub actions: Option<ActionPlan>,
    pub self_check: Value,
    /// Phases whose replan decision let the draft go on.
    pub decided: BTreeSet<Phase>,
    /// Validation or structure problems of the latest draft.
    pub problems: Vec<String>,
    pub validation_retries: u32,
    pub refinement: Vec<RefinementRound>,
    /// The draft before the latest refinement replan (for the structure check and fallback).
    pub previous_draft: Option<Plan>,
    /// The latest draft came from a refinement replan and still needs its structure check.
    pub needs_structure_check: bool,
    /// Drafts written by refinement replans since the last planning draft.
    pub refinement_drafts: u32,
}

impl PlanningWork {
    /// The draft as a plan once all three phases are present.
    pub fn draft(&self) -> Option<Plan> {
        Some(Plan {
            goal_understanding: self.goal.clone()?,
            task_decomposition: self.decomposition.clone()?,
            action_plan: self.actions.clone()?,
        })
    }

    pub fn refinement_accepted(&self) -> bool {
        self.refinement
            .last()
            .is_some_and(|r| r.verdict == RefinementVerdict::Accept)
    }
}

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
    /// The same plan as [`SessionState::plan`] while it is current: neither replay nor a
    /// step's copy of the state copies it.
    pub plan: std::sync::Arc<Plan>,
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
        #[serde(flatten)]
        asked: Question,
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
    /// The structured-output mode the run finished with, when it was recorded.
    pub structured_output: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionState {
    /// Shared, not copied: every step works on a copy of the state (see `engine::batch`), and
    /// the plan is its largest part and changes only with a new plan or revision.
    pub plan: Option<std::sync::Arc<Plan>>,
    pub plan_version: u32,
    pub plan_history: Vec<PlanSnapshot>,
    pub tasks: BTreeMap<String, TaskStatus>,
    /// Shared, not copied, by a step's copy of the state; and the `Vec` that grows through a
    /// replay moves pointers, not records.
    pub decisions: Vec<std::sync::Arc<DecisionRecord>>,
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
    /// A plan being written or rewritten (None when the current plan stands).
    pub planning: Option<PlanningWork>,
    /// NEEDS_CONTINUATION verdicts per task in the current plan.
    pub continuations: BTreeMap<String, u32>,
    /// The end-of-execution monitoring decision (seed 000 §8) was made for the current plan.
    pub final_review_done: bool,
    /// Plan revisions made by reflection (`plan_revision`), limited by `max_revisions`.
    pub reflection_revisions: u32,
    /// Judge verdicts in file order (task id, outcome).
    pub judgements: Vec<(String, JudgeOutcome)>,
    /// Keys of the forge writes recorded (`effect` entries) before they were made: a write whose
    /// key is here may already have happened and is looked up before it is made again.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub effect_keys: std::collections::BTreeSet<String>,
    /// The plan a person approved last (issue 39, `planning.approval`).
    pub approved_plan: Option<super::plan_approval::ApprovedPlan>,
    /// The thread's caps set by `/budget` (the latest of each kind wins over the config).
    pub budget: ThreadBudget,
    /// CI runs on the thread's pull request branch, in file order (`ci_result` entries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ci_results: Vec<super::entry::CiResult>,
    /// The branch of the pull / merge request Replan opened for this thread (its `effect`
    /// entry): later changes go to it, never to a second one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request_branch: Option<String>,
    /// Reviews of that pull request taken as cycle inputs, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<super::review::ReviewState>,
    /// What the checks proved, on which trees (issue 37).
    #[serde(skip_serializing_if = "super::evidence::Evidence::is_empty")]
    pub evidence: super::evidence::Evidence,
}

/// `/budget $N` / `/budget N tokens` as recorded in the thread's history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThreadBudget {
    pub usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl SessionState {
    /// This state with these tasks in these states, for unit tests.
    #[cfg(test)]
    pub(crate) fn with_task_states(mut self, states: &[(&str, TaskState)]) -> Self {
        for (id, state) in states {
            self.tasks.insert(
                id.to_string(),
                TaskStatus {
                    state: *state,
                    ..Default::default()
                },
            );
        }
        self
    }

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

    /// Subtasks of the current plan that are done.
    pub fn tasks_done(&self) -> usize {
        self.live_subtask_ids()
            .filter(|id| self.task_state(id) == TaskState::Done)
            .count()
    }

    /// Subtasks of the current plan that count for progress (not replaced or cancelled).
    pub fn tasks_total(&self) -> usize {
        self.live_subtask_ids().count()
    }

    fn live_subtask_ids(&self) -> impl Iterator<Item = &str> {
        self.plan.iter().flat_map(|p| p.subtask_ids()).filter(|id| {
            !matches!(
                self.task_state(id),
                TaskState::ReplacedByReplan | TaskState::Cancelled
            )
        })
    }

    /// Replans executed so far, in file order.
    pub fn executed_decisions(&self) -> impl Iterator<Item = &DecisionRecord> {
        self.decisions.iter().map(|d| &**d).filter(|d| d.executed)
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
    apply_owned(s, e.clone())
}

/// [`apply`] for an entry that is not needed afterwards: its parts move into the state instead of
/// being copied (the way a whole file is replayed, see [`super::fold`]).
pub fn apply_owned(s: &mut SessionState, e: Entry) {
    let Entry {
        v,
        seq,
        ts,
        run_id,
        body,
    } = e;
    s.last_seq = s.last_seq.max(seq);
    match body {
        EntryBody::RunStarted { request } => s.runs.push(RunSummary {
            run_id,
            request,
            started_at: ts,
            status: None,
            structured_output: None,
        }),
        EntryBody::Plan { version, plan } => {
            set_plan(s, version, *plan, ts, None, ReplanType::None)
        }
        EntryBody::Revision {
            version,
            reason,
            updated_plan,
            replan_type,
            ..
        } => {
            if replan_type == ReplanType::PlanRevision {
                s.reflection_revisions += 1;
            }
            set_plan(s, version, *updated_plan, ts, Some(reason), replan_type)
        }
        EntryBody::Reflection { reflection, .. } => s.reflections.push(reflection),
        EntryBody::ReplanDecision(d) => apply_decision(s, d),
        EntryBody::Draft {
            goal_understanding,
            task_decomposition,
            action_plan,
            self_check,
            source,
            problems,
        } => {
            let w = s.planning.get_or_insert_with(PlanningWork::default);
            if source == DraftSource::Planning {
                // A new phase output invalidates the decisions on it and everything after it.
                let first = [
                    (goal_understanding.is_some(), Phase::GoalUnderstanding),
                    (task_decomposition.is_some(), Phase::TaskDecomposition),
                    (action_plan.is_some(), Phase::ActionSequence),
                ]
                .into_iter()
                .find(|(present, _)| *present)
                .map(|(_, p)| p);
                if let Some(first) = first {
                    w.decided.retain(|p| *p < first);
                    if first <= Phase::GoalUnderstanding && goal_understanding.is_some() {
                        if task_decomposition.is_none() {
                            w.decomposition = None;
                        }
                        if action_plan.is_none() {
                            w.actions = None;
                        }
                    }
                    if first == Phase::TaskDecomposition && action_plan.is_none() {
                        w.actions = None;
                    }
                }
                w.refinement.clear();
                w.refinement_drafts = 0;
                w.previous_draft = None;
                w.needs_structure_check = false;
            }
            if source == DraftSource::Refinement {
                w.refinement_drafts += 1;
                w.previous_draft = w.draft();
                w.needs_structure_check = true;
            }
            if source == DraftSource::Fallback {
                w.needs_structure_check = false;
            }
            if source == DraftSource::ValidationRetry {
                w.validation_retries += 1;
            }
            if goal_understanding.is_some() {
                w.goal = goal_understanding;
            }
            if task_decomposition.is_some() {
                w.decomposition = task_decomposition;
            }
            if action_plan.is_some() {
                w.actions = action_plan;
            }
            if !self_check.is_null() {
                w.self_check = self_check;
            }
            w.problems = problems;
        }
        EntryBody::Question(asked) => {
            s.pending = Some(Pending::Question {
                asked,
                asked_at: ts,
            })
        }
        EntryBody::Answer { text, assumed, .. } => {
            if let Some(Pending::Question { asked, .. }) = s.pending.take() {
                let Question {
                    questions,
                    assumptions,
                    ..
                } = asked;
                // The answer (or the stated assumptions) is feedback for a fresh goal understanding.
                let mut feedback = vec![format!("Questions asked: {}", questions.join(" | "))];
                if assumed {
                    feedback.push(format!(
                        "No answer arrived in time; proceed on these assumptions: {}",
                        assumptions.join(" | ")
                    ));
                } else {
                    feedback.push(format!("Answer from the user: {text}"));
                }
                let keep = s.planning.take();
                s.planning = Some(PlanningWork {
                    from: Some(Phase::GoalUnderstanding),
                    replan_type: ReplanType::ClarificationRequest,
                    reason: keep.as_ref().and_then(|w| w.reason.clone()),
                    feedback,
                    ..PlanningWork::default()
                });
            }
        }
        EntryBody::Approval {
            request_id,
            decision,
            subject,
            author,
            ..
        } => match decision {
            None => {
                s.pending = Some(Pending::Approval {
                    request_id,
                    subject,
                    asked_at: ts,
                })
            }
            Some(verdict) => {
                if matches!(&s.pending, Some(Pending::Approval { request_id: r, .. }) if *r == request_id)
                {
                    s.pending = None;
                }
                apply_approval(s, &subject, verdict);
                if verdict == ApprovalDecision::Approved
                    && let Some(plan) = &s.plan
                    && let Some(approved) = super::plan_approval::approval_of(
                        plan,
                        s.plan_version,
                        &subject,
                        author.as_deref(),
                        ts,
                    )
                {
                    s.approved_plan = Some(approved);
                }
                // An approved alternative (seed 003) carries the entries that make it current.
                if verdict == ApprovalDecision::Approved
                    && subject.get("kind").and_then(Value::as_str) == Some("alternative")
                {
                    let bodies: Vec<EntryBody> = subject
                        .get("entries")
                        .cloned()
                        .and_then(|v| serde_json::from_value(v).ok())
                        .unwrap_or_default();
                    // A budget is a person's command, never part of what a plan carries.
                    for body in bodies
                        .into_iter()
                        .filter(|b| !matches!(b, EntryBody::Budget { .. }))
                    {
                        let inner = Entry {
                            v,
                            seq,
                            ts,
                            run_id: run_id.clone(),
                            body,
                        };
                        apply_owned(s, inner);
                    }
                }
            }
        },
        EntryBody::TaskState {
            task_id,
            state,
            replanning_info,
            note,
        } => {
            let t = s.tasks.entry(task_id).or_default();
            t.state = state;
            if replanning_info.is_some() {
                t.replanning_info = replanning_info;
            }
            t.note = note;
            if !state.is_terminal() {
                s.final_review_done = false;
                s.completion = None;
            }
        }
        EntryBody::TaskSplit {
            original_task_id,
            new_subtasks,
            updated_action_plan,
            replanning_info,
            updated_plan,
        } => apply_split(
            s,
            &original_task_id,
            &new_subtasks,
            updated_action_plan.as_ref(),
            &replanning_info,
            updated_plan.as_deref(),
        ),
        EntryBody::Action { outcome, .. } => {
            s.actions_executed += 1;
            if outcome != super::entry::ActionOutcome::Ok {
                s.action_errors += 1;
            }
        }
        EntryBody::Checklist { comment_id } => s.checklist_comment_id = Some(comment_id),
        EntryBody::Effect {
            key,
            effect,
            target,
            ..
        } => {
            s.effect_keys.insert(key);
            if effect == super::entry::EffectKind::PullRequest && target.is_some() {
                s.pull_request_branch = target;
            }
        }
        EntryBody::Review { round } => {
            s.reviews.retain(|r| r.round.review_id != round.review_id);
            s.reviews.push(super::review::ReviewState {
                round,
                answers: None,
            });
        }
        EntryBody::Usage { mut usage, .. } => {
            // Spend only grows: a line that claims a negative or non-numeric cost adds nothing.
            if !(usage.cost_usd.is_finite() && usage.cost_usd >= 0.0) {
                usage.cost_usd = 0.0;
            }
            s.usage.add(&usage)
        }
        EntryBody::Budget { usd, tokens, .. } => {
            // A cap that is not a number of dollars (NaN, negative) is no cap set.
            if let Some(usd) = usd.filter(|v| v.is_finite() && *v >= 0.0) {
                s.budget.usd = Some(usd);
            }
            if tokens.is_some() {
                s.budget.tokens = tokens;
            }
        }
        EntryBody::CiResult(result) => s.ci_results.push(*result),
        EntryBody::Completion { completion } => {
            // A completion after a review round answers it (with no answers, none addressed).
            if let Some(review) = s.reviews.last_mut().filter(|r| r.answers.is_none())
                && completion.done
            {
                review.answers = Some(completion.review_threads.clone());
            }
            s.completion = Some(*completion)
        }
        EntryBody::Check(record) => {
            s.evidence.record(*record);
            s.evidence.ci_results_before_latest_check = s.ci_results.len();
        }
        EntryBody::Verification {
            source,
            checks,
            problems,
            criteria,
        } => {
            s.evidence.verification = Some(super::evidence::Verification {
                source,
                checks,
                problems,
                criteria,
            })
        }
        EntryBody::RunFinished {
            status,
            structured_output,
            ..
        } => {
            s.last_status = Some(status);
            if let Some(run) = s.runs.iter_mut().rev().find(|r| r.run_id == run_id) {
                run.status = Some(status);
                run.structured_output = structured_output;
            }
        }
        EntryBody::Refinement {
            attempt,
            score,
            is_acceptable,
            decision,
            reason,
            ..
        } => {
            if let Some(w) = s.planning.as_mut() {
                w.refinement.push(RefinementRound {
                    attempt,
                    score,
                    is_acceptable,
                    verdict: decision,
                    for_suggestions: decision == RefinementVerdict::Replan && is_acceptable,
                });
                if decision == RefinementVerdict::Replan {
                    w.feedback = vec![reason];
                }
            }
        }
        EntryBody::Judge {
            task_id, outcome, ..
        } => {
            if outcome == JudgeOutcome::NeedsContinuation {
                *s.continuations.entry(task_id.clone()).or_default() += 1;
            }
            s.judgements.push((task_id, outcome));
        }
    }
}

fn apply_decision(s: &mut SessionState, d: Box<DecisionRecord>) {
    if d.executed {
        start_replan(s, &d);
    } else if d.result != DecisionResult::Pending {
        settle_decision(s, d.phase);
    }
    s.decisions.push(d.into());
}

/// A decision that does not replan lets the draft (or the finished plan) go on.
fn settle_decision(s: &mut SessionState, phase: Phase) {
    match phase {
        Phase::Reflection => s.final_review_done = true,
        Phase::Execution => {}
        planning_phase => {
            if let Some(w) = s.planning.as_mut() {
                for p in [
                    Phase::GoalUnderstanding,
                    Phase::TaskDecomposition,
                    Phase::ActionSequence,
                ] {
                    if p <= planning_phase {
                        w.decided.insert(p);
                    }
                }
            }
        }
    }
}

fn apply_approval(s: &mut SessionState, subject: &Value, verdict: ApprovalDecision) {
    let Some(replan_id) = subject.get("replan_id").and_then(Value::as_str) else {
        return;
    };
    let Some(idx) = s.decisions.iter().rposition(|d| d.replan_id == replan_id) else {
        return;
    };
    let d = std::sync::Arc::make_mut(&mut s.decisions[idx]);
    match verdict {
        ApprovalDecision::Approved => {
            d.executed = true;
            d.result = DecisionResult::Success;
            let d = s.decisions[idx].clone();
            start_replan(s, &d);
        }
        ApprovalDecision::Rejected => {
            d.result = DecisionResult::Skipped;
            d.override_reason = Some("rejected by a person".to_string());
            let phase = d.phase;
            settle_decision(s, phase);
        }
    }
}

impl SessionState {
    /// The review round in progress or last answered for `review_id`: the round of that review,
    /// or the round that took up that review thread (GitLab, where the event names a discussion
    /// and a round takes every open discussion at once).
    pub fn review(&self, review_id: &str) -> Option<&super::review::ReviewState> {
        self.reviews.iter().find(|r| {
            r.round.review_id == review_id || r.round.threads.iter().any(|t| t.id == review_id)
        })
    }

    /// The review round whose cycle has not completed yet.
    pub fn open_review(&self) -> Option<&super::review::ReviewState> {
        self.reviews.last().filter(|r| r.answers.is_none())
    }
}

/// An executed replan: planning restarts at `restart_phase`, keeping the phases before it.
fn start_replan(s: &mut SessionState, d: &DecisionRecord) {
    let Some(from) = d.restart_phase else {
        return;
    };
    // A replan after the plan completed (a person's `/replan`) makes that completion stale:
    // the revised plan runs and completes again.
    s.completion = None;
    let work = s.planning.as_ref();
    let base = (
        work.and_then(|w| w.goal.clone())
            .or_else(|| s.plan.as_ref().map(|p| p.goal_understanding.clone())),
        work.and_then(|w| w.decomposition.clone())
            .or_else(|| s.plan.as_ref().map(|p| p.task_decomposition.clone())),
    );
    let mut feedback = Vec::new();
    if !d.llm_decision.reasoning.is_empty() {
        feedback.push(d.llm_decision.reasoning.clone());
    }
    feedback.extend(d.llm_decision.issues_found.iter().cloned());
    feedback.extend(d.llm_decision.issues_identified.iter().cloned());
    feedback.extend(d.llm_decision.missing_steps.iter().cloned());
    feedback.extend(d.llm_decision.recommended_actions.iter().cloned());
    feedback.extend(d.llm_decision.additional_actions.iter().cloned());
    let mut w = PlanningWork {
        from: Some(from),
        replan_type: d.llm_decision.replan_type,
        trigger: d.trigger,
        reason: Some(if d.llm_decision.reasoning.is_empty() {
            d.llm_decision.replan_type.as_str().to_string()
        } else {
            d.llm_decision.reasoning.clone()
        }),
        feedback,
        ..PlanningWork::default()
    };
    if from > Phase::GoalUnderstanding {
        w.goal = base.0;
        w.decided.insert(Phase::GoalUnderstanding);
    }
    if from > Phase::TaskDecomposition {
        w.decomposition = base.1;
        w.decided.insert(Phase::TaskDecomposition);
    }
    s.planning = Some(w);
}

/// Seed 004: the original task is replaced by new subtasks; its dependents now wait for them.
fn apply_split(
    s: &mut SessionState,
    original: &str,
    new_subtasks: &[crate::plan::Subtask],
    updated_action_plan: Option<&ActionPlan>,
    info: &ReplanningInfo,
    updated_plan: Option<&Plan>,
) {
    let new_ids: Vec<String> = new_subtasks.iter().map(|t| t.id.clone()).collect();
    if let Some(updated) = updated_plan {
        s.plan = Some(std::sync::Arc::new(updated.clone()));
        for id in &new_ids {
            let t = s.tasks.entry(id.clone()).or_default();
            t.state = TaskState::Ready;
            t.replanning_info = Some(info.clone());
        }
        s.final_review_done = false;
        return;
    }
    let Some(plan) = s.plan.as_mut().map(std::sync::Arc::make_mut) else {
        return;
    };
    let subtasks = &mut plan.task_decomposition.subtasks;
    let at = subtasks
        .iter()
        .position(|t| t.id == original)
        .map(|i| i + 1)
        .unwrap_or(subtasks.len());
    for dependent in subtasks.iter_mut() {
        if dependent.dependencies.iter().any(|d| d == original) {
            dependent.dependencies.retain(|d| d != original);
            dependent.dependencies.extend(new_ids.iter().cloned());
        }
    }
    for (i, t) in new_subtasks.iter().enumerate() {
        subtasks.insert(at + i, t.clone());
    }
    match updated_action_plan {
        Some(ap) => plan.action_plan = ap.clone(),
        None => {
            let order = &mut plan.action_plan.execution_order;
            let pos = order.iter().position(|id| id == original);
            match pos {
                Some(p) => {
                    order.splice(p + 1..p + 1, new_ids.iter().cloned());
                }
                None => order.extend(new_ids.iter().cloned()),
            }
        }
    }
    let root = info
        .original_task_id
        .clone()
        .unwrap_or_else(|| original.to_string());
    for id in &new_ids {
        let t = s.tasks.entry(id.clone()).or_default();
        t.state = TaskState::Ready;
        t.replanning_info = Some(ReplanningInfo {
            iteration: info.iteration,
            max_iterations: info.max_iterations,
            original_task_id: Some(root.clone()),
            replaced_by: vec![],
            replan_reason: info.replan_reason.clone(),
        });
    }
    s.final_review_done = false;
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
    let plan = std::sync::Arc::new(plan);
    s.plan_history.push(PlanSnapshot {
        version,
        plan: plan.clone(),
        started_at: at,
        reason,
        replan_type,
        final_tasks: BTreeMap::new(),
    });
    // Seed 000 §11.4.3: replans that keep progress keep the done tasks the new plan still has;
    // the others start afresh. The engine also records the carried tasks as `task_state` entries
    // in the same append, so the history says so explicitly.
    let keep = replan_type.keeps_progress();
    let kept: BTreeMap<String, TaskStatus> = s
        .tasks
        .iter()
        .filter(|(id, t)| keep && t.state == TaskState::Done && plan.subtask(id).is_some())
        .map(|(id, t)| (id.clone(), t.clone()))
        .collect();
    s.plan_version = version;
    s.plan = Some(plan);
    s.tasks = kept;
    s.continuations.clear();
    s.planning = None;
    s.final_review_done = false;
    s.completion = None;
}
