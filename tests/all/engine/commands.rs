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
async fn a_plan_that_stays_invalid_after_one_re_ask_needs_a_person() {
    let mut thread = Thread::new();
    let invalid = base_plan_reply().replace(r#""tool": "note""#, r#""tool": "teleport""#);
    let llm = FirstMatch::with_steps(vec![reply("planning", None, &invalid)]);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::RequiresHumanIntervention);
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
    assert!(!thread.types().contains(&"plan"));
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
