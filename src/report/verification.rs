//! The final verification as people read it (issue 37, point 5), rendered from the thread's
//! [`FinalProof`]s only: the checklist's footer and the pull / merge request body's
//! "Verification" section say the same facts because both come from here.

use super::evidence::{criterion_line, footer_line, task_suffix};
use super::md_text::inline;
use super::status_line::status_line;
use crate::history::SessionState;
use crate::history::final_proof::{FinalProof, proven_by, recorded};
use std::fmt::Write as _;

/// Where the thread's history file is: its path on the history branch and, when the forge has
/// one, the link to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryLink {
    pub path: String,
    pub branch: String,
    pub url: Option<String>,
}

fn checks_of(proofs: &[FinalProof]) -> &[crate::history::check::CheckRecord] {
    proofs
        .iter()
        .find_map(|p| match p {
            FinalProof::Checks(records) => Some(records.as_slice()),
            FinalProof::Ci(_) => None,
        })
        .unwrap_or_default()
}

fn ci_line(proofs: &[FinalProof]) -> Option<String> {
    proofs.iter().find_map(|p| match p {
        FinalProof::Ci(ci) => Some(super::ci_verification::line(ci)),
        FinalProof::Checks(_) => None,
    })
}

/// The checklist footer's verification lines (the CI run, then the final checks).
pub fn footer(out: &mut String, state: &SessionState) {
    let proofs = recorded(state);
    if let Some(line) = ci_line(&proofs) {
        let _ = writeln!(out, "\n{line}\n");
    }
    if let Some(line) = footer_line(state, checks_of(&proofs)) {
        let _ = writeln!(out, "{line}");
    }
}

/// A link target with nothing that could end the Markdown link early.
fn safe_url(url: &str) -> Option<String> {
    (url.starts_with("https://") || url.starts_with("http://"))
        .then(|| url.replace([' ', '(', ')', '<', '>', '\n', '\r'], ""))
}

/// The pull / merge request body's section (its markers are added where it is spliced in).
pub fn pull_request_section(state: &SessionState, history: &HistoryLink) -> String {
    let proofs = recorded(state);
    let mut out = String::from("### Verification\n\n");
    let status = state.last_status.map(status_line).unwrap_or("⏳ Running");
    let proof = match proven_by(state) {
        Some(FinalProof::Ci(ci)) => match ci.run_url.as_deref().and_then(safe_url) {
            Some(url) => format!(" — proven by the repository's [CI run]({url})"),
            None => " — proven by the repository's CI run".to_owned(),
        },
        Some(FinalProof::Checks(records)) => format!(
            " — proven by the final checks on `{}`",
            records.first().map(|r| r.short_tree()).unwrap_or_default()
        ),
        None => " — not proven".to_owned(),
    };
    let _ = writeln!(out, "**Status**: {status}{proof}\n");
    if let Some(line) = footer_line(state, checks_of(&proofs)) {
        out.push_str("**Final checks**:\n\n");
        for check in checks_of(&proofs) {
            let _ = writeln!(out, "- {}", super::evidence::one(state, check));
        }
        if checks_of(&proofs).is_empty() {
            // `off`, none detected, or not run: the footer's words for it.
            let _ = writeln!(out, "- {}", line.trim_matches('*'));
        }
        out.push('\n');
    }
    if let Some(v) = &state.evidence.verification {
        if !v.problems.is_empty() {
            out.push_str("**Problems**:\n\n");
            for problem in &v.problems {
                let _ = writeln!(out, "- ⚠️ {}", inline(problem));
            }
            out.push('\n');
        }
        if !v.criteria.is_empty() {
            out.push_str("**Success criteria**:\n\n");
            for criterion in &v.criteria {
                let _ = writeln!(out, "- {}", criterion_line(criterion));
            }
            out.push('\n');
        }
    }
    let tasks: Vec<String> = state
        .plan
        .iter()
        .flat_map(|plan| &plan.task_decomposition.subtasks)
        .filter_map(|task| {
            let suffix = task_suffix(state, &task.id);
            (!suffix.is_empty()).then(|| format!("- **{}**{suffix}", inline(&task.id)))
        })
        .collect();
    if !tasks.is_empty() {
        let _ = writeln!(out, "**Tasks**:\n\n{}\n", tasks.join("\n"));
    }
    if let Some(line) = ci_line(&proofs) {
        let _ = writeln!(out, "{line}\n");
    }
    let file = format!("`{}`", history.path.replace('`', "'"));
    let file = match history.url.as_deref().and_then(safe_url) {
        Some(url) => format!("[{file}]({url})"),
        None => file,
    };
    let _ = write!(
        out,
        "**History**: {file} on branch `{}`",
        history.branch.replace('`', "'")
    );
    out
}
