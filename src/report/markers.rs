//! Hidden markers that let Replan find its own comments again and never react to them.

/// Every comment Replan posts starts with a marker beginning with this prefix (defined with the
/// gate, which must never act on Replan's own words).
pub use crate::trigger::MARKER_PREFIX;

/// The checklist comment: found again by this marker when the stored id is missing.
pub const CHECKLIST_MARKER: &str = "<!-- replan:checklist -->";

/// Notices (decisions, questions, approvals, completion...).
pub fn notice_marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}notice:{kind} -->")
}

pub fn is_ours(body: &str) -> bool {
    body.trim_start().starts_with(MARKER_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gate skips a comment by this one prefix, so every marker Replan writes must carry it.
    #[test]
    fn every_marker_starts_with_the_prefix_the_gate_skips() {
        let markers = [
            CHECKLIST_MARKER.to_owned(),
            notice_marker("refusal"),
            crate::forge::marker::marker("0123abcd"),
        ];
        for marker in markers {
            assert!(marker.starts_with(MARKER_PREFIX), "{marker}");
            assert!(is_ours(&format!("{marker}\nbody")), "{marker}");
        }
        assert_eq!(notice_marker("refusal"), "<!-- replan:notice:refusal -->");
    }
}
