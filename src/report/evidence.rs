//! The proof in the checklist (issue 37, point 5): each task line's latest check runs (✅ with the
//! tree and the time, ❌ with the failing check and its time, stale when the tree changed since),
//! and the footer's final verification.

use super::md_text::inline;
use crate::history::SessionState;
use crate::history::check::{CheckRecord, CriterionEvidence};

/// ` — ✅ `cargo test` on `abc1234`, 2.1 s` for a task with evidence; empty without.
pub fn task_suffix(state: &SessionState, task_id: &str) -> String {
    let records = state.evidence.of_task(task_id);
    if records.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = records.iter().map(|r| one(state, r)).collect();
    format!(" — {}", parts.join("; "))
}

/// One check run: ✅ with the tree and the time, ❌ with how it ended; stale when the tree
/// changed since.
pub(super) fn one(state: &SessionState, r: &CheckRecord) -> String {
    let stale = if state.evidence.is_stale(r) {
        " *(stale: the tree changed since)*"
    } else {
        ""
    };
    if r.passed() {
        format!(
            "✅ {} on `{}`, {}{stale}",
            code(&r.name),
            r.short_tree(),
            r.seconds()
        )
    } else {
        format!(
            "❌ {} {} on `{}`, {}{stale}",
            code(&r.name),
            r.status.describe(),
            r.short_tree(),
            r.seconds()
        )
    }
}

/// A check name as inline code, whatever backticks it holds.
pub(super) fn code(name: &str) -> String {
    let name = name.replace(['\n', '\r'], " ");
    if name.contains('`') {
        format!("`` {name} ``")
    } else {
        format!("`{name}`")
    }
}

/// A success criterion with its evidence on the final tree, or `manual — not verified`.
pub(super) fn criterion_line(c: &CriterionEvidence) -> String {
    let evidence = match (&c.check, c.status) {
        (Some(check), Some(status)) => format!(
            "{} {} {} on `{}`",
            if status.passed() { "✅" } else { "❌" },
            code(check),
            status.describe(),
            c.tree
                .as_deref()
                .map(|t| t.chars().take(7).collect::<String>())
                .unwrap_or_else(|| "no git tree".into())
        ),
        (Some(check), None) => format!("❌ {} did not run", code(check)),
        (None, _) => format!(
            "manual — not verified{}",
            c.manual_reason
                .as_deref()
                .map(|r| format!(" ({})", inline(r)))
                .unwrap_or_default()
        ),
    };
    format!("{} — {evidence}", inline(&c.criterion))
}

/// The footer's line about the final verification (its `checks`, a [`FinalProof::Checks`]),
/// once one was made.
///
/// [`FinalProof::Checks`]: crate::history::final_proof::FinalProof::Checks
pub fn footer_line(state: &SessionState, checks: &[CheckRecord]) -> Option<String> {
    let v = state.evidence.verification.as_ref()?;
    if v.source == "off" {
        return Some("*Verification: off (`verify: []`)*".to_owned());
    }
    if v.checks.is_empty() {
        return Some(
            "*Verification: no checks (none configured in `verify`, none detected)*".to_owned(),
        );
    }
    let finals: Vec<String> = checks.iter().map(|r| one(state, r)).collect();
    let mut line = format!(
        "*Final verification ({} checks): {}*",
        v.source,
        if finals.is_empty() {
            "not run".to_owned()
        } else {
            finals.join("; ")
        }
    );
    for problem in &v.problems {
        line.push_str(&format!("\n*⚠️ {}*", problem.replace('\n', " ")));
    }
    Some(line)
}
