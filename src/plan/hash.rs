//! The plan hash (issue 39): what a person approves is this hash, so `/approve` runs exactly the
//! plan they read. Only what changes the work counts (subtask ids, descriptions, dependencies,
//! required tools, and the action plan); the goal's prose and the model's reasoning do not.

use super::{ActionPlan, Plan};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Characters of the hash shown to people and accepted by `/approve <hash>`.
pub const SHORT_LEN: usize = 7;

#[derive(Serialize)]
struct CanonicalSubtask<'a> {
    id: &'a str,
    description: &'a str,
    dependencies: &'a [String],
    required_tools: &'a [String],
}

/// Field order is fixed by these structs, so the JSON is canonical without sorting keys.
#[derive(Serialize)]
struct CanonicalPlan<'a> {
    subtasks: Vec<CanonicalSubtask<'a>>,
    action_plan: &'a ActionPlan,
}

/// SHA-256 of the plan's canonical JSON, as 64 lower-case hex characters.
pub fn plan_hash(plan: &Plan) -> String {
    let canonical = CanonicalPlan {
        subtasks: plan
            .task_decomposition
            .subtasks
            .iter()
            .map(|s| CanonicalSubtask {
                id: &s.id,
                description: &s.description,
                dependencies: &s.dependencies,
                required_tools: &s.required_tools,
            })
            .collect(),
        action_plan: &plan.action_plan,
    };
    let json = serde_json::to_vec(&canonical).expect("a plan serializes");
    hex::encode(Sha256::digest(&json))
}

/// The first [`SHORT_LEN`] characters of a hash.
pub fn short(hash: &str) -> &str {
    hash.get(..SHORT_LEN).unwrap_or(hash)
}

/// Whether `given` (from a `/approve <hash>` comment) names `hash`: at least the short form,
/// any case.
pub fn names(given: &str, hash: &str) -> bool {
    let given = given.trim().to_ascii_lowercase();
    given.len() >= SHORT_LEN && hash.starts_with(&given)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan_of;

    #[test]
    fn the_hash_follows_the_work_not_the_prose() {
        let plan = plan_of(&[("a", &[]), ("b", &["a"])], &["a", "b"]);
        let hash = plan_hash(&plan);
        assert_eq!(hash.len(), 64);
        let mut reasoned = plan.clone();
        reasoned.task_decomposition.reasoning = "other words".into();
        reasoned.goal_understanding.main_objective = "said differently".into();
        assert_eq!(plan_hash(&reasoned), hash);
        let mut described = plan.clone();
        described.task_decomposition.subtasks[0].description = "do more".into();
        assert_ne!(plan_hash(&described), hash);
        let mut tooled = plan.clone();
        tooled.task_decomposition.subtasks[1].required_tools = vec!["run_command".into()];
        assert_ne!(plan_hash(&tooled), hash);
        let reordered = plan_of(&[("a", &[]), ("b", &["a"])], &["b", "a"]);
        assert_ne!(plan_hash(&reordered), hash);
    }

    #[test]
    fn approve_names_the_hash_by_its_short_form_or_more() {
        let hash = "abcdef0123456789";
        assert_eq!(short(hash), "abcdef0");
        assert!(names("abcdef0", hash));
        assert!(names("ABCDEF01", hash));
        assert!(!names("abcdef", hash), "shorter than the short form");
        assert!(!names("abcdef1", hash));
    }
}
