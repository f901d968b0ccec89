//! `replan history export --format md|json|jsonl|stats|stats-json` (seed 003 `ReplanHistory`
//! `exportMarkdown` / `exportJSON` / `getMetrics`). Every format is a rendering of the file; corrupt
//! lines are skipped and returned separately so the CLI can report them on stderr.

use super::entry::{ApprovalDecision, Entry, EntryBody, Question};
use super::jsonl::{self, CorruptLine};
use super::state::{Pending, SessionState, replay};
use super::stats::stats;
use crate::plan::{Plan, RevisionChange};
use crate::trigger::{ThreadKind, ThreadRef};
use serde_json::{Value, json};
use std::fmt::Write;
use std::str::FromStr;

/// The one list of formats: `--format` of `replan history export` parses into it directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    #[value(name = "md", alias = "markdown")]
    Markdown,
    Json,
    Jsonl,
    /// Stats as text.
    Stats,
    /// Stats as JSON.
    StatsJson,
}

impl FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "md" | "markdown" => Ok(ExportFormat::Markdown),
            "json" => Ok(ExportFormat::Json),
            "jsonl" => Ok(ExportFormat::Jsonl),
            "stats" => Ok(ExportFormat::Stats),
            "stats-json" => Ok(ExportFormat::StatsJson),
            other => Err(format!(
                "unknown export format \"{other}\": use md, json, jsonl, stats or stats-json"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub body: String,
    pub corrupt: Vec<CorruptLine>,
}

/// Render the history file `text` of `thread` in `format`.
pub fn export(thread: &ThreadRef, text: &str, format: ExportFormat) -> Exported {
    if format == ExportFormat::Jsonl {
        return export_jsonl(text);
    }
    let parsed = jsonl::parse(text);
    let body = match format {
        ExportFormat::Markdown => export_markdown(thread, &parsed.entries, &parsed.corrupt),
        ExportFormat::Json => {
            let mut s = serde_json::to_string_pretty(&export_json(
                thread,
                &parsed.entries,
                &parsed.corrupt,
            ))
            .expect("JSON values serialise");
            s.push('\n');
            s
        }
        ExportFormat::Stats => stats(&parsed.entries, parsed.corrupt.len()).to_string(),
        ExportFormat::StatsJson => {
            let mut s = serde_json::to_string_pretty(&stats(&parsed.entries, parsed.corrupt.len()))
                .expect("stats serialise");
            s.push('\n');
            s
        }
        ExportFormat::Jsonl => unreachable!("handled above"),
    };
    Exported {
        body,
        corrupt: parsed.corrupt,
    }
}

/// The valid lines verbatim, in file order.
pub fn export_jsonl(text: &str) -> Exported {
    let parsed = jsonl::parse(text);
    let bad: std::collections::HashSet<usize> = parsed.corrupt.iter().map(|c| c.line_no).collect();
    let mut body = String::with_capacity(text.len());
    for (line_no, line, _) in jsonl::lines(text) {
        if !bad.contains(&line_no) {
            body.push_str(line);
            body.push('\n');
        }
    }
    Exported {
        body,
        corrupt: parsed.corrupt,
    }
}

pub fn thread_label(thread: &ThreadRef) -> String {
    let kind = match thread.kind {
        ThreadKind::Issue => "issue",
        ThreadKind::PullRequest => "pull request",
        ThreadKind::MergeRequest => "merge request",
    };
    format!("{kind} {thread}")
}

/// `{thread, entries, corrupt_lines, state}`: the entries as written plus a summary of the state
/// they replay to.
pub fn export_json(thread: &ThreadRef, entries: &[Entry], corrupt: &[CorruptLine]) -> Value {
    let state = replay(entries);
    let tasks: serde_json::Map<String, Value> = state
        .tasks
        .iter()
        .map(|(id, t)| (id.clone(), json!(t.state)))
        .collect();
    json!({
        "thread": {"kind": thread.kind, "number": thread.number},
        "entries": entries,
        "corrupt_lines": corrupt,
        "state": {
            "plan_version": state.plan_version,
            "revisions": state.revision_count(),
            "current_plan": state.plan,
            "tasks": tasks,
            "pending": state.pending,
            "last_status": state.last_status,
            "runs": state.runs,
            "decisions": state.decisions.len(),
            "reflections": state.reflections.len(),
            "actions_executed": state.actions_executed,
            "action_errors": state.action_errors,
            "checklist_comment_id": state.checklist_comment_id,
            "usage": state.usage,
            "completion": state.completion,
        },
    })
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn plan_table(out: &mut String, plan: &Plan) {
    let g = &plan.goal_understanding;
    let _ = writeln!(out, "**Goal:** {}\n", g.main_objective);
    for c in &g.success_criteria {
        let _ = writeln!(out, "- success: {c}");
    }
    for c in &g.constraints {
        let _ = writeln!(out, "- constraint: {c}");
    }
    if !g.success_criteria.is_empty() || !g.constraints.is_empty() {
        out.push('\n');
    }
    out.push_str("| task | description | depends on | tools |\n| --- | --- | --- | --- |\n");
    for s in &plan.task_decomposition.subtasks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            s.id,
            cell(&s.description),
            s.dependencies.join(", "),
            s.required_tools.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\nExecution order: {}\n",
        plan.action_plan.execution_order.join(" → ")
    );
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn list(out: &mut String, title: &str, items: &[String]) {
    if !items.is_empty() {
        let _ = writeln!(out, "- {title}:");
        for i in items {
            let _ = writeln!(out, "  - {i}");
        }
    }
}

/// A readable report: runs, plan versions with their tasks, decisions, reflections, questions and
/// answers, approvals, completion and usage, in the order they happened.
pub fn export_markdown(thread: &ThreadRef, entries: &[Entry], corrupt: &[CorruptLine]) -> String {
    let state = replay(entries);
    let mut out = String::new();
    let _ = writeln!(out, "# Replan history: {}\n", thread_label(thread));
    let _ = writeln!(
        out,
        "- Entries: {} ({} corrupt lines skipped)",
        entries.len(),
        corrupt.len()
    );
    let _ = writeln!(
        out,
        "- Runs: {}; plan version {} ({} revisions)",
        state.runs.len(),
        state.plan_version,
        state.revision_count()
    );
    if let Some(s) = state.last_status {
        let _ = writeln!(out, "- Last status: {}", json!(s).as_str().unwrap_or(""));
    }
    match &state.pending {
        Some(Pending::Question { asked, .. }) => {
            let questions = asked.questions.join(" / ");
            let _ = writeln!(out, "- Waiting for an answer to: {questions}");
        }
        Some(Pending::Approval { request_id, .. }) => {
            let _ = writeln!(out, "- Waiting for approval of `{request_id}`");
        }
        None => {}
    }
    out.push('\n');

    let mut current_run: Option<&str> = None;
    for e in entries {
        if current_run != Some(e.run_id.as_str()) && !matches!(e.body, EntryBody::RunStarted { .. })
        {
            let _ = writeln!(out, "## Run `{}`\n", e.run_id);
        }
        current_run = Some(&e.run_id);
        let at = e.ts.format("%Y-%m-%d %H:%M:%S UTC");
        match &e.body {
            EntryBody::RunStarted { request } => {
                let _ = writeln!(
                    out,
                    "## Run `{}` — {at}\n\nRequested by @{} ({}, event `{}`)",
                    e.run_id, request.actor, request.request, request.event
                );
                if let Some(t) = &request.title {
                    let _ = writeln!(out, "\n> {}", cell(t));
                }
                out.push('\n');
            }
            EntryBody::Draft {
                source, problems, ..
            } => {
                let _ = writeln!(out, "- Draft ({source:?}) at {at}");
                for p in problems {
                    let _ = writeln!(out, "  - problem: {}", cell(p));
                }
            }
            EntryBody::Plan { version, plan } => {
                let _ = writeln!(out, "### Plan v{version} ({at})\n");
                plan_table(&mut out, plan);
            }
            EntryBody::Revision {
                version,
                reason,
                changes,
                updated_plan,
                replan_type,
                trigger,
            } => {
                let _ = writeln!(
                    out,
                    "### Plan v{version} — revision ({}) ({at})\n\n**Reason:** {reason}\n",
                    replan_type.as_str()
                );
                if let Some(t) = trigger {
                    let _ = writeln!(out, "Trigger: {}\n", json!(t).as_str().unwrap_or(""));
                }
                for c in changes {
                    match c {
                        RevisionChange::Structured { kind, details } => {
                            let _ = writeln!(out, "- {kind}: {details}");
                        }
                        RevisionChange::Text(t) => {
                            let _ = writeln!(out, "- {t}");
                        }
                    }
                }
                if !changes.is_empty() {
                    out.push('\n');
                }
                plan_table(&mut out, updated_plan);
            }
            EntryBody::ReplanDecision(d) => {
                let l = &d.llm_decision;
                let _ = writeln!(
                    out,
                    "### Decision `{}` ({at})\n\n- Phase: {}\n- Replan needed: {}\n- Type: {}\n- Confidence: {:.2}\n- Executed: {}\n- Result: {}\n- Duration: {} ms",
                    d.replan_id,
                    d.phase,
                    yes_no(l.replan_needed),
                    l.replan_type.as_str(),
                    d.confidence,
                    yes_no(d.executed),
                    json!(d.result).as_str().unwrap_or(""),
                    d.duration_ms
                );
                if let Some(p) = l.target_phase {
                    let _ = writeln!(out, "- Target phase: {p}");
                }
                if let Some(r) = &d.override_reason {
                    let _ = writeln!(out, "- Override: {r}");
                }
                if let Some(t) = d.trigger {
                    let _ = writeln!(out, "- Trigger: {}", json!(t).as_str().unwrap_or(""));
                }
                if let Some(p) = &d.parse_error {
                    let _ = writeln!(out, "- Parse error (fallback used): {p}");
                }
                if !l.reasoning.is_empty() {
                    let _ = writeln!(out, "- Reasoning: {}", cell(&l.reasoning));
                }
                list(&mut out, "Issues", &l.issues_found);
                list(&mut out, "Recommended", &l.recommended_actions);
                out.push('\n');
            }
            EntryBody::Reflection {
                reflection,
                plan_revision,
            } => {
                let _ = writeln!(
                    out,
                    "### Reflection on `{}` ({at})\n\n- Status: {}\n- Evaluation: {}\n- Revision needed: {}",
                    reflection.action_id,
                    json!(reflection.status).as_str().unwrap_or(""),
                    cell(&reflection.evaluation),
                    yes_no(reflection.plan_revision_needed)
                );
                list(&mut out, "Issues", &reflection.issues_identified);
                if let Some(r) = plan_revision {
                    let _ = writeln!(out, "- Proposed revision: {}", cell(&r.reason));
                }
                out.push('\n');
            }
            EntryBody::Refinement {
                attempt,
                score,
                decision,
                reason,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "- Refinement #{attempt}: {} (score {}) — {}\n",
                    json!(decision).as_str().unwrap_or(""),
                    score
                        .map(|s| format!("{s:.0}"))
                        .unwrap_or_else(|| "n/a".into()),
                    cell(reason)
                );
            }
            EntryBody::Judge {
                task_id,
                outcome,
                reason,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "- Judge on `{task_id}`: {} — {}\n",
                    json!(outcome).as_str().unwrap_or(""),
                    cell(reason)
                );
            }
            EntryBody::Action {
                task_id,
                tool,
                outcome,
                summary,
                duration_ms,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "- Action `{tool}` for `{task_id}`: {} in {duration_ms} ms{}\n",
                    json!(outcome).as_str().unwrap_or(""),
                    if summary.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", cell(summary))
                    }
                );
            }
            EntryBody::Question(Question {
                questions,
                context,
                assumptions,
                phase,
            }) => {
                let _ = writeln!(out, "### Question ({phase}, {at})\n");
                for q in questions {
                    let _ = writeln!(out, "- {q}");
                }
                if !context.is_empty() {
                    let _ = writeln!(out, "\nContext: {}", cell(context));
                }
                list(&mut out, "Assumptions if unanswered", assumptions);
                out.push('\n');
            }
            EntryBody::Answer {
                author,
                text,
                assumed,
            } => {
                if *assumed {
                    let _ = writeln!(
                        out,
                        "### Answer ({at})\n\nNo answer in time: continued on the stated assumptions.\n"
                    );
                } else {
                    let _ = writeln!(out, "### Answer by @{author} ({at})\n\n> {}\n", cell(text));
                }
            }
            EntryBody::Approval {
                request_id,
                decision,
                author,
                reason,
                ..
            } => {
                let what = match decision {
                    None => "requested".to_string(),
                    Some(d) => format!(
                        "{} by @{}",
                        match d {
                            ApprovalDecision::Approved => "approved",
                            ApprovalDecision::Rejected => "rejected",
                        },
                        author.as_deref().unwrap_or("?")
                    ),
                };
                let _ = writeln!(
                    out,
                    "- Approval `{request_id}` {what}{}\n",
                    reason
                        .as_deref()
                        .map(|r| format!(": {}", cell(r)))
                        .unwrap_or_default()
                );
            }
            EntryBody::TaskState {
                task_id,
                state,
                note,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "- Task `{task_id}` → {}{}\n",
                    json!(state).as_str().unwrap_or(""),
                    note.as_deref()
                        .map(|n| format!(" ({})", cell(n)))
                        .unwrap_or_default()
                );
            }
            EntryBody::TaskSplit {
                original_task_id,
                new_subtasks,
                replanning_info,
                ..
            } => {
                let ids: Vec<&str> = new_subtasks.iter().map(|s| s.id.as_str()).collect();
                let _ = writeln!(
                    out,
                    "- Task `{original_task_id}` split into {} (iteration {}/{})\n",
                    ids.join(", "),
                    replanning_info.iteration,
                    replanning_info.max_iterations
                );
            }
            EntryBody::Checklist { .. } | EntryBody::Effect { .. } => {}
            EntryBody::Verification {
                source,
                checks,
                problems,
                criteria,
            } => {
                let _ = writeln!(
                    out,
                    "### Verification ({at})\n\n- Checks ({source}): {}",
                    if checks.is_empty() {
                        "none".to_owned()
                    } else {
                        checks
                            .iter()
                            .map(|c| format!("`{}`", cell(c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                );
                for c in criteria {
                    let _ = writeln!(
                        out,
                        "- Criterion: {} — {}",
                        cell(&c.criterion),
                        c.describe()
                    );
                }
                list(&mut out, "Problems", problems);
                out.push('\n');
            }
            EntryBody::Check(check) => {
                let _ = writeln!(
                    out,
                    "- Check `{}` ({}) {} on tree `{}` in {}{}\n",
                    check.name,
                    cell(&check.argv.join(" ")),
                    check.status.describe(),
                    check.short_tree(),
                    check.seconds(),
                    check
                        .task_id
                        .as_deref()
                        .map(|t| format!(" for task `{t}`"))
                        .unwrap_or_else(|| " (final verification)".to_owned())
                );
            }
            EntryBody::CiResult(ci) => {
                let verdict = if ci.passed { "passed" } else { "failed" };
                let _ = writeln!(
                    out,
                    "- CI on `{}` {verdict} (`{}`, {})\n",
                    ci.branch,
                    ci.conclusion,
                    ci.run_url.as_deref().unwrap_or("no link")
                );
            }
            EntryBody::Usage { usage, model } => {
                let by = model
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "- LLM usage{by}: {} calls, {} + {} tokens, ${:.4}{}\n",
                    usage.calls,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cost_usd,
                    if usage.unpriced_calls > 0 {
                        " (unpriced model: cost unknown)"
                    } else {
                        ""
                    }
                );
            }
            EntryBody::Budget {
                author,
                usd,
                tokens,
            } => {
                let cap = super::ledger::cap_words(*usd, *tokens);
                let _ = writeln!(out, "- Budget set by @{author}: {cap}\n");
            }
            EntryBody::Completion { completion } => {
                let s = &completion.summary;
                let _ = writeln!(
                    out,
                    "### Completion ({at})\n\n- Goal achieved: {}\n- Tasks completed: {}\n- Tasks failed: {}",
                    yes_no(s.goal_achieved),
                    s.tasks_completed,
                    s.tasks_failed
                );
                if let Some(st) = &completion.status {
                    let _ = writeln!(out, "- Status: {st}");
                }
                list(&mut out, "Outcomes", &s.key_outcomes);
                list(&mut out, "Recommendations", &s.recommendations);
                out.push('\n');
            }
            EntryBody::RunFinished {
                status,
                usage,
                pull_request,
                structured_output,
            } => {
                let _ = writeln!(
                    out,
                    "**Run finished: {}** ({at}; {} LLM calls, {} tokens, ${:.4}{}){}\n",
                    json!(status).as_str().unwrap_or(""),
                    usage.calls,
                    usage.prompt_tokens.saturating_add(usage.completion_tokens),
                    usage.cost_usd,
                    structured_output
                        .as_deref()
                        .map(|mode| format!("; structured output: {mode}"))
                        .unwrap_or_default(),
                    pull_request
                        .as_deref()
                        .map(|p| format!(", pull request {p}"))
                        .unwrap_or_default()
                );
            }
            EntryBody::Review { round } => {
                let _ = writeln!(
                    out,
                    "**Review #{} by @{}** of pull request #{} ({at}): {} threads\n",
                    round.round,
                    round.reviewer,
                    round.pull_request,
                    round.threads.len()
                );
            }
        }
    }

    if !state.tasks.is_empty() {
        out.push_str("## Task states\n\n| task | state |\n| --- | --- |\n");
        for (id, t) in &state.tasks {
            let _ = writeln!(out, "| {id} | {} |", json!(t.state).as_str().unwrap_or(""));
        }
        out.push('\n');
    }
    let u = &state.usage;
    let _ = writeln!(
        out,
        "## Usage\n\n{} LLM calls, {} prompt + {} completion tokens, ${:.4}",
        u.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd
    );
    if !corrupt.is_empty() {
        out.push_str("\n## Corrupt lines (kept in the file, skipped here)\n\n");
        for c in corrupt {
            let _ = writeln!(out, "- line {}: {}", c.line_no, c.error);
        }
    }
    out
}

/// `replan history show`: a short terminal view of where the thread stands.
pub fn summary(
    thread: &ThreadRef,
    state: &SessionState,
    entries: usize,
    corrupt: &[CorruptLine],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} entries, {} runs{}",
        thread_label(thread),
        entries,
        state.runs.len(),
        if corrupt.is_empty() {
            String::new()
        } else {
            format!(", {} corrupt lines skipped", corrupt.len())
        }
    );
    if let Some(run) = state.runs.last() {
        let _ = writeln!(
            out,
            "last run: {} by @{} ({}) → {}{}",
            run.run_id,
            run.request.actor,
            run.request.request,
            run.status
                .map(|s| json!(s).as_str().unwrap_or("").to_string())
                .unwrap_or_else(|| "unfinished".into()),
            run.structured_output
                .as_deref()
                .map(|mode| format!(" (structured output: {mode})"))
                .unwrap_or_default()
        );
    }
    match &state.plan {
        None => out.push_str("no plan yet\n"),
        Some(plan) => {
            let _ = writeln!(
                out,
                "plan v{} ({} revisions): {}",
                state.plan_version,
                state.revision_count(),
                plan.goal_understanding.main_objective
            );
            for s in &plan.task_decomposition.subtasks {
                let st = state.task_state(&s.id);
                let mark = match st {
                    crate::plan::TaskState::Done => "[x]",
                    crate::plan::TaskState::Blocked => "[!]",
                    _ => "[ ]",
                };
                let _ = writeln!(
                    out,
                    "  {mark} {} {} ({})",
                    s.id,
                    s.description,
                    json!(st).as_str().unwrap_or("")
                );
            }
        }
    }
    match &state.pending {
        Some(Pending::Question { asked, .. }) => {
            let _ = writeln!(
                out,
                "waiting for an answer: {}",
                asked.questions.join(" / ")
            );
        }
        Some(Pending::Approval { request_id, .. }) => {
            let _ = writeln!(out, "waiting for /approve of {request_id}");
        }
        None => {}
    }
    let u = &state.usage;
    let _ = writeln!(
        out,
        "LLM usage: {} calls, {} tokens, ${:.4}",
        u.calls,
        u.prompt_tokens.saturating_add(u.completion_tokens),
        u.cost_usd
    );
    for c in corrupt {
        let _ = writeln!(out, "corrupt line {}: {}", c.line_no, c.error);
    }
    out
}
