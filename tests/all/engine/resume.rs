use super::fixtures::*;
use replan::engine::journal::MemorySink;
use replan::engine::run_cycle;
use replan::history::entry::{EntryBody, RunStatus};
use replan::history::replay;
use replan::plan::{ReplanType, TaskState};
use std::sync::Arc;

const SCENARIO: &str = "engine_replan_revision.yaml";

#[tokio::test]
async fn partial_replan_keeps_done_tasks_and_reflection_revision_makes_plan_v3() {
    let mut thread = Thread::new();
    let out = thread.run(FirstMatch::from_file(SCENARIO), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.plan_version, 3);
    let revisions: Vec<(u32, ReplanType)> = thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Revision {
                version,
                replan_type,
                ..
            } => Some((*version, *replan_type)),
            _ => None,
        })
        .collect();
    assert_eq!(
        revisions,
        [
            (2, ReplanType::PartialReplan),
            (3, ReplanType::PlanRevision)
        ]
    );
    let state = thread.state();
    // Seed 000 §11.4.3: a partial replan keeps task_1 ticked in plan v2 (and v3).
    assert_eq!(
        state.plan_history[1].final_tasks.get("task_1"),
        Some(&TaskState::Done)
    );
    assert!(thread.bodies().any(|b| matches!(b, EntryBody::TaskState { task_id, state: TaskState::Done, note: Some(n), .. } if task_id == "task_1" && n.contains("carried over from plan v1"))));
    // task_1's work was not repeated after the replan: only one note for it, plus task_2's.
    assert_eq!(state.task_state("task_2"), TaskState::Done);
    assert!(
        state.plan.unwrap().action_plan.actions[1]
            .purpose
            .contains("PLAN-V3-ACTION")
    );
}

/// The cycle is killed after every possible number of stored entries and restarted; each time it
/// must end in the same state, with the same checklist, as the run that was never interrupted.
#[tokio::test]
async fn a_cycle_killed_after_any_entry_resumes_to_the_same_final_state() {
    let mut reference = Thread::new();
    reference
        .run(FirstMatch::from_file(SCENARIO), start())
        .await;
    let expected_state = reference.state();
    let expected_checklist = checklist_text(&expected_state);
    let total = reference.entries.len();
    assert!(
        total > 30,
        "the scenario should be long enough to be interesting: {total}"
    );

    for k in 1..total {
        let thread = Thread::new();
        let input = start();
        let killed = Arc::new(MemorySink::failing_after(vec![], k));
        let deps = thread.deps(
            FirstMatch::from_file(SCENARIO),
            killed.clone(),
            "run-1",
            &input,
        );
        let first = run_cycle(&deps, replay(&[]), &input).await;
        assert!(
            first.is_err(),
            "k={k}: the sink should have stopped the cycle"
        );
        let stored = killed.entries();
        assert!(stored.len() <= k);

        let resumed = Arc::new(MemorySink::new(stored.clone()));
        let deps = thread.deps(
            FirstMatch::from_file(SCENARIO),
            resumed.clone(),
            "run-1",
            &input,
        );
        let out = run_cycle(&deps, replay(&stored), &input)
            .await
            .unwrap_or_else(|e| panic!("k={k}: resume failed: {e}"));
        assert_eq!(out.status, RunStatus::Completed, "k={k}");
        let state = replay(&resumed.entries());
        assert_eq!(checklist_text(&state), expected_checklist, "k={k}");
        assert_eq!(state, expected_state, "k={k}: resumed state differs");
    }
}
