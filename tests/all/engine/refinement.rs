//! Seed 002 refinement as the engine acts on it: each priority of `makeRefinementDecision`,
//! feedback-based replanning, structure fallback.

use super::fixtures::*;
use replan::history::entry::{DraftSource, EntryBody, RefinementVerdict, RunStatus};
use replan::report::Notice;

fn refined_plan() -> String {
    base_plan_reply().replace("one note per task", "REFINED one note per task")
}

fn verdicts(thread: &Thread) -> Vec<(RefinementVerdict, String)> {
    thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Refinement {
                decision, reason, ..
            } => Some((*decision, reason.clone())),
            _ => None,
        })
        .collect()
}

fn judge(score: Option<u32>, ok: bool, suggestions: &[&str]) -> String {
    serde_json::json!({"score": score, "is_acceptable": ok, "issues": ["too vague"], "suggestions": suggestions}).to_string()
}

#[tokio::test]
async fn priority_6_accepts_an_acceptable_plan() {
    let mut thread = Thread::new();
    thread.run(FirstMatch::new(""), start()).await;
    let v = verdicts(&thread);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].0, RefinementVerdict::Accept);
    assert!(v[0].1.contains("priority 6"), "{}", v[0].1);
}

#[tokio::test]
async fn priority_4_replans_with_the_judges_feedback_until_acceptable() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![
        reply("planning.refinement", None, &refined_plan()),
        reply(
            "quality_judge",
            Some("REFINED"),
            &judge(Some(85), true, &[]),
        ),
        reply(
            "quality_judge",
            None,
            &judge(Some(50), false, &["name the files"]),
        ),
    ]);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    let v = verdicts(&thread);
    assert_eq!(
        v.iter().map(|x| x.0).collect::<Vec<_>>(),
        [RefinementVerdict::Replan, RefinementVerdict::Accept]
    );
    assert!(v[0].1.contains("priority 4"));
    let refine_request = llm
        .requests()
        .into_iter()
        .find(|r| r.purpose == "planning.refinement")
        .unwrap();
    assert!(
        refine_request.messages[0]
            .content
            .contains("Issue: too vague")
    );
    assert!(
        refine_request.messages[0]
            .content
            .contains("Suggestion: name the files")
    );
    assert!(
        thread
            .state()
            .plan
            .unwrap()
            .task_decomposition
            .reasoning
            .starts_with("REFINED")
    );
}

#[tokio::test]
async fn priority_1_rejects_after_the_last_attempt_and_hands_over_to_a_person() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![
        reply("planning.refinement", None, &refined_plan()),
        reply("quality_judge", None, &judge(Some(40), false, &[])),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::RequiresHumanIntervention);
    let v = verdicts(&thread);
    assert_eq!(
        v.iter().map(|x| x.0).collect::<Vec<_>>(),
        [
            RefinementVerdict::Replan,
            RefinementVerdict::Replan,
            RefinementVerdict::Reject
        ]
    );
    // 40 → 40 is a stagnation (priority 3) that still replans while attempts remain.
    assert!(v[1].1.contains("priority 3"), "{}", v[1].1);
    assert!(v[2].1.contains("priority 1"), "{}", v[2].1);
    assert!(
        !thread.types().contains(&"plan"),
        "a rejected plan never becomes current"
    );
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::HumanNeeded { .. }))
    );
}

#[tokio::test]
async fn priority_2_decides_on_acceptability_when_the_judge_gives_no_score() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![reply("quality_judge", None, &judge(None, true, &[]))]);
    thread.run(llm, start()).await;
    let v = verdicts(&thread);
    assert_eq!(v[0].0, RefinementVerdict::Accept);
    assert!(v[0].1.contains("priority 2"), "{}", v[0].1);
}

#[tokio::test]
async fn priority_5_replans_for_suggestions_and_priority_3_stops_on_stagnation() {
    let mut thread = Thread::new();
    thread.config.refinement.refine_suggestions_on_success = true;
    let llm = FirstMatch::with_steps(vec![
        reply("planning.refinement", None, &refined_plan()),
        reply(
            "quality_judge",
            Some("REFINED"),
            &judge(Some(82), true, &["more detail"]),
        ),
        reply(
            "quality_judge",
            None,
            &judge(Some(80), true, &["more detail"]),
        ),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    let v = verdicts(&thread);
    assert_eq!(
        v.iter().map(|x| x.0).collect::<Vec<_>>(),
        [RefinementVerdict::Replan, RefinementVerdict::Accept]
    );
    assert!(v[0].1.contains("priority 5"), "{}", v[0].1);
    assert!(v[1].1.contains("priority 3"), "{}", v[1].1);
}

#[tokio::test]
async fn a_refinement_that_breaks_the_structure_falls_back_task_by_task() {
    let mut thread = Thread::new();
    // Six tasks instead of two: more than 30 % and more than 2 tasks changed.
    let many = serde_json::json!({
        "phase": "planning",
        "goal_understanding": {"main_objective": "Write two notes", "success_criteria": [], "constraints": []},
        "task_decomposition": {"reasoning": "REFINED split", "subtasks": (1..=6).map(|i| serde_json::json!({
            "id": format!("task_{i}"), "description": format!("Refined step {i}"),
            "dependencies": [], "estimated_complexity": "low", "required_tools": ["note"]})).collect::<Vec<_>>()},
        "action_plan": {"execution_order": (1..=6).map(|i| format!("task_{i}")).collect::<Vec<_>>(), "actions": []}
    })
    .to_string();
    let llm = FirstMatch::with_steps(vec![
        reply("planning.refinement", None, &many),
        reply(
            "quality_judge",
            Some("Refined step"),
            &judge(Some(85), true, &[]),
        ),
        reply("quality_judge", None, &judge(Some(50), false, &[])),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert!(thread.bodies().any(|b| matches!(
        b,
        EntryBody::Draft {
            source: DraftSource::Fallback,
            ..
        }
    )));
    // The fallback keeps the two tasks, with their refined descriptions.
    let plan = thread.state().plan.unwrap();
    assert_eq!(plan.subtask_ids().collect::<Vec<_>>(), ["task_1", "task_2"]);
    assert_eq!(
        plan.task_decomposition.subtasks[0].description,
        "Refined step 1"
    );
}
