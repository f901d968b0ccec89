//! Seed 000 §9.2.3 / §13.3 infinite-loop detection: a replan caused by the same trigger more than
//! `same_trigger_max_count` times is overridden.
//!
//! The trigger is what the model says is wrong, not how it words it: the deciding phase, the
//! effective replan type and the normalised, sorted, de-duplicated issues. Two decisions that list
//! the same issues in another order, case or punctuation are the same trigger.

use super::levels::effective_type;
use crate::plan::{Phase, ReplanDecision};
use sha2::{Digest, Sha256};

/// Lower-case, every run of non-alphanumeric characters becomes one space, trimmed.
pub fn normalise_issue(issue: &str) -> String {
    let mut out = String::with_capacity(issue.len());
    for word in issue
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// `<phase>/<type>/<12 hex digits>`: readable in the history file, short, and stable across runs.
///
/// The issues are `issues_found` plus the reflection phase's `issues_identified`. When the model
/// lists none, its normalised `reasoning` stands in for them, so that two unrelated replans of the
/// same type are not mistaken for a loop only because neither named an issue.
pub fn trigger_key(phase: Phase, decision: &ReplanDecision) -> String {
    let mut issues: Vec<String> = decision
        .issues_found
        .iter()
        .chain(&decision.issues_identified)
        .map(|i| normalise_issue(i))
        .filter(|i| !i.is_empty())
        .collect();
    if issues.is_empty() {
        issues.push(normalise_issue(&decision.reasoning));
    }
    issues.sort();
    issues.dedup();
    let t = effective_type(decision);
    let mut h = Sha256::new();
    h.update(phase.as_str());
    h.update([0]);
    h.update(t.as_str());
    for i in &issues {
        h.update([0]);
        h.update(i);
    }
    let digest = hex::encode(h.finalize());
    format!("{}/{}/{}", phase.as_str(), t.as_str(), &digest[..12])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ReplanType;

    fn decision(t: ReplanType, issues: &[&str]) -> ReplanDecision {
        ReplanDecision {
            replan_needed: true,
            confidence: 0.9,
            replan_type: t,
            issues_found: issues.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn same_issues_in_other_order_and_case_are_one_trigger() {
        let a = decision(
            ReplanType::PartialReplan,
            &["Tool `grep` not found!", "tests fail"],
        );
        let b = decision(
            ReplanType::PartialReplan,
            &["TESTS FAIL", "tool grep not found", "tests fail."],
        );
        let ka = trigger_key(Phase::Execution, &a);
        assert_eq!(ka, trigger_key(Phase::Execution, &b));
        assert!(ka.starts_with("execution/partial_replan/"), "{ka}");
        assert_eq!(ka.len(), "execution/partial_replan/".len() + 12);
    }

    #[test]
    fn phase_type_and_issues_each_change_the_key() {
        let a = decision(ReplanType::PartialReplan, &["tests fail"]);
        let k = trigger_key(Phase::Execution, &a);
        assert_ne!(k, trigger_key(Phase::Reflection, &a));
        assert_ne!(
            k,
            trigger_key(
                Phase::Execution,
                &decision(ReplanType::FullReplan, &["tests fail"])
            )
        );
        assert_ne!(
            k,
            trigger_key(
                Phase::Execution,
                &decision(ReplanType::PartialReplan, &["build fails"])
            )
        );
    }

    #[test]
    fn reasoning_stands_in_for_missing_issues() {
        let mut a = decision(ReplanType::Retry, &[]);
        a.reasoning = "network timeout".into();
        let mut b = a.clone();
        b.reasoning = "disk full".into();
        assert_ne!(
            trigger_key(Phase::Execution, &a),
            trigger_key(Phase::Execution, &b)
        );
    }
}
