//! Hidden markers that let Replan find its own comments again and never react to them.

/// Every comment Replan posts starts with a marker beginning with this prefix (defined with the
/// gate, which must never act on Replan's own words).
pub use crate::trigger::MARKER_PREFIX;

/// The checklist comment: found again by this marker when the stored id is missing.
pub const CHECKLIST_MARKER: &str = "<!-- replan:checklist -->";

/// Notices (decisions, questions, approvals, completion...).
pub fn notice_marker(kind: &str) -> String {
    format!("<!-- replan:notice:{kind} -->")
}

pub fn is_ours(body: &str) -> bool {
    body.trim_start().starts_with(MARKER_PREFIX)
}
