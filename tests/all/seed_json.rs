//! Every JSON example of the seeds parses into the model types and round-trips. Where the example is
//! complete, the serialized JSON equals the example exactly (as a JSON value).

use replan::plan::{
    ActionPlan, Completion, ExecutionResponse, GoalUnderstanding, PlanningResponse, Reflection,
    ReflectionResponse, ReflectionStatus, ReplanDecisionResponse, ReplanType, ReplanningInfo,
    TaskDecomposition,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::fmt::Debug;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/seed-json")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parse, serialize, parse again: equal. With `exact`, the serialized value equals the file's.
fn round_trip<T>(name: &str, exact: bool) -> T
where
    T: DeserializeOwned + Serialize + PartialEq + Debug,
{
    let text = fixture(name);
    let parsed: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let written = serde_json::to_value(&parsed).unwrap();
    let again: T = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(
        again, parsed,
        "{name}: parse → serialize → parse changed it"
    );
    if exact {
        let original: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            written, original,
            "{name}: serialized JSON differs from the seed"
        );
    }
    parsed
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct GoalPhase {
    goal_understanding: GoalUnderstanding,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct DecompositionPhase {
    task_decomposition: TaskDecomposition,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct ActionPhase {
    action_plan: ActionPlan,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct ReflectionOnly {
    reflection: Reflection,
}

#[test]
fn phase_outputs_of_seed_001_section_2() {
    let g: GoalPhase = round_trip("001_2.1_goal_understanding.json", true);
    assert_eq!(g.goal_understanding.constraints.len(), 2);
    let d: DecompositionPhase = round_trip("001_2.2_task_decomposition.json", true);
    assert_eq!(
        d.task_decomposition.subtasks[0].required_tools,
        ["tool_1", "tool_2"]
    );
    let a: ActionPhase = round_trip("001_2.3_action_plan.json", true);
    assert_eq!(
        a.action_plan.actions[0].fallback_strategy.as_deref(),
        Some("What to do if it fails")
    );
    let r: ReflectionOnly = round_trip("001_2.5_reflection.json", true);
    assert_eq!(r.reflection.status, ReflectionStatus::Partial);
}

#[test]
fn planning_execution_reflection_and_completion_replies() {
    let p: PlanningResponse = round_trip("001_planning_response.json", true);
    assert_eq!(p.phase, "planning");
    assert_eq!(p.task_decomposition.unwrap().subtasks[0].id, "task_1");
    let e: ExecutionResponse = round_trip("001_execution_response.json", true);
    assert_eq!(e.function_call.unwrap().arguments["path"], "README.md");
    let r: ReflectionResponse = round_trip("001_reflection_response.json", true);
    assert!(r.plan_revision.unwrap().updated_action_plan.is_some());
    let c: Completion = round_trip("001_completion.json", true);
    assert!(c.done && c.summary.goal_achieved);
}

#[test]
fn the_prompt_variants_of_section_7_4_3_parse() {
    // `action_evaluated` is read as `action_id` and written back under that name, and a missing
    // `tasks_failed` is written as 0: equal as models, not byte for byte.
    let r: ReflectionResponse = round_trip("001_7.4.3_reflection_prompt.json", false);
    assert_eq!(r.reflection.action_id, "Action being evaluated");
    let c: Completion = round_trip("001_7.4.3_completion_prompt.json", false);
    assert_eq!(c.summary.tasks_completed, 5);
}

#[test]
fn error_replies_of_section_10() {
    let p: PlanningResponse = round_trip("001_10.1.1_unclear_goal.json", true);
    let e = p.error.unwrap();
    assert_eq!(e.kind, "unclear_goal");
    assert_eq!(e.clarification_needed.len(), 2);
    let c: Completion = round_trip("001_10.4_requires_human_intervention.json", true);
    assert_eq!(c.status.as_deref(), Some("requires_human_intervention"));
    assert_eq!(c.summary.revision_attempts, Some(3));
    assert!(!c.done);
}

#[test]
fn replan_decision_of_seed_000() {
    let d: ReplanDecisionResponse = round_trip("000_2.4_replan_decision.json", true);
    assert_eq!(d.replan_decision.replan_type, ReplanType::PartialReplan);
    assert_eq!(d.replan_decision.replan_level, Some(2));
    assert_eq!(d.replan_decision.confidence, 0.85);
}

#[test]
fn replanning_info_of_seed_004() {
    let i: ReplanningInfo = round_trip("004_replanning_info.json", true);
    assert_eq!(i.max_iterations, 3);
    assert_eq!(i.replaced_by.len(), 3);
}
