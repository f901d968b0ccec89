//! The proof in the checklist (issue 37, point 5): each task line's latest check runs (✅ with the
//! tree and the time, ❌ with the failing check, stale when the tree changed since), and the
//! footer's final verification.

use crate::history::SessionState;
use crate::history::check::CheckRecord;

/// ` — ✅ `cargo test` on `abc1234`, 2.1 s` for a task with evidence; empty without.
pub fn task_suffix(state: &SessionState, task_id: &str) -> String {
    let records = state.evidence.of_task(task_id);
    if records.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = records.iter().map(|r| one(state, r)).collect();
    format!(" — {}", parts.join("; "))
}

fn one(state: &SessionState, r: &CheckRecord) -> String {
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
            "❌ {} {} on `{}`{stale}",
            code(&r.name),
            r.status.describe(),
            r.short_tree()
        )
    }
}

/// A check name as inline code, whatever backticks it holds.
fn code(name: &str) -> String {
    let name = name.replace(['\n', '\r'], " ");
    if name.contains('`') {
        format!("`` {name} ``")
    } else {
        format!("`{name}`")
    }
}

/// The footer's line about the final verification, once one was made.
pub fn footer_line(state: &SessionState) -> Option<String> {
    let v = state.evidence.verification.as_ref()?;
    if v.source == "off" {
        return Some("*Verification: off (`verify: []`)*".to_owned());
    }
    if v.checks.is_empty() {
        return Some(
            "*Verification: no checks (none configured in `verify`, none detected)*".to_owned(),
        );
    }
    let finals: Vec<String> = state
        .evidence
        .final_checks
        .iter()
        .map(|r| one(state, r))
        .collect();
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
