//! Seed 000 replan decisions as the engine acts on them: types and levels, confidence bands,
//! overrides, loop detection, escalation, clarification, parse failures.

use super::fixtures::*;
use replan::history::entry::{DecisionResult, EntryBody, RunStatus};
use replan::plan::{Phase, ReplanType, TaskState};
use replan::report::Notice;

/// task_2's first action makes the model ask for a replan; the replanned plan (v2) marks task_2's
/// action `PLAN-V2-ACTION` so the same decision does not come again.
fn replan_on_task2(confidence: f64, replan_type: &str, level: u8, target: &str) -> String {
    format!(
        r#"
mode: matched
steps:
  - when: {{ purpose: "replan_decision.execution", contains: "(subtask task_2: note two)" }}
    reply: |
      {{"replan_decision": {{"replan_needed": true, "confidence": {confidence}, "reasoning": "REPLAN-REASON the second note is wrong",
       "replan_type": "{replan_type}", "target_phase": "{target}", "replan_level": {level},
       "issues_found": ["wrong note"], "recommended_actions": ["redo it"], "clarification_needed": false, "clarification_questions": []}}}}
  - when: {{ purpose: "planning", contains: "REPLAN-REASON" }}
    reply: |
      {{"phase": "planning",
       "goal_understanding": {{"main_objective": "Write two notes", "success_criteria": ["both notes written"], "constraints": []}},
       "task_decomposition": {{"reasoning": "one note per task", "subtasks": [
          {{"id": "task_1", "description": "Write the first note", "dependencies": [], "estimated_complexity": "low", "required_tools": ["note"]}},
          {{"id": "task_2", "description": "Write the second note", "dependencies": ["task_1"], "estimated_complexity": "low", "required_tools": ["note"]}}]}},
       "action_plan": {{"execution_order": ["task_1", "task_2"], "actions": [
          {{"task_id": "task_1", "action_type": "tool_call", "tool": "note", "purpose": "note one", "expected_outcome": "note written"}},
          {{"task_id": "task_2", "action_type": "tool_call", "tool": "note", "purpose": "PLAN-V2-ACTION", "expected_outcome": "note written"}}]}}}}
"#
    )
}

fn revision_types(thread: &Thread) -> Vec<ReplanType> {
    thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Revision { replan_type, .. } => Some(*replan_type),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_replan_type_and_level_returns_to_its_phase_and_carries_progress_per_seed_table() {
    // (type, level, target, restart phase, task_1 stays done in v2)
    let cases = [
        (
            "partial_replan",
            2,
            "action_sequence",
            Phase::ActionSequence,
            true,
        ),
        (
            "action_regeneration",
            3,
            "action_sequence",
            Phase::ActionSequence,
            true,
        ),
        (
            "task_redecomposition",
            4,
            "task_decomposition",
            Phase::TaskDecomposition,
            false,
        ),
        (
            "goal_revision",
            5,
            "goal_understanding",
            Phase::GoalUnderstanding,
            false,
        ),
        (
            "full_replan",
            5,
            "goal_understanding",
            Phase::GoalUnderstanding,
            false,
        ),
    ];
    for (kind, level, target, restart, keeps) in cases {
        let mut thread = Thread::new();
        let llm = FirstMatch::new(&replan_on_task2(0.9, kind, level, target));
        let out = thread.run(llm.clone(), start()).await;
        assert_eq!(out.status, RunStatus::Completed, "{kind}");
        assert_eq!(out.plan_version, 2, "{kind}");
        let d = decisions(&thread)
            .into_iter()
            .find(|d| d.executed)
            .unwrap_or_else(|| panic!("{kind}: no executed decision"));
        assert_eq!(d.restart_phase, Some(restart), "{kind}");
        assert_eq!(d.llm_decision.replan_level, Some(level), "{kind}");
        assert_eq!(
            thread.state().task_state("task_1"),
            TaskState::Done,
            "{kind}: finished in v2"
        );
        // Carried progress shows as a `task_state` note; cleared progress means task_1 ran again.
        let carried = thread.bodies().any(|b| matches!(b, EntryBody::TaskState { note: Some(n), .. } if n.contains("carried over")));
        assert_eq!(carried, keeps, "{kind}: carry-over");
        let task1_runs = llm
            .requests()
            .iter()
            .filter(|r| r.purpose == "execute.task_1" && r.messages.len() == 1)
            .count();
        assert_eq!(
            task1_runs,
            if keeps { 1 } else { 2 },
            "{kind}: task_1 attempts"
        );
        // Phases before the restart phase were not asked again.
        let planning_calls = llm.count("planning");
        assert_eq!(planning_calls, 2, "{kind}");
        assert!(
            thread.reporter.notices().iter().any(|n| matches!(
                n,
                Notice::Decision {
                    phase: Phase::Execution,
                    ..
                }
            )),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn level_1_retry_runs_the_failed_tool_again_after_reflection_on_the_error() {
    let mut thread = Thread::new();
    thread.flaky_failures = 1;
    let llm = FirstMatch::new(
        r#"
mode: matched
steps:
  - when: { purpose: "replan_decision.execution", contains: "ERROR (Timeout)" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 0.9, "reasoning": "transient", "replan_type": "retry", "target_phase": "execution", "replan_level": 1, "error_classification": "transient", "issues_found": [], "recommended_actions": []}}
  - when: { purpose: "execute", contains: "flaky ok" }
    reply: "done"
  - when: { purpose: "execute" }
    tool_calls: [ { name: flaky } ]
"#,
    );
    let out = thread.run(llm, start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.plan_version, 1, "a retry is not a new plan");
    let outcomes: Vec<_> = thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Action { outcome, tool, .. } if tool == "flaky" => Some(*outcome),
            _ => None,
        })
        .collect();
    use replan::history::entry::ActionOutcome;
    use replan::tools::ToolErrorKind;
    assert_eq!(
        outcomes[..2],
        [
            ActionOutcome::Err(ToolErrorKind::Timeout),
            ActionOutcome::Ok
        ]
    );
    let retry = decisions(&thread).into_iter().find(|d| d.executed).unwrap();
    assert_eq!(
        (retry.restart_phase, retry.trigger),
        (None, Some(replan::plan::ReplanTrigger::Timeout))
    );
    // Error level 1: the failed action went to reflection.
    assert!(thread.types().contains(&"reflection"));
}

#[tokio::test]
async fn confidence_bands_run_warn_ask_or_skip() {
    // ≥ 0.8 and 0.5–0.8 run the replan.
    for c in [0.9, 0.6] {
        let mut thread = Thread::new();
        let out = thread
            .run(
                FirstMatch::new(&replan_on_task2(c, "partial_replan", 2, "action_sequence")),
                start(),
            )
            .await;
        assert_eq!(
            (out.status, out.plan_version),
            (RunStatus::Completed, 2),
            "confidence {c}"
        );
    }
    // < 0.3: skipped, the current plan goes on, people are told.
    let mut thread = Thread::new();
    let out = thread
        .run(
            FirstMatch::new(&replan_on_task2(
                0.2,
                "partial_replan",
                2,
                "action_sequence",
            )),
            start(),
        )
        .await;
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 1));
    let skipped = decisions(&thread)
        .into_iter()
        .find(|d| d.llm_decision.replan_needed)
        .unwrap();
    assert!(!skipped.executed);
    assert_eq!(skipped.result, DecisionResult::Skipped);
    assert!(skipped.override_reason.unwrap().contains("0.20"));
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::Override { .. }))
    );
}

#[tokio::test]
async fn a_low_confidence_replan_waits_for_approve_and_then_runs() {
    let scenario = replan_on_task2(0.4, "partial_replan", 2, "action_sequence");
    let mut thread = Thread::new();
    let out = thread.run(FirstMatch::new(&scenario), start()).await;
    assert_eq!(out.status, RunStatus::WaitingForApproval);
    assert_eq!(thread.types().last(), Some(&"run_finished"));
    assert!(
        thread
            .bodies()
            .any(|b| matches!(b, EntryBody::Approval { decision: None, .. }))
    );
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::ApprovalRequest { confidence, .. } if *confidence == 0.4))
    );
    // A new trigger while waiting does nothing but wait.
    let again = thread.run(FirstMatch::new(&scenario), start()).await;
    assert_eq!(again.status, RunStatus::WaitingForApproval);

    let out = thread
        .run(
            FirstMatch::new(&scenario),
            replan::engine::EngineInput::Approve {
                author: "bob".into(),
                hash: None,
            },
        )
        .await;
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 2));
    assert_eq!(revision_types(&thread), [ReplanType::PartialReplan]);
}

#[tokio::test]
async fn reject_drops_the_pending_replan_and_continues_on_the_current_plan() {
    let scenario = replan_on_task2(0.4, "partial_replan", 2, "action_sequence");
    let mut thread = Thread::new();
    thread.run(FirstMatch::new(&scenario), start()).await;
    let out = thread
        .run(
            FirstMatch::new(&scenario),
            replan::engine::EngineInput::Reject {
                reason: Some("keep it".into()),
                author: "bob".into(),
            },
        )
        .await;
    // task_2 runs again on plan v1; its decision asks again (still 0.4) — so it waits again.
    assert_eq!(out.plan_version, 1);
    assert!(thread.bodies().any(|b| matches!(b, EntryBody::Approval { decision: Some(replan::history::entry::ApprovalDecision::Rejected), reason: Some(r), .. } if r == "keep it")));
    let state = thread.state();
    assert!(
        state
            .decisions
            .iter()
            .any(|d| d.override_reason.as_deref() == Some("rejected by a person"))
    );
    assert_eq!(state.task_state("task_1"), TaskState::Done);
}

#[tokio::test]
async fn limit_reached_escalates_to_the_model_and_then_to_a_person() {
    let mut thread = Thread::new();
    thread
        .config
        .planning
        .replanning
        .execution
        .max_partial_replans = 0;
    thread
        .config
        .planning
        .replanning
        .goal_understanding
        .auto_assume_on_no_response = false;
    let llm = FirstMatch::new(&replan_on_task2(
        0.9,
        "partial_replan",
        2,
        "action_sequence",
    ));
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::RequiresHumanIntervention);
    let esc = llm
        .requests()
        .into_iter()
        .find(|r| r.purpose == "replan_decision.execution.escalation")
        .expect("the model was told about the limit");
    assert!(esc.messages[0].content.contains("Replan Not Possible"));
    let first = decisions(&thread)
        .into_iter()
        .find(|d| d.llm_decision.replan_needed)
        .unwrap();
    assert!(!first.executed);
    assert!(first.override_reason.unwrap().contains("escalated"));
    let state = thread.state();
    assert_eq!(
        state.completion.unwrap().status.as_deref(),
        Some("requires_human_intervention")
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
async fn an_alternative_from_the_escalation_lets_the_run_continue() {
    let mut thread = Thread::new();
    thread
        .config
        .planning
        .replanning
        .execution
        .max_partial_replans = 0;
    let mut scenario = replan_on_task2(0.9, "partial_replan", 2, "action_sequence");
    scenario = scenario.replacen(
        "steps:\n",
        r#"steps:
  - when: { purpose: "replan_decision.execution.escalation" }
    reply: |
      {"replan_decision": {"replan_needed": false, "confidence": 0.8, "reasoning": "work around it: keep the note", "replan_type": "none", "recommended_actions": ["keep the note"]}}
"#,
        1,
    );
    let out = thread.run(FirstMatch::new(&scenario), start()).await;
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 1));
    assert!(
        thread
            .reporter
            .notices()
            .iter()
            .any(|n| matches!(n, Notice::Override { reason, .. } if reason.contains("escalated")))
    );
}

#[tokio::test]
async fn the_same_trigger_repeated_is_detected_as_a_loop_and_overridden() {
    let mut thread = Thread::new();
    thread
        .config
        .planning
        .replanning
        .execution
        .max_partial_replans = 10;
    // The replanned plan is the same as before, so task_2 triggers the same replan again.
    let scenario = replan_on_task2(0.9, "partial_replan", 2, "action_sequence").replace(
        r#"contains: "REPLAN-REASON""#,
        r#"contains: "NEVER-MATCHES""#,
    );
    let out = thread.run(FirstMatch::new(&scenario), start()).await;
    let ds = decisions(&thread);
    let executed = ds
        .iter()
        .filter(|d| d.executed && d.llm_decision.replan_needed)
        .count();
    assert_eq!(
        executed as u32,
        thread
            .config
            .planning
            .replanning
            .global
            .same_trigger_max_count
    );
    let looped = ds
        .iter()
        .find(|d| {
            d.override_reason
                .as_deref()
                .is_some_and(|r| r.contains("loop") || r.contains("same trigger"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no loop override in {:#?}",
                ds.iter().map(|d| &d.override_reason).collect::<Vec<_>>()
            )
        });
    assert!(!looped.executed);
    assert!(matches!(
        out.status,
        RunStatus::Completed | RunStatus::RequiresHumanIntervention
    ));
}

#[tokio::test]
async fn an_unparsable_decision_is_re_asked_once_then_falls_back_to_no_replan() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new(
        r#"
mode: matched
steps:
  - when: { purpose: "replan_decision.action_sequence" }
    reply: "Looks fine to me!"
"#,
    );
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        llm.count("replan_decision.action_sequence"),
        2,
        "one re-ask"
    );
    let d = decisions(&thread).into_iter().next().unwrap();
    assert!(!d.executed);
    assert!(d.parse_error.is_some());
    assert_eq!(d.raw_reply.as_deref(), Some("Looks fine to me!"));
}

#[tokio::test]
async fn a_clarification_request_posts_questions_waits_and_resumes_on_the_answer() {
    let scenario = r#"
mode: matched
steps:
  - when: { purpose: "replan_decision", contains: "Answer from the user" }
    reply: |
      {"replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "clear now", "replan_type": "none"}}
  - when: { purpose: "replan_decision", contains: "proceed on these assumptions" }
    reply: |
      {"replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "going on the assumptions", "replan_type": "none"}}
  - when: { purpose: "replan_decision.action_sequence" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 0.9, "reasoning": "which file?", "replan_type": "clarification_request",
       "target_phase": "goal_understanding", "clarification_needed": true, "clarification_questions": ["Which file should hold the notes?"],
       "assumptions_to_make": ["notes.txt"]}}
"#;
    let mut thread = Thread::new();
    let out = thread.run(FirstMatch::new(scenario), start()).await;
    assert_eq!(out.status, RunStatus::WaitingForAnswer);
    assert!(
        !thread.types().contains(&"plan"),
        "no plan is current while the question waits"
    );
    assert!(thread.reporter.notices().iter().any(|n| matches!(n, Notice::Clarification { questions, assumptions, .. } if questions[0].contains("Which file") && assumptions == &["notes.txt"])));

    // Answered: planning starts again from the goal with the answer as feedback.
    let mut answered = Thread {
        entries: thread.entries.clone(),
        ..Thread::new()
    };
    let llm = FirstMatch::new(scenario);
    let out = answered
        .run(
            llm.clone(),
            replan::engine::EngineInput::Answer {
                text: "use notes.txt".into(),
                author: "alice".into(),
            },
        )
        .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert!(
        llm.requests()
            .iter()
            .any(|r| r.purpose == "planning" && r.messages[0].content.contains("use notes.txt"))
    );

    // Not answered: the sweep before the timeout waits; after it, the assumptions are used.
    let mut swept = Thread {
        entries: thread.entries.clone(),
        ..Thread::new()
    };
    let out = swept
        .run(
            FirstMatch::new(scenario),
            replan::engine::EngineInput::Sweep,
        )
        .await;
    assert_eq!(out.status, RunStatus::WaitingForAnswer);
    swept.advance(31);
    let out = swept
        .run(
            FirstMatch::new(scenario),
            replan::engine::EngineInput::Sweep,
        )
        .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert!(
        swept
            .bodies()
            .any(|b| matches!(b, EntryBody::Answer { assumed: true, .. }))
    );
}

#[tokio::test]
async fn per_phase_mode_asks_a_decision_after_each_planning_phase() {
    let mut thread = Thread::new();
    thread.config.planning.mode = replan::config::PlanningMode::PerPhase;
    let llm = FirstMatch::new("");
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        llm.purposes()[..6],
        [
            "planning.goal_understanding",
            "replan_decision.goal_understanding",
            "planning.task_decomposition",
            "replan_decision.task_decomposition",
            "planning.action_sequence",
            "replan_decision.action_sequence"
        ]
    );
}

#[tokio::test]
async fn low_confidence_without_user_confirmation_is_an_override() {
    let mut thread = Thread::new();
    thread
        .config
        .planning
        .replanning
        .llm_decision
        .require_user_confirmation_on_low_confidence = false;
    let out = thread
        .run(
            FirstMatch::new(&replan_on_task2(
                0.4,
                "partial_replan",
                2,
                "action_sequence",
            )),
            start(),
        )
        .await;
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 1));
    assert!(!thread.types().contains(&"approval"));
    let d = decisions(&thread)
        .into_iter()
        .find(|d| d.llm_decision.replan_needed)
        .unwrap();
    assert!(!d.executed && d.override_reason.is_some());
    assert!(thread.reporter.notices().iter().any(|n| matches!(
        n,
        Notice::Override {
            phase: Phase::Execution,
            ..
        }
    )));
}

#[tokio::test]
async fn the_monitoring_decision_can_revise_the_finished_plan_keeping_progress() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new(
        r#"
mode: matched
steps:
  - when: { purpose: "replan_decision.reflection", contains: "0 plan revisions" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 0.9, "reasoning": "ADD-A-CHECK a success criterion is not verified",
       "replan_type": "plan_revision", "target_phase": "task_decomposition", "evaluation_result": "partial_success", "achievement_rate": 80,
       "issues_identified": ["notes not checked"], "additional_actions": ["check the notes"], "revision_scope": "minor"}}
  - when: { purpose: "planning", contains: "ADD-A-CHECK" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Write two notes", "success_criteria": ["both notes written"], "constraints": []},
       "task_decomposition": {"reasoning": "one note per task, then a check", "subtasks": [
          {"id": "task_1", "description": "Write the first note", "dependencies": [], "estimated_complexity": "low", "required_tools": ["note"]},
          {"id": "task_2", "description": "Write the second note", "dependencies": ["task_1"], "estimated_complexity": "low", "required_tools": ["note"]},
          {"id": "task_3", "description": "Check the notes", "dependencies": ["task_2"], "estimated_complexity": "low", "required_tools": ["note"]}]},
       "action_plan": {"execution_order": ["task_1", "task_2", "task_3"], "actions": []}}
"#,
    );
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        (out.plan_version, out.tasks_done, out.tasks_total),
        (2, 3, 3)
    );
    assert_eq!(revision_types(&thread), [ReplanType::PlanRevision]);
    // Progress kept: only the new task ran in plan v2.
    assert_eq!(llm.count("execute.task_1"), 2, "two turns of one attempt");
    assert_eq!(llm.count("execute.task_3"), 2);
    assert_eq!(
        llm.count("replan_decision.reflection"),
        2,
        "the revised plan is reviewed again"
    );
}

/// A cycle whose model asks for a partial replan of task_2 with `confidence`, run to its end; it
/// completes on plan v2 when the replan ran.
pub(super) async fn partial_replan_run(confidence: f64) -> (Thread, RunStatus, u32) {
    let mut thread = Thread::new();
    let scenario = replan_on_task2(confidence, "partial_replan", 2, "action_sequence");
    let out = thread.run(FirstMatch::new(&scenario), start()).await;
    (thread, out.status, out.plan_version)
}

#[tokio::test]
async fn a_confidence_given_as_a_percentage_is_stored_as_a_fraction() {
    let (thread, status, plan_version) = partial_replan_run(85.0).await;
    // 85 is read as 0.85: the high band, so the replan runs without asking.
    assert_eq!((status, plan_version), (RunStatus::Completed, 2));
    let decision = decisions(&thread)
        .into_iter()
        .find(|d| d.llm_decision.replan_needed)
        .unwrap();
    assert_eq!(decision.confidence, 0.85);
    assert_eq!(decision.llm_decision.confidence, 0.85);
    assert!(decision.executed);
    let lines: Vec<String> = thread
        .entries
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert!(
        !lines.iter().any(|l| l.contains("\"confidence\":85")),
        "a history line keeps the percentage: {lines:#?}"
    );
}

#[tokio::test]
async fn a_confidence_out_of_range_is_re_asked_and_never_stored() {
    let scenario = r#"
mode: matched
steps:
  - when: { purpose: "replan_decision.execution", contains: "(subtask task_2: note two)" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 8500, "reasoning": "REPLAN-REASON", "replan_type": "partial_replan",
       "target_phase": "action_sequence", "replan_level": 2, "issues_found": ["wrong note"]}}
"#;
    let mut thread = Thread::new();
    let llm = FirstMatch::new(scenario);
    let out = thread.run(llm.clone(), start()).await;
    // The re-ask names the field and the range; the same bad reply again is the seed's fallback:
    // no replan, the current plan goes on.
    let reask = llm
        .requests()
        .iter()
        .flat_map(|r| r.messages.iter().map(|m| m.content.clone()))
        .any(|text| text.contains("confidence must be a fraction between 0 and 1"));
    assert!(reask, "the re-ask quotes the range");
    assert_eq!((out.status, out.plan_version), (RunStatus::Completed, 1));
    for d in decisions(&thread) {
        assert!(
            (0.0..=1.0).contains(&d.confidence) && (0.0..=1.0).contains(&d.llm_decision.confidence),
            "{d:?}"
        );
    }
    assert!(
        decisions(&thread).iter().any(|d| d
            .parse_error
            .as_deref()
            .is_some_and(|e| e.contains("confidence"))),
        "the parse failure is recorded"
    );
}

const FOLDED_FINAL_TASK1: &str = r#"
mode: matched
steps:
  - when: { purpose: "execute.task_1", contains: "noted:" }
    reply: |
      {"report": "FOLDED-REPORT the first note is written",
       "replan_decision": {"replan_needed": false, "confidence": 0.95, "reasoning": "FOLDED-DECISION on track", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "FOLDED-VERDICT note one exists", "missingRequirements": []}}
"#;

/// Folded (the default): task_1's final reply carries the decision on its action and the judge's
/// verdict, so neither is asked; task_2's plain-prose reply lacks them, so both are asked on their
/// own. The history holds one decision per action and one verdict per subtask either way.
#[tokio::test]
async fn a_folded_reply_replaces_the_decision_and_judge_calls_and_a_plain_one_falls_back() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new(FOLDED_FINAL_TASK1);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(llm.count("judge.task_1"), 0);
    assert_eq!(llm.count("judge.task_2"), 1);
    assert_eq!(llm.count("replan_decision.execution"), 1);
    assert_eq!(llm.count("replan_decision.action_sequence"), 1);
    let execution: Vec<_> = decisions(&thread)
        .into_iter()
        .filter(|d| d.phase == Phase::Execution)
        .collect();
    assert_eq!(execution.len(), 2, "one decision per action");
    assert_eq!(
        execution[0].llm_decision.reasoning,
        "FOLDED-DECISION on track"
    );
    assert_eq!(execution[1].llm_decision.reasoning, "all good");
    let verdicts: Vec<String> = thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Judge {
                task_id, reason, ..
            } => Some(format!("{task_id}: {reason}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            "task_1: FOLDED-VERDICT note one exists",
            "task_2: the note exists"
        ]
    );
    // The execute prompt asked for the folded parts; the separate rules are not sent.
    let first = &llm.requests()[llm
        .purposes()
        .iter()
        .position(|p| p == "execute.task_1")
        .unwrap()];
    assert!(first.messages[0].content.contains("\"verdict\""));
}

/// `planning.decisions: separate` reproduces the seed's calls: the same folded-capable reply is
/// not mined for decisions, every action gets its own decision call and every subtask a judge call.
#[tokio::test]
async fn separate_decisions_ask_every_decision_and_verdict_on_its_own() {
    let mut thread = Thread::new();
    thread.config.planning.decisions = replan::config::DecisionMode::Separate;
    let llm = FirstMatch::new(FOLDED_FINAL_TASK1);
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(llm.count("judge."), 2);
    assert_eq!(llm.count("replan_decision.execution"), 2);
    assert!(
        decisions(&thread)
            .iter()
            .all(|d| d.llm_decision.reasoning != "FOLDED-DECISION on track")
    );
    let first = &llm.requests()[llm
        .purposes()
        .iter()
        .position(|p| p == "execute.task_1")
        .unwrap()];
    assert!(!first.messages[0].content.contains("\"verdict\""));
}
