//! One line of a thread's JSONL history. Versioned; every entry carries the envelope fields of
//! SPEC F4 (schema version, type, timestamp, run id, sequence number).

use crate::plan::{
    ActionPlan, Completion, Phase, Plan, PlanRevision, Reflection, ReplanDecision, ReplanTrigger,
    ReplanType, ReplanningInfo, TaskState,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::outcome::ActionOutcome;

/// Bumped when an entry's meaning changes; readers accept every version up to this one.
pub const SCHEMA_VERSION: u32 = 1;

/// Deserialised by hand (in `entry_de`): the derived reader of a flattened, internally
/// tagged body buffers every line twice before building it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Schema version.
    pub v: u32,
    /// Position in the thread's file, 1-based and strictly increasing.
    pub seq: u64,
    pub ts: DateTime<Utc>,
    /// The seed's task uuid: `<ci run id>-<attempt>` or `local-<uuid>`.
    pub run_id: String,
    #[serde(flatten)]
    pub body: EntryBody,
}

/// Who asked for a run and what they asked (a summary of the trigger, without secrets).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub event: String,
    pub actor: String,
    /// `start`, `command:/replan`, `answer`, `sweep`, ...
    pub request: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The (sanitised) text that drives this run: issue body, comment, answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_url: Option<String>,
}

/// Outcome of a recorded decision once the engine acted on it (seed 000 §10.1 `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionResult {
    Success,
    Failure,
    Skipped,
    /// Waiting for a person (`/approve`) before it is executed.
    Pending,
}

/// Seed 000 §10.1: a replan decision with what the system did with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub replan_id: String,
    pub phase: Phase,
    /// The model's decision exactly as parsed (the whole JSON, §10.3 "完全に保存").
    pub llm_decision: ReplanDecision,
    pub confidence: f64,
    pub executed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_reason: Option<String>,
    pub result: DecisionResult,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<ReplanTrigger>,
    /// Fingerprint of the trigger for loop detection (same phase + type + normalised issues).
    #[serde(default)]
    pub trigger_key: String,
    /// Set when the reply could not be parsed and the seed's fallback (no replan) was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_reply: Option<String>,
    /// Where planning restarts when the decision is executed (None: no planning phase, e.g. a
    /// retry). Set by the engine from the decision and the replan levels, so replay needs no policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_phase: Option<Phase>,
}

/// Why a draft was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DraftSource {
    /// A planning phase (or all three in single-call mode).
    Planning,
    /// A re-ask after plan validation found problems.
    ValidationRetry,
    /// Seed 002 feedback-based replanning.
    Refinement,
    /// Seed 002 structure check failed: the per-task fallback merged old and new tasks.
    Fallback,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefinementVerdict {
    Accept,
    Replan,
    Reject,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JudgeOutcome {
    Done,
    NeedsContinuation,
    Replan,
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approved,
    Rejected,
}

/// The kind of forge write an [`EntryBody::Effect`] announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    Comment,
    Reaction,
    PullRequest,
    Push,
    Label,
}

/// Final status of a run, also the `status` step output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    WaitingForAnswer,
    WaitingForApproval,
    RequiresHumanIntervention,
    Stopped,
    BudgetExhausted,
    Blocked,
    Failed,
    /// `replan run --stage plan|subtask|join` stopped where other CI jobs take over (the ready
    /// subtasks run as their own jobs, a join merges them and goes on).
    FannedOut,
    /// The plan ran to its end but the evidence does not prove it: a check failed, timed out or
    /// could not run on the final tree (issue 37).
    Unverified,
    /// The goal asked for a change and the final tree is the tree the run started on.
    NoChanges,
}

/// LLM usage of one call or one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// Wall time of every HTTP attempt, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wall_ms: u64,
    /// Attempts whose reply was thrown away (time-outs, errors, retries, cut-off or unusable
    /// replies), and their wall time: counted in `calls` and `wall_ms` too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wasted_calls: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wasted_ms: u64,
    /// Calls of a model `llm.prices` has no price for: their cost is unknown, not $0, and the
    /// checklist says so. Counted in `calls` too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_calls: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageTotals {
    /// Adds `other`, saturating rather than wrapping.
    pub fn add(&mut self, other: &UsageTotals) {
        self.calls = self.calls.saturating_add(other.calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.cost_usd += other.cost_usd;
        self.wall_ms = self.wall_ms.saturating_add(other.wall_ms);
        self.wasted_calls = self.wasted_calls.saturating_add(other.wasted_calls);
        self.wasted_ms = self.wasted_ms.saturating_add(other.wasted_ms);
        self.unpriced_calls = self.unpriced_calls.saturating_add(other.unpriced_calls);
    }

    /// What `self` has beyond `earlier` (never negative).
    pub fn since(&self, earlier: &UsageTotals) -> UsageTotals {
        UsageTotals {
            calls: self.calls.saturating_sub(earlier.calls),
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_sub(earlier.completion_tokens),
            cached_tokens: self.cached_tokens.saturating_sub(earlier.cached_tokens),
            cost_usd: (self.cost_usd - earlier.cost_usd).max(0.0),
            wall_ms: self.wall_ms.saturating_sub(earlier.wall_ms),
            wasted_calls: self.wasted_calls.saturating_sub(earlier.wasted_calls),
            wasted_ms: self.wasted_ms.saturating_sub(earlier.wasted_ms),
            unpriced_calls: self.unpriced_calls.saturating_sub(earlier.unpriced_calls),
        }
    }
}

/// What Replan asked the thread (a clarification request): recorded as the `question` entry and,
/// until answered, the question the thread waits on (`state::Pending::Question`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub questions: Vec<String>,
    #[serde(default)]
    pub context: String,
    #[serde(default)]
    pub assumptions: Vec<String>,
    pub phase: Phase,
}

super::body_twin::entry_body! {
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryBody {
    RunStarted {
        request: RunRequest,
    },
    /// A planning-phase output that is not yet the current plan (seed 001 phases 1–3). Only a
    /// later `plan` or `revision` entry makes a draft current.
    Draft {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal_understanding: Option<crate::plan::GoalUnderstanding>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_decomposition: Option<crate::plan::TaskDecomposition>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action_plan: Option<ActionPlan>,
        /// The model's self-check per phase (single-call mode).
        #[serde(default, skip_serializing_if = "Value::is_null")]
        self_check: Value,
        source: DraftSource,
        /// Problems found by plan validation or structure validation in this draft.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<String>,
    },
    /// A new current plan (version 1 for the first plan of a thread).
    Plan {
        version: u32,
        plan: Box<Plan>,
    },
    /// A replacement of the current plan (seed 001 `revision`; carries the seed's fields).
    Revision {
        version: u32,
        reason: String,
        #[serde(default)]
        changes: Vec<crate::plan::RevisionChange>,
        updated_plan: Box<Plan>,
        #[serde(default)]
        replan_type: ReplanType,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<ReplanTrigger>,
    },
    Reflection {
        reflection: Reflection,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan_revision: Option<PlanRevision>,
    },
    ReplanDecision(Box<DecisionRecord>),
    Refinement {
        attempt: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        score: Option<f64>,
        #[serde(default)]
        is_acceptable: bool,
        #[serde(default)]
        issues: Vec<String>,
        #[serde(default)]
        suggestions: Vec<String>,
        decision: RefinementVerdict,
        reason: String,
    },
    Judge {
        task_id: String,
        outcome: JudgeOutcome,
        reason: String,
        #[serde(default)]
        missing_requirements: Vec<String>,
    },
    Action {
        task_id: String,
        tool: String,
        /// SHA-256 of the canonical JSON arguments; the arguments themselves may hold secrets.
        arguments_digest: String,
        outcome: ActionOutcome,
        #[serde(default)]
        summary: String,
        duration_ms: u64,
    },
    Question(Question),
    Answer {
        author: String,
        text: String,
        /// True when the scheduled sweep continued on the stated assumptions.
        #[serde(default)]
        assumed: bool,
    },
    /// An approval request (`decision` None) or a person's answer to one.
    Approval {
        request_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<ApprovalDecision>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// What is waiting for approval: a decision, an alternative, ...
        #[serde(default)]
        subject: Value,
    },
    TaskState {
        task_id: String,
        state: TaskState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replanning_info: Option<ReplanningInfo>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// New subtasks that replace a task (seed 004), with the re-wired dependents.
    /// `replanning_info` is what each new subtask carries (its generation in the chain).
    TaskSplit {
        original_task_id: String,
        new_subtasks: Vec<crate::plan::Subtask>,
        #[serde(default)]
        updated_action_plan: Option<ActionPlan>,
        replanning_info: ReplanningInfo,
        /// The whole plan after the split, when the engine computed it (replay then uses it as
        /// is instead of re-wiring).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_plan: Option<Box<Plan>>,
    },
    /// A forge write about to be made (comment, reaction, pull / merge request, push, label),
    /// appended before the call: a resumed or re-run cycle that finds its key looks the effect up
    /// (by the hidden `<!-- replan:key=… -->` marker, or the branch name) instead of repeating it.
    Effect {
        key: String,
        effect: EffectKind,
        /// What the effect names, when that is how it is found again (the branch of a push).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// The checklist comment's id, so later runs edit the same comment.
    Checklist {
        comment_id: String,
    },
    Usage {
        usage: UsageTotals,
        /// The model that answered, as the provider named it (absent in lines written before it
        /// was recorded, and for attempts no reply came back from).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    Completion {
        completion: Box<Completion>,
    },
    RunFinished {
        status: RunStatus,
        #[serde(default)]
        usage: UsageTotals,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pull_request: Option<String>,
        /// How structured replies were asked for in this run (`llm.structured_output`, or what
        /// `auto` settled on): `tool`, `json_schema`, `json_object`, `prompt`. Absent in lines
        /// written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_output: Option<String>,
    },
    /// `/budget $N` or `/budget N tokens`: the thread's cap over all its runs, set by a person
    /// in a gated forge comment (never from model output or a bundle; `app/bundle/vet.rs`).
    Budget {
        author: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
    },
    /// A CI run finished on the thread's pull request branch (issue 37): the verification the
    /// repository's own CI gives, and, for a failure, whether it started a fixing round.
    CiResult(Box<CiResult>),
    /// A review of the thread's pull request, taken as this cycle's input (issue 38).
    Review {
        round: super::review::ReviewRound,
    },
    /// One run of a check (issue 37): the evidence a subtask or the final tree is proven by.
    Check(Box<super::check::CheckRecord>),
    /// The final verification of a plan (issue 37): where its checks came from (`configured`,
    /// `detected`, `off`), which they were, and the end state it led to with the reasons.
    Verification {
        source: String,
        #[serde(default)]
        checks: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<String>,
        /// Each success criterion with its evidence (`check <name>` or `manual — <reason>`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        criteria: Vec<super::check::CriterionEvidence>,
    },
}
}

/// One finished CI run on the thread's pull request branch, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiResult {
    pub branch: String,
    /// The forge's word: `success`, `failure`, `failed`, `timed_out`, ...
    pub conclusion: String,
    pub passed: bool,
    pub head_sha: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_url: Option<String>,
    /// The failing jobs (or check runs) by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_jobs: Vec<String>,
    /// The fixing round this failure started (1-based); 0 when it started none (a pass, or a
    /// failure past `verify.ci_rounds`).
    #[serde(default)]
    pub round: u32,
}

impl EntryBody {
    /// The `type` tag as written in the file.
    pub fn type_name(&self) -> &'static str {
        match self {
            EntryBody::RunStarted { .. } => "run_started",
            EntryBody::Draft { .. } => "draft",
            EntryBody::Plan { .. } => "plan",
            EntryBody::Revision { .. } => "revision",
            EntryBody::Reflection { .. } => "reflection",
            EntryBody::ReplanDecision(_) => "replan_decision",
            EntryBody::Refinement { .. } => "refinement",
            EntryBody::Judge { .. } => "judge",
            EntryBody::Action { .. } => "action",
            EntryBody::Question { .. } => "question",
            EntryBody::Answer { .. } => "answer",
            EntryBody::Approval { .. } => "approval",
            EntryBody::TaskState { .. } => "task_state",
            EntryBody::TaskSplit { .. } => "task_split",
            EntryBody::Effect { .. } => "effect",
            EntryBody::Checklist { .. } => "checklist",
            EntryBody::Usage { .. } => "usage",
            EntryBody::Completion { .. } => "completion",
            EntryBody::RunFinished { .. } => "run_finished",
            EntryBody::Budget { .. } => "budget",
            EntryBody::CiResult(_) => "ci_result",
            EntryBody::Review { .. } => "review",
            EntryBody::Check(_) => "check",
            EntryBody::Verification { .. } => "verification",
        }
    }
}
