//! Comment commands as the engine applies them.

use super::fixtures::*;
use replan::engine::EngineInput;
use replan::history::entry::{EntryBody, RunStatus};
use replan::plan::{ReplanTrigger, ReplanType};
use replan::report::Notice;

#[tokio::test]
async fn stop_records_and_ends_the_run_without_calling_the_model() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new("");
    let out = thread
        .run(
            llm.clone(),
            EngineInput::Stop {
                author: "bob".into(),
            },
        )
        .await;
    assert_eq!(out.status, RunStatus::Stopped);
    assert_eq!(thread.types(), ["run_started", "run_finished"]);
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn status_answers_with_the_progress() {
    let mut thread = Thread::new();
    thread.run(FirstMatch::new(""), start()).await;
    let llm = FirstMatch::new("");
    let out = thread
        .run(
            llm.clone(),
            EngineInput::Status {
                author: "bob".into(),
            },
        )
        .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert!(llm.requests().is_empty());
    assert!(
        thread.reporter.notices().iter().any(
            |n| matches!(n, Notice::Info { text } if text.contains("Plan v1: 2/2 tasks done"))
        )
    );
}

#[tokio::test]
async fn replan_command_replans_from_the_named_phase_with_the_reason_as_feedback() {
    let mut thread = Thread::new();
    thread.run(FirstMatch::new(""), start()).await;
    let llm = FirstMatch::new("");
    let out = thread
        .run(
            llm.clone(),
            EngineInput::Replan {
                target: Some(replan::plan::Phase::TaskDecomposition),
                reason: Some("add a third note".into()),
                author: "bob".into(),
            },
        )
        .await;
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 2));
    let planning = llm
        .requests()
        .into_iter()
        .find(|r| r.purpose == "planning")
        .unwrap();
    assert!(planning.messages[0].content.contains("add a third note"));
    assert!(thread.bodies().any(|b| matches!(
        b,
        EntryBody::Revision {
            replan_type: ReplanType::TaskRedecomposition,
            trigger: Some(ReplanTrigger::HumanRequest),
            ..
        }
    )));
    // Task redecomposition clears progress (seed 000 §11.4.3): both tasks ran again.
    assert_eq!(llm.count("execute.task_1"), 2);
}

#[tokio::test]
async fn a_plan_that_stays_invalid_after_one_re_ask_keeps_its_valid_part_and_runs() {
    let mut thread = Thread::new();
    let invalid = base_plan_reply().replace(
        r#"{"task_id": "task_2", "action_type": "tool_call", "tool": "note""#,
        r#"{"task_id": "task_2", "action_type": "tool_call", "tool": "teleport""#,
    );
    assert_ne!(invalid, base_plan_reply());
    let llm = FirstMatch::with_steps(vec![reply("planning", None, &invalid)]);
    let out = thread.run(llm.clone(), start()).await;
    let retry = llm
        .requests()
        .into_iter()
        .find(|r| r.purpose == "planning.validation_retry")
        .expect("one re-ask");
    assert!(
        retry.messages[0].content.contains("teleport"),
        "the problems were named"
    );
    assert_eq!(llm.count("planning.validation_retry"), 1);
    // The invalid action is dropped, both valid subtasks are kept and run.
    let plan = thread.state().plan.expect("a plan was committed");
    assert_eq!(plan.subtask_ids().collect::<Vec<_>>(), ["task_1", "task_2"]);
    assert!(
        plan.action_plan
            .actions
            .iter()
            .all(|a| a.tool.as_deref() == Some("note")),
        "{:?}",
        plan.action_plan.actions
    );
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(llm.count("execute.task_"), 4);
}

#[tokio::test]
async fn a_plan_with_nothing_usable_becomes_one_subtask_executed_with_the_tools() {
    let mut thread = Thread::new();
    let llm = FirstMatch::with_steps(vec![reply(
        "planning",
        None,
        "I think we should write some notes, like tool_name.",
    )]);
    let out = thread.run(llm.clone(), start()).await;
    let plan = thread
        .state()
        .plan
        .expect("the one-subtask plan was committed");
    assert_eq!(plan.subtask_ids().collect::<Vec<_>>(), ["t1"]);
    assert!(
        plan.task_decomposition.subtasks[0]
            .description
            .contains("Write two notes"),
        "{:?}",
        plan.task_decomposition.subtasks[0]
    );
    assert!(
        thread.types().contains(&"action"),
        "the fallback reached executed actions: {:?}",
        thread.types()
    );
    assert_eq!(thread.notes(), "hello\n");
    assert_eq!(out.status, RunStatus::Completed);
    let checklist = thread.reporter.last_checklist();
    assert!(
        checklist.contains("- [x] t1: Do what the request asks"),
        "{checklist}"
    );
}

#[tokio::test]
async fn a_person_is_asked_only_when_even_the_one_subtask_plan_is_invalid() {
    let mut thread = Thread::new();
    thread.config.planning.max_subtasks = 0;
    let llm = FirstMatch::with_steps(vec![reply("planning", None, "no plan today")]);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::RequiresHumanIntervention);
    assert!(!thread.types().contains(&"plan"));
    assert_eq!(llm.count("execute"), 0);
}

#[tokio::test]
async fn a_plan_fixed_by_the_re_ask_goes_ahead() {
    let mut thread = Thread::new();
    let invalid = base_plan_reply().replace(r#""tool": "note""#, r#""tool": "teleport""#);
    let llm = FirstMatch::with_steps(vec![
        reply("planning.validation_retry", None, &base_plan_reply()),
        reply("planning", None, &invalid),
    ]);
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
}
