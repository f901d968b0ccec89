//! Seed 004 task judge: the verdict JSON the judge model returns and the outcome it leads to.

use super::split::{ChainCheck, check_chain};
use crate::config::TaskReplanningConfig;
pub use crate::history::entry::JudgeOutcome;
use crate::plan::ReplanningInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The judge's reply. Snake case on the wire; the seed's camelCase names are accepted too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeVerdict {
    pub success: bool,
    #[serde(default, alias = "shouldContinue")]
    pub should_continue: bool,
    #[serde(default, alias = "shouldReplan")]
    pub should_replan: bool,
    #[serde(default)]
    pub reason: String,
    #[serde(default, alias = "missingRequirements")]
    pub missing_requirements: Vec<String>,
}

/// The seed's order, first match wins: success → DONE; should_continue → NEEDS_CONTINUATION;
/// should_replan → replan; otherwise BLOCKED. A verdict with both `should_continue` and
/// `should_replan` continues first (the cheaper way forward).
pub fn outcome(v: &JudgeVerdict) -> JudgeOutcome {
    if v.success {
        JudgeOutcome::Done
    } else if v.should_continue {
        JudgeOutcome::NeedsContinuation
    } else if v.should_replan {
        JudgeOutcome::Replan
    } else {
        JudgeOutcome::Blocked
    }
}

/// [`outcome`] with the task-replanning settings applied: a replan becomes BLOCKED when task
/// replanning is disabled or when the task's chain has reached `max_iterations` (seed 004
/// "newIteration >= maxReplanIterations → BLOCKED"). `info` is the task's `replanningInfo`
/// (`None` for a task that was never split off another).
pub fn decide(
    v: &JudgeVerdict,
    info: Option<&ReplanningInfo>,
    cfg: &TaskReplanningConfig,
) -> JudgeOutcome {
    match outcome(v) {
        JudgeOutcome::Replan if !cfg.enabled => JudgeOutcome::Blocked,
        JudgeOutcome::Replan => match check_chain(info, cfg) {
            ChainCheck::Allowed { .. } => JudgeOutcome::Replan,
            ChainCheck::Exhausted { .. } => JudgeOutcome::Blocked,
        },
        o => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(success: bool, cont: bool, replan: bool) -> JudgeVerdict {
        JudgeVerdict {
            success,
            should_continue: cont,
            should_replan: replan,
            ..Default::default()
        }
    }

    #[test]
    fn seed_order() {
        assert_eq!(outcome(&v(true, true, true)), JudgeOutcome::Done);
        assert_eq!(
            outcome(&v(false, true, true)),
            JudgeOutcome::NeedsContinuation
        );
        assert_eq!(outcome(&v(false, false, true)), JudgeOutcome::Replan);
        assert_eq!(outcome(&v(false, false, false)), JudgeOutcome::Blocked);
    }

    #[test]
    fn parses_the_seeds_camel_case_and_snake_case() {
        let camel: JudgeVerdict = serde_json::from_str(
            r#"{"success":false,"shouldContinue":false,"shouldReplan":true,"reason":"too big","missingRequirements":["tests"]}"#,
        )
        .unwrap();
        let snake: JudgeVerdict = serde_json::from_str(
            r#"{"success":false,"should_continue":false,"should_replan":true,"reason":"too big","missing_requirements":["tests"]}"#,
        )
        .unwrap();
        assert_eq!(camel, snake);
        assert_eq!(outcome(&camel), JudgeOutcome::Replan);
        assert_eq!(camel.missing_requirements, vec!["tests".to_string()]);
    }

    #[test]
    fn replan_is_blocked_at_the_chain_limit_or_when_disabled() {
        let cfg = TaskReplanningConfig::default();
        let replan = v(false, false, true);
        assert_eq!(decide(&replan, None, &cfg), JudgeOutcome::Replan);
        let second_generation = ReplanningInfo {
            iteration: 2,
            max_iterations: 3,
            original_task_id: Some("t1".into()),
            ..Default::default()
        };
        assert_eq!(
            decide(&replan, Some(&second_generation), &cfg),
            JudgeOutcome::Blocked
        );
        let off = TaskReplanningConfig {
            enabled: false,
            ..Default::default()
        };
        assert_eq!(decide(&replan, None, &off), JudgeOutcome::Blocked);
        assert_eq!(
            decide(&v(true, false, false), None, &off),
            JudgeOutcome::Done
        );
    }
}
