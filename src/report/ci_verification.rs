//! The checklist's line for the last CI run on the thread's pull request branch (issue 37):
//! the final verification the repository's own CI gives.

use crate::history::entry::CiResult;
use std::fmt::Write as _;

/// `**Final verification**: ✅ CI passed on `abc1234` ([run](…))`, or the failure with its
/// jobs and whether a fixing round followed.
pub fn line(ci: &CiResult) -> String {
    let sha: String = ci.head_sha.chars().take(7).collect();
    let link = ci
        .run_url
        .as_deref()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .map(|u| format!(" ([CI run]({}))", u.replace([' ', ')', '\n'], "")))
        .unwrap_or_default();
    let mut out = String::from("**Final verification**: ");
    if ci.passed {
        let _ = write!(out, "✅ CI passed on `{}`{link}", code(&sha));
        return out;
    }
    let _ = write!(out, "❌ CI failed on `{}`{link}", code(&sha));
    if !ci.failed_jobs.is_empty() {
        let jobs: Vec<String> = ci
            .failed_jobs
            .iter()
            .map(|j| format!("`{}`", code(j)))
            .collect();
        let _ = write!(out, ": {}", jobs.join(", "));
    }
    if ci.round > 0 {
        let _ = write!(out, " — fixing round {}", ci.round);
    } else {
        out.push_str(" — no fixing round left (`verify.ci_rounds`); waiting for a person");
    }
    out
}

/// Text inside a code span: no backtick, no line break, no pipe (it may sit in a table).
fn code(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '`' => '\'',
            '\n' | '\r' | '|' => ' ',
            c => c,
        })
        .collect()
}
