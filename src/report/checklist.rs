//! The one checklist comment per thread, in the formats of seed 000 §11.2–11.4: revision number and
//! reason, previous progress, the plan as a task list, previous plans folded in `<details>`, and the
//! progress / revisions footer.

use super::markers::CHECKLIST_MARKER;
use super::mermaid;
pub use super::status_line::status_line;
use crate::history::SessionState;
use crate::history::entry::RunStatus;
use crate::history::plan_approval::named_plan;
use crate::history::state::{Pending, PlanSnapshot};
use crate::plan::hash::short;
use crate::plan::{Plan, TaskState};
use chrono::{DateTime, Utc};
use std::fmt::Write;

/// Extra facts the state does not hold.
#[derive(Debug, Clone, Default)]
pub struct ChecklistContext {
    pub run_url: Option<String>,
    /// "openai/gpt-4o" and the like, for the footer.
    pub model: Option<String>,
    /// The configured per-thread caps (`llm.budget.per_thread_*`); `/budget` entries override.
    pub per_thread: crate::history::ledger::ThreadCap,
}

/// Done and countable tasks of a plan under the given states. Replaced and cancelled tasks do not
/// count: their work lives on in the tasks that replaced them.
pub fn progress(plan: &Plan, states: &dyn Fn(&str) -> TaskState) -> (usize, usize) {
    let mut done = 0;
    let mut total = 0;
    for task in &plan.task_decomposition.subtasks {
        match states(&task.id) {
            TaskState::ReplacedByReplan | TaskState::Cancelled => {}
            TaskState::Done => {
                done += 1;
                total += 1;
            }
            _ => total += 1,
        }
    }
    (done, total)
}

fn percent(done: usize, total: usize) -> usize {
    (done * 100).checked_div(total).unwrap_or(0)
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

use super::md_text::inline;

fn task_line(out: &mut String, id: &str, description: &str, state: TaskState, evidence: &str) {
    let (mark, suffix) = match state {
        TaskState::Done => ("x", ""),
        TaskState::Ready => (" ", ""),
        TaskState::Running => (" ", " 🔄 *running*"),
        TaskState::NeedsContinuation => (" ", " 🔁 *continuing*"),
        TaskState::Blocked => (" ", " ⛔ *blocked*"),
        TaskState::Cancelled => (" ", " *cancelled*"),
        TaskState::ReplacedByReplan => ("x", " ↪️ *replaced by a finer split*"),
    };
    let (id, description) = (inline(id), inline(description));
    if matches!(state, TaskState::Cancelled | TaskState::ReplacedByReplan) {
        let _ = writeln!(out, "- [{mark}] ~~**{id}**: {description}~~{suffix}");
    } else {
        let _ = writeln!(out, "- [{mark}] **{id}**: {description}{suffix}{evidence}");
    }
}

fn previous_plans(out: &mut String, history: &[PlanSnapshot]) {
    let older = &history[..history.len().saturating_sub(1)];
    if older.is_empty() {
        return;
    }
    out.push_str("\n<details>\n<summary>📜 Previous Plan History</summary>\n\n");
    for snap in older.iter().rev() {
        if snap.version <= 1 {
            let _ = writeln!(out, "### Original Plan ({})", timestamp(snap.started_at));
        } else {
            let _ = writeln!(
                out,
                "### Revision #{} ({})",
                snap.version - 1,
                timestamp(snap.started_at)
            );
        }
        for task in &snap.plan.task_decomposition.subtasks {
            let state = snap.final_tasks.get(&task.id).copied().unwrap_or_default();
            let mark = if state == TaskState::Done { "x" } else { " " };
            let _ = writeln!(
                out,
                "- [{mark}] {}: {}",
                inline(&task.id),
                inline(&task.description)
            );
        }
        if let Some(reason) = &snap.reason {
            let _ = writeln!(out, "\n**Revision Reason**: {}", inline(reason));
        }
        out.push('\n');
    }
    out.push_str("</details>\n");
}

/// Render the checklist comment body for the current state. Pure: the same state renders the same
/// text, which is what lets the reporter skip edits that change nothing.
pub fn render(state: &SessionState, ctx: &ChecklistContext) -> String {
    let mut out = String::new();
    out.push_str(CHECKLIST_MARKER);
    out.push('\n');
    let Some(plan) = &state.plan else {
        // Once the run has ended, say how, never "Planning…".
        match state.runs.last().and_then(|r| r.status) {
            Some(status) => {
                let _ = writeln!(
                    out,
                    "## 📋 Execution Plan\n\n{}: no plan was made.",
                    status_line(status)
                );
            }
            None => out.push_str("## 📋 Execution Plan\n\n⏳ *Planning…*\n"),
        }
        footer(&mut out, state, ctx, None);
        return out;
    };
    let current = state.plan_history.last();
    let revision = state.revision_count();
    if revision == 0 {
        out.push_str("## 📋 Execution Plan\n\n");
    } else {
        let _ = writeln!(out, "## 📋 Execution Plan (Revised #{revision})\n");
    }
    if !plan.goal_understanding.main_objective.is_empty() {
        let _ = writeln!(
            out,
            "**Goal**: {}\n",
            inline(&plan.goal_understanding.main_objective)
        );
    }
    if revision > 0 {
        if let Some(reason) = current.and_then(|c| c.reason.as_deref()) {
            let _ = writeln!(out, "**Revision Reason**: {}\n", inline(reason));
        }
        if let Some(prev) = state.plan_history.iter().rev().nth(1) {
            let (done, total) = progress(&prev.plan, &|id| {
                prev.final_tasks.get(id).copied().unwrap_or_default()
            });
            let _ = writeln!(out, "**Previous Progress**: {done}/{total}\n");
        }
        out.push_str("### New Plan:\n");
    } else {
        out.push_str("### Plan:\n");
    }
    for task in &plan.task_decomposition.subtasks {
        task_line(
            &mut out,
            &task.id,
            &task.description,
            state.task_state(&task.id),
            &super::evidence::task_suffix(state, &task.id),
        );
    }
    match &state.pending {
        Some(Pending::Question { .. }) => {
            out.push_str("\n❓ *Waiting for your answer to the questions below.*\n")
        }
        Some(Pending::Approval { subject, .. }) => match named_plan(subject) {
            Some((version, hash)) => {
                let short = short(hash);
                let _ = writeln!(
                    out,
                    "\n✋ *Plan v{version} (`{short}`) waits for `/approve` (or `/approve {short}`) or `/reject [reason]`.*"
                );
            }
            None => out.push_str("\n✋ *Waiting for `/approve` or `/reject`.*\n"),
        },
        None => {
            if let Some(approved) = &state.approved_plan {
                let _ = writeln!(
                    out,
                    "\n✅ *Plan v{} (`{}`) approved by @{}.*",
                    approved.version,
                    short(&approved.hash),
                    approved.author
                );
            }
        }
    }
    if let Some(reached) = ctx.per_thread.overridden_by(state).reached(&state.usage) {
        let _ = writeln!(out, "\n💸 *{}*", reached.blocked_line());
    }
    if let Some(review) = state.reviews.last() {
        let _ = writeln!(out, "\n🔍 **{}**", review.line());
    }
    if state.runs.last().and_then(|r| r.status) == Some(RunStatus::FannedOut) {
        out.push_str("\n🔀 *Waiting for the subtask jobs and their join.*\n");
    }
    out.push_str("\n<details>\n<summary>🔀 Dependency graph</summary>\n\n");
    out.push_str(&mermaid::render(plan, state));
    out.push_str("\n</details>\n");
    previous_plans(&mut out, &state.plan_history);
    footer(&mut out, state, ctx, Some(plan));
    out
}

fn footer(out: &mut String, state: &SessionState, ctx: &ChecklistContext, plan: Option<&Plan>) {
    out.push('\n');
    if let Some(plan) = plan {
        let (done, total) = progress(plan, &|id| state.task_state(id));
        let revision = state.revision_count();
        let started = state
            .plan_history
            .last()
            .map(|s| timestamp(s.started_at))
            .unwrap_or_default();
        if revision > 0 {
            let _ = writeln!(
                out,
                "*Progress: {done}/{total} ({}%) complete | Revision: #{revision} at {started}*",
                percent(done, total)
            );
            let _ = writeln!(out, "*Plan Revisions: {revision} times*");
            let _ = writeln!(
                out,
                "*Current Plan: #{} (started at {started})*",
                state.plan_version
            );
        } else {
            let _ = writeln!(
                out,
                "*Progress: {done}/{total} ({}%) complete*",
                percent(done, total)
            );
        }
    }
    super::verification::footer(out, state);
    let mut facts: Vec<String> = Vec::new();
    if let Some(model) = &ctx.model {
        facts.push(format!("Model: {model}"));
    }
    let u = &state.usage;
    if u.calls > 0 {
        let mut tokens = format!(
            "LLM: {} calls, {} tokens ({} in / {} out)",
            u.calls,
            u.prompt_tokens.saturating_add(u.completion_tokens),
            u.prompt_tokens,
            u.completion_tokens
        );
        if u.cost_usd > 0.0 {
            let _ = write!(tokens, ", ${:.4}", u.cost_usd);
        }
        facts.push(tokens);
    }
    if let Some(ledger) = ctx.per_thread.overridden_by(state).spent_and_left(u) {
        facts.push(format!("Budget: {ledger}"));
    }
    if u.unpriced_calls > 0 {
        facts.push(format!(
            "⚠️ {} calls of a model without a price in `llm.prices`: cost not counted",
            u.unpriced_calls
        ));
    }
    if let Some(url) = &ctx.run_url {
        facts.push(format!("[View run]({url})"));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "*{}*", facts.join(" | "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::{Entry, EntryBody, SCHEMA_VERSION};
    use crate::history::replay;
    use crate::plan::{ReplanType, Subtask, TaskDecomposition};
    use chrono::TimeZone;

    fn plan(ids: &[&str]) -> Plan {
        Plan {
            task_decomposition: TaskDecomposition {
                reasoning: String::new(),
                subtasks: ids
                    .iter()
                    .map(|id| Subtask {
                        id: id.to_string(),
                        description: format!("do {id}"),
                        ..Default::default()
                    })
                    .collect(),
            },
            ..Default::default()
        }
    }

    fn entry(seq: u64, minute: u32, body: EntryBody) -> Entry {
        Entry {
            v: SCHEMA_VERSION,
            seq,
            ts: Utc.with_ymd_and_hms(2024, 11, 28, 10, minute, 0).unwrap(),
            run_id: "run-1".into(),
            body,
        }
    }

    fn done(seq: u64, id: &str) -> Entry {
        entry(
            seq,
            1,
            EntryBody::TaskState {
                task_id: id.into(),
                state: TaskState::Done,
                replanning_info: None,
                note: None,
            },
        )
    }

    #[test]
    fn a_run_that_ended_without_a_plan_shows_how_it_ended_not_planning() {
        let started = entry(
            1,
            0,
            EntryBody::RunStarted {
                request: Default::default(),
            },
        );
        let planning = render(
            &replay(std::slice::from_ref(&started)),
            &ChecklistContext::default(),
        );
        assert!(planning.contains("⏳ *Planning…*"), "{planning}");
        let finished = entry(
            2,
            1,
            EntryBody::RunFinished {
                status: crate::history::entry::RunStatus::RequiresHumanIntervention,
                usage: Default::default(),
                pull_request: None,
                structured_output: None,
            },
        );
        let body = render(&replay(&[started, finished]), &ChecklistContext::default());
        assert!(!body.contains("Planning…"), "{body}");
        assert!(
            body.contains("🙋 Human intervention needed: no plan was made."),
            "{body}"
        );
    }

    #[test]
    fn first_plan_has_no_revision_header_and_counts_progress() {
        let entries = vec![
            entry(
                1,
                0,
                EntryBody::Plan {
                    version: 1,
                    plan: Box::new(plan(&["task_1", "task_2"])),
                },
            ),
            done(2, "task_1"),
        ];
        let body = render(&replay(&entries), &ChecklistContext::default());
        assert!(body.starts_with(CHECKLIST_MARKER), "{body}");
        assert!(body.contains("## 📋 Execution Plan\n"), "{body}");
        assert!(body.contains("- [x] **task_1**: do task_1"), "{body}");
        assert!(body.contains("- [ ] **task_2**: do task_2"), "{body}");
        assert!(body.contains("*Progress: 1/2 (50%) complete*"), "{body}");
        assert!(!body.contains("Previous Plan History"), "{body}");
    }

    #[test]
    fn revision_shows_number_reason_previous_progress_and_folded_history() {
        let entries = vec![
            entry(
                1,
                0,
                EntryBody::Plan {
                    version: 1,
                    plan: Box::new(plan(&["task_1", "task_2", "task_3"])),
                },
            ),
            done(2, "task_1"),
            done(3, "task_2"),
            entry(
                4,
                5,
                EntryBody::Revision {
                    version: 2,
                    reason: "tool unavailable".into(),
                    changes: vec![],
                    updated_plan: Box::new(plan(&[
                        "task_1",
                        "task_2",
                        "task_3_revised",
                        "task_4_new",
                    ])),
                    replan_type: ReplanType::PartialReplan,
                    trigger: None,
                },
            ),
        ];
        let body = render(
            &replay(&entries),
            &ChecklistContext {
                run_url: Some("https://ci/run/1".into()),
                model: None,
                per_thread: Default::default(),
            },
        );
        assert!(body.contains("## 📋 Execution Plan (Revised #1)"), "{body}");
        assert!(
            body.contains("**Revision Reason**: tool unavailable"),
            "{body}"
        );
        assert!(body.contains("**Previous Progress**: 2/3"), "{body}");
        assert!(body.contains("### New Plan:"), "{body}");
        assert!(
            body.contains("<summary>📜 Previous Plan History</summary>"),
            "{body}"
        );
        assert!(
            body.contains("### Original Plan (2024-11-28 10:00:00 UTC)\n- [x] task_1: do task_1"),
            "{body}"
        );
        assert!(body.contains("- [ ] task_3: do task_3"), "{body}");
        // Done states survive the partial replan because the replay keeps task states by id.
        assert!(
            body.contains(
                "*Progress: 2/4 (50%) complete | Revision: #1 at 2024-11-28 10:05:00 UTC*"
            ),
            "{body}"
        );
        assert!(body.contains("*Plan Revisions: 1 times*"), "{body}");
        assert!(
            body.contains("*Current Plan: #2 (started at 2024-11-28 10:05:00 UTC)*"),
            "{body}"
        );
        assert!(body.contains("[View run](https://ci/run/1)"), "{body}");
        assert!(body.contains("```mermaid"), "{body}");
    }

    #[test]
    fn replaced_tasks_are_struck_through_and_not_counted() {
        let entries = vec![
            entry(
                1,
                0,
                EntryBody::Plan {
                    version: 1,
                    plan: Box::new(plan(&["a", "b"])),
                },
            ),
            entry(
                2,
                1,
                EntryBody::TaskState {
                    task_id: "a".into(),
                    state: TaskState::ReplacedByReplan,
                    replanning_info: None,
                    note: None,
                },
            ),
        ];
        let body = render(&replay(&entries), &ChecklistContext::default());
        assert!(body.contains("- [x] ~~**a**: do a~~"), "{body}");
        assert!(body.contains("*Progress: 0/1 (0%) complete*"), "{body}");
    }
}
