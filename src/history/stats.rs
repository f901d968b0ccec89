//! `replan history stats`: seed 003 `ReplanHistory.getMetrics()` over a thread's entries.

use super::entry::{ApprovalDecision, Entry, EntryBody, RunStatus, UsageTotals};
use super::state::replay;
use crate::plan::TaskState;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Decisions by confidence, in the bands of seed 000 §9.3 (what the engine does with them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ConfidenceBands {
    /// ≥ 0.8: executed.
    pub high: u64,
    /// 0.5 – 0.8: executed with a warning.
    pub medium: u64,
    /// 0.3 – 0.5: a person is asked to approve.
    pub low: u64,
    /// < 0.3: skipped.
    pub very_low: u64,
}

impl ConfidenceBands {
    pub fn add(&mut self, confidence: f64) {
        if confidence >= 0.8 {
            self.high += 1;
        } else if confidence >= 0.5 {
            self.medium += 1;
        } else if confidence >= 0.3 {
            self.low += 1;
        } else {
            self.very_low += 1;
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HistoryStats {
    pub entries: usize,
    pub corrupt_lines: usize,
    pub runs_started: u64,
    pub runs_finished: u64,
    pub runs_completed: u64,
    /// runs completed / runs finished.
    pub run_success_rate: Option<f64>,
    pub runs_by_status: BTreeMap<String, u64>,
    pub plan_version: u32,
    pub plan_revisions: u32,
    pub decisions: u64,
    /// Decisions that asked for a replan, by the phase they were made in.
    pub replans_by_phase: BTreeMap<String, u64>,
    /// Decisions that asked for a replan, by replan type.
    pub replans_by_type: BTreeMap<String, u64>,
    pub decisions_executed: u64,
    pub decisions_overridden: u64,
    pub override_reasons: BTreeMap<String, u64>,
    pub confidence: ConfidenceBands,
    pub average_decision_duration_ms: Option<f64>,
    /// Tasks of the current plan (and split-off tasks), not counting replaced ones.
    pub tasks_total: u64,
    pub tasks_done: u64,
    /// tasks done / tasks total.
    pub task_success_rate: Option<f64>,
    pub actions: u64,
    pub action_errors: u64,
    pub questions: u64,
    pub answers: u64,
    pub approvals_requested: u64,
    pub approvals_granted: u64,
    pub approvals_rejected: u64,
    pub usage: UsageTotals,
}

pub fn stats(entries: &[Entry], corrupt_lines: usize) -> HistoryStats {
    let state = replay(entries);
    let mut s = HistoryStats {
        entries: entries.len(),
        corrupt_lines,
        plan_version: state.plan_version,
        plan_revisions: state.revision_count(),
        actions: state.actions_executed,
        action_errors: state.action_errors,
        usage: state.usage,
        ..Default::default()
    };
    let mut run_usage = UsageTotals::default();
    let mut duration_total = 0u64;
    for e in entries {
        match &e.body {
            EntryBody::RunStarted { .. } => s.runs_started += 1,
            EntryBody::RunFinished { status, usage, .. } => {
                s.runs_finished += 1;
                if *status == RunStatus::Completed {
                    s.runs_completed += 1;
                }
                *s.runs_by_status.entry(status_name(*status)).or_default() += 1;
                add_usage(&mut run_usage, usage);
            }
            EntryBody::ReplanDecision(d) => {
                s.decisions += 1;
                if d.llm_decision.replan_needed {
                    *s.replans_by_phase
                        .entry(d.phase.as_str().to_string())
                        .or_default() += 1;
                    *s.replans_by_type
                        .entry(d.llm_decision.replan_type.as_str().to_string())
                        .or_default() += 1;
                }
                if d.executed {
                    s.decisions_executed += 1;
                }
                if let Some(reason) = &d.override_reason {
                    s.decisions_overridden += 1;
                    *s.override_reasons.entry(reason.clone()).or_default() += 1;
                }
                s.confidence.add(d.confidence);
                duration_total += d.duration_ms;
            }
            EntryBody::Question { .. } => s.questions += 1,
            EntryBody::Answer { .. } => s.answers += 1,
            EntryBody::Approval { decision, .. } => match decision {
                None => s.approvals_requested += 1,
                Some(ApprovalDecision::Approved) => s.approvals_granted += 1,
                Some(ApprovalDecision::Rejected) => s.approvals_rejected += 1,
            },
            _ => {}
        }
    }
    // Runs report their totals in `run_finished`; `usage` entries are the finer-grained record.
    // Count one source only: the usage entries when there are any.
    if s.usage == UsageTotals::default() {
        s.usage = run_usage;
    }
    s.run_success_rate = ratio(s.runs_completed, s.runs_finished);
    if s.decisions > 0 {
        s.average_decision_duration_ms = Some(duration_total as f64 / s.decisions as f64);
    }

    let mut task_ids: BTreeSet<&str> = BTreeSet::new();
    if let Some(plan) = &state.plan {
        task_ids.extend(plan.subtask_ids());
    }
    task_ids.extend(state.tasks.keys().map(String::as_str));
    for id in task_ids {
        match state.task_state(id) {
            TaskState::ReplacedByReplan | TaskState::Cancelled => {}
            TaskState::Done => {
                s.tasks_total += 1;
                s.tasks_done += 1;
            }
            _ => s.tasks_total += 1,
        }
    }
    s.task_success_rate = ratio(s.tasks_done, s.tasks_total);
    s
}

fn add_usage(total: &mut UsageTotals, u: &UsageTotals) {
    total.calls = total.calls.saturating_add(u.calls);
    total.prompt_tokens = total.prompt_tokens.saturating_add(u.prompt_tokens);
    total.completion_tokens = total.completion_tokens.saturating_add(u.completion_tokens);
    total.cached_tokens = total.cached_tokens.saturating_add(u.cached_tokens);
    total.cost_usd += u.cost_usd;
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn status_name(s: RunStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn percent(r: Option<f64>) -> String {
    r.map(|r| format!("{:.0} %", r * 100.0))
        .unwrap_or_else(|| "n/a".into())
}

fn counts(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for HistoryStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Entries:            {} ({} corrupt lines skipped)",
            self.entries, self.corrupt_lines
        )?;
        writeln!(
            f,
            "Runs:               {} started, {} finished, {} completed (success rate {})",
            self.runs_started,
            self.runs_finished,
            self.runs_completed,
            percent(self.run_success_rate)
        )?;
        writeln!(f, "Runs by status:     {}", counts(&self.runs_by_status))?;
        writeln!(
            f,
            "Plan:               version {}, {} revisions",
            self.plan_version, self.plan_revisions
        )?;
        writeln!(
            f,
            "Tasks:              {}/{} done (success rate {})",
            self.tasks_done,
            self.tasks_total,
            percent(self.task_success_rate)
        )?;
        writeln!(
            f,
            "Decisions:          {} ({} executed, {} overridden)",
            self.decisions, self.decisions_executed, self.decisions_overridden
        )?;
        writeln!(f, "Replans by phase:   {}", counts(&self.replans_by_phase))?;
        writeln!(f, "Replans by type:    {}", counts(&self.replans_by_type))?;
        writeln!(f, "Override reasons:   {}", counts(&self.override_reasons))?;
        let c = &self.confidence;
        writeln!(
            f,
            "Confidence:         ≥0.8: {}, 0.5–0.8: {}, 0.3–0.5: {}, <0.3: {}",
            c.high, c.medium, c.low, c.very_low
        )?;
        writeln!(
            f,
            "Avg decision time:  {}",
            self.average_decision_duration_ms
                .map(|ms| format!("{ms:.0} ms"))
                .unwrap_or_else(|| "n/a".into())
        )?;
        writeln!(
            f,
            "Actions:            {} ({} failed)",
            self.actions, self.action_errors
        )?;
        writeln!(
            f,
            "Questions:          {} asked, {} answered",
            self.questions, self.answers
        )?;
        writeln!(
            f,
            "Approvals:          {} requested, {} approved, {} rejected",
            self.approvals_requested, self.approvals_granted, self.approvals_rejected
        )?;
        let u = &self.usage;
        writeln!(
            f,
            "LLM usage:          {} calls, {} prompt + {} completion tokens ({} cached), ${:.4}",
            u.calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cost_usd
        )
    }
}
