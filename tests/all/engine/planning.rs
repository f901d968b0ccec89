use super::fixtures::*;
use replan::history::entry::{EntryBody, RunStatus};
use replan::plan::TaskState;

#[tokio::test]
async fn single_call_plans_in_two_round_trips_then_executes_and_completes() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new("");
    let out = thread.run(llm.clone(), start()).await;

    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        (out.tasks_done, out.tasks_total, out.plan_version),
        (2, 2, 1)
    );
    assert_eq!(thread.notes(), "hello\nhello\n");
    // A validated, decided plan costs two round trips: the three phases in one reply, one decision.
    let purposes = llm.purposes();
    assert_eq!(
        purposes[..2],
        ["planning", "replan_decision.action_sequence"]
    );
    let types = thread.types();
    assert_eq!(types.first(), Some(&"run_started"));
    assert_eq!(types.last(), Some(&"run_finished"));
    for t in [
        "draft",
        "replan_decision",
        "refinement",
        "plan",
        "action",
        "judge",
        "task_state",
        "completion",
        "usage",
        "checklist",
    ] {
        assert!(types.contains(&t), "no `{t}` entry in {types:?}");
    }
    // The plan entry comes only after the decision and the quality review of the draft.
    let pos = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(pos("draft") < pos("replan_decision") && pos("refinement") < pos("plan"));
    let state = thread.state();
    assert_eq!(state.task_state("task_2"), TaskState::Done);
    assert_eq!(
        state.usage.calls as usize,
        llm.requests().len(),
        "every call's usage is recorded"
    );
    assert!(thread.bodies().any(|b| matches!(b, EntryBody::Action { tool, arguments_digest, .. } if tool == "note" && arguments_digest.len() == 64)));
    assert_eq!(
        thread.reporter.last_checklist(),
        "Plan v1\n- [x] task_1: Write the first note\n- [x] task_2: Write the second note\nProgress: 2/2\n"
    );
    assert_eq!(state.checklist_comment_id.as_deref(), Some("checklist-1"));
}

#[tokio::test]
async fn with_planning_disabled_a_plain_tool_loop_runs_and_completes() {
    let mut thread = Thread::new();
    thread.config.planning.enabled = false;
    let llm = FirstMatch::new(
        r#"
mode: matched
steps:
  - when: { purpose: "legacy", contains: "noted:" }
    reply: "Wrote the note."
  - when: { purpose: "legacy" }
    tool_calls: [ { name: note, arguments: { text: "plain" } } ]
"#,
    );
    let out = thread.run(llm.clone(), start()).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(llm.purposes(), ["legacy", "legacy"]);
    assert_eq!(thread.notes(), "plain\n");
    assert!(!thread.types().contains(&"plan"));
    let completion = thread.state().completion.unwrap();
    assert_eq!(completion.summary.key_outcomes, ["Wrote the note."]);
}

#[tokio::test]
async fn planning_examples_name_the_real_tools_and_every_request_is_bounded() {
    let mut thread = Thread::new();
    let llm = FirstMatch::new("");
    thread.run(llm.clone(), start()).await;
    let requests = llm.requests();
    let planning = requests.iter().find(|r| r.purpose == "planning").unwrap();
    let prompt = &planning.messages[0].content;
    assert!(!prompt.contains("tool_name"), "{prompt}");
    let tools = thread.tools();
    let example = tools
        .names()
        .find(|name| prompt.contains(&format!("\"tool\": \"{name}\"")));
    assert!(example.is_some(), "no real tool in the example: {prompt}");
    let limits = &thread.config.llm.max_output_tokens;
    for r in &requests {
        assert_eq!(
            r.max_tokens,
            Some(limits.for_purpose(&r.purpose)),
            "{}",
            r.purpose
        );
    }
    assert_eq!(planning.max_tokens, Some(limits.planning));
}

#[tokio::test]
async fn a_planning_reply_of_the_wrong_shape_is_reasked_naming_the_fields_not_read_as_an_empty_plan()
 {
    let mut thread = Thread::new();
    // Valid JSON, but none of the plan's parts: every planning request gets it.
    let llm = FirstMatch::new(
        r#"
steps:
  - when: { purpose: "planning" }
    reply: '{"phase": "planning", "comment": "here is my plan"}'
"#,
    );
    thread.run(llm.clone(), start()).await;
    let requests = llm.requests();
    assert_eq!(requests[0].purpose, "planning");
    assert_eq!(requests[1].purpose, "planning", "the same call, re-asked");
    let reask = &requests[1].messages.last().unwrap().content;
    assert!(reask.contains("wrong shape"), "{reask}");
    assert!(
        reask.contains("`goal_understanding`, `task_decomposition`, `action_plan`: missing"),
        "{reask}"
    );
    // After the re-ask the fallback: a draft whose problem names the shape (never an empty plan;
    // the seed's fallback then makes a one-subtask plan).
    let problems: Vec<String> = thread
        .bodies()
        .filter_map(|b| match b {
            EntryBody::Draft { problems, .. } => Some(problems.join("; ")),
            _ => None,
        })
        .collect();
    assert!(
        problems.first().is_some_and(|p| p.contains("wrong shape")),
        "{problems:?}"
    );
}
