//! Success criteria mapped to evidence (issue 37, point 3): with checks to run, each criterion of
//! the goal names the check that proves it, or is `manual` with a reason.

use super::GoalUnderstanding;

/// What is wrong with the goal's criteria mapping, given the names of the run's checks; nothing
/// when the run has no checks (no criterion can be proven by one then).
pub fn criteria_problems(goal: &GoalUnderstanding, checks: &[String]) -> Vec<String> {
    if checks.is_empty() {
        return vec![];
    }
    let known = checks
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    goal.success_criteria
        .iter()
        .filter_map(|criterion| match goal.proof_of(criterion) {
            Some(p) if p.is_manual() => None,
            Some(p) if checks.contains(&p.evidence) => None,
            Some(p) => Some(format!(
                "the success criterion \"{criterion}\" names the check \"{}\", which does not \
                 exist: name one of {known} in goal_understanding.criteria_evidence, or \
                 \"manual\" with a reason",
                p.evidence
            )),
            None => Some(format!(
                "the success criterion \"{criterion}\" has no evidence: add {{\"criterion\": \
                 \"{criterion}\", \"evidence\": <one of {known}, or \"manual\">, \"reason\": \
                 \"...\"}} to goal_understanding.criteria_evidence"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CriterionProof;

    fn goal(proofs: &[(&str, &str)]) -> GoalUnderstanding {
        GoalUnderstanding {
            success_criteria: vec!["tests pass".into(), "docs read well".into()],
            criteria_evidence: proofs
                .iter()
                .map(|(c, e)| CriterionProof {
                    criterion: (*c).into(),
                    evidence: (*e).into(),
                    reason: String::new(),
                })
                .collect(),
            ..GoalUnderstanding::default()
        }
    }

    #[test]
    fn each_criterion_needs_a_known_check_or_manual() {
        let checks = vec!["cargo test".to_owned()];
        let ok = goal(&[("tests pass", "cargo test"), ("docs read well", "manual")]);
        assert!(criteria_problems(&ok, &checks).is_empty());
        let bad = goal(&[("tests pass", "pytest")]);
        let found = criteria_problems(&bad, &checks);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("\"pytest\", which does not exist"));
        assert!(found[1].contains("\"docs read well\" has no evidence"));
    }

    #[test]
    fn without_checks_nothing_is_asked() {
        assert!(criteria_problems(&goal(&[]), &[]).is_empty());
    }
}
