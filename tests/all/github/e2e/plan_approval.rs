//! `planning.approval: plan` end to end on the fake GitHub (issue 39): the plan is posted and the
//! run stops with its hash in the checklist comment; a stale `/approve <hash>` gets one reply and
//! changes nothing; `/approve <hash>` runs exactly that plan.

use replan::history::entry::{ApprovalDecision, EntryBody};
use replan::history::jsonl;

use super::{World, checklist_of, comment_by, ours, text};

/// The short hash the checklist comment shows for the waiting plan.
pub(super) fn waiting_hash(world: &World, number: u64) -> String {
    let checklist = checklist_of(world, number);
    let re = regex::Regex::new(r"Plan v1 \(`([0-9a-f]{7})`\) waits for `/approve`").unwrap();
    re.captures(&checklist)
        .unwrap_or_else(|| panic!("no waiting plan in the checklist:\n{checklist}"))[1]
        .to_owned()
}

pub(super) fn plan_mode_env(
    world: &World,
    event: &str,
    payload: &std::path::Path,
) -> std::collections::BTreeMap<String, String> {
    let mut env = world.env(event, payload);
    env.insert("REPLAN_PLANNING__APPROVAL".into(), "plan".into());
    env
}

fn executed(world: &World) -> bool {
    world
        .llm
        .requests()
        .iter()
        .any(|r| r.texts().iter().any(|t| t.contains("Execute subtask")))
}

#[test]
fn github_e2e_plan_mode_waits_for_approve_of_the_hash_then_runs_that_plan() {
    let world = World::new("");
    world.fake.add_collaborator("maya", "maintain");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");

    let first = world.run(&plan_mode_env(
        &world,
        "issues",
        &world.issue_opened(number, "alice"),
    ));

    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    let hash = waiting_hash(&world, number);
    assert!(!executed(&world), "nothing ran before the approval");
    assert!(world.fake.pull_requests().is_empty());
    assert!(
        checklist_of(&world, number).contains("Write hello.md"),
        "the checklist shows the plan"
    );

    // A stale hash: one reply naming the current hash, nothing else.
    let comments_before = world.fake.comments(number).len();
    let stale = comment_by(&world, number, "maya", "/approve 0000000");
    let output = world.run(&plan_mode_env(&world, "issue_comment", &stale));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    let comments = world.fake.comments(number);
    let new: Vec<_> = comments[comments_before..]
        .iter()
        .filter(|c| ours(&c.body))
        .collect();
    assert_eq!(new.len(), 1, "one reply: {new:?}");
    assert!(
        new[0].body.contains("0000000") && new[0].body.contains(&hash),
        "{}",
        new[0].body
    );
    assert!(!executed(&world));
    assert!(!world.types(number).iter().any(|t| t == "revision"));

    let approve = comment_by(&world, number, "maya", &format!("/approve {hash}"));
    let output = world.run(&plan_mode_env(&world, "issue_comment", &approve));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let outputs = world.outputs();
    assert_eq!(outputs["status"], "completed", "{outputs:?}");
    assert_eq!(outputs["plan_version"], "1", "exactly the approved version");
    assert_eq!(world.fake.pull_requests().len(), 1);
    let history = world.history(number);
    let approval = jsonl::parse(&history)
        .entries
        .into_iter()
        .find_map(|e| match e.body {
            EntryBody::Approval {
                decision: Some(ApprovalDecision::Approved),
                author,
                subject,
                ..
            } => Some((author, subject, e.ts)),
            _ => None,
        })
        .expect("the approval is recorded");
    assert_eq!(approval.0.as_deref(), Some("maya"));
    assert_eq!(approval.1["version"], 1);
    assert!(approval.1["hash"].as_str().unwrap().starts_with(&hash));
}

const SCOPE_REPLANS: &str = r#"
mode: matched
steps:
  - when: { contains: "deploy it too" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Add a hello file, propose and deploy it", "success_criteria": ["hello.md exists"], "constraints": []},
       "task_decomposition": {"reasoning": "write, propose, deploy", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]},
          {"id": "task_2", "description": "Open a pull request", "dependencies": ["task_1"], "estimated_complexity": "low", "required_tools": ["open_pull_request"]},
          {"id": "task_3", "description": "Deploy", "dependencies": ["task_2"], "estimated_complexity": "low", "required_tools": ["list_files"]}]},
       "action_plan": {"execution_order": ["task_1", "task_2", "task_3"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write hello.md", "expected_outcome": "file written"},
          {"task_id": "task_2", "action_type": "tool_call", "tool": "open_pull_request", "purpose": "propose the change", "expected_outcome": "pull request open"},
          {"task_id": "task_3", "action_type": "tool_call", "tool": "list_files", "purpose": "check deploy/prod.yml then run `make deploy`", "expected_outcome": "deployed"}]},
       "comment": "Plan completed.",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
  - when: { contains: "only the file" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Add a hello file", "success_criteria": ["hello.md exists"], "constraints": []},
       "task_decomposition": {"reasoning": "just write", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]}]},
       "action_plan": {"execution_order": ["task_1"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write hello.md", "expected_outcome": "file written"}]},
       "comment": "Plan completed.",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
"#;

#[test]
fn github_e2e_scope_mode_waits_for_a_widening_replan_and_not_a_narrowing_one() {
    let world = World::new(SCOPE_REPLANS);
    world.fake.add_collaborator("maya", "maintain");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let scope_env = |event: &str, payload: &std::path::Path| {
        let mut env = world.env(event, payload);
        env.insert("REPLAN_PLANNING__APPROVAL".into(), "scope".into());
        env
    };

    let first = world.run(&scope_env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert_eq!(
        world.outputs()["status"],
        "completed",
        "the first plan runs at once"
    );

    let wider = comment_by(&world, number, "maya", "/replan tasks deploy it too");
    let output = world.run(&scope_env("issue_comment", &wider));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    let diff = world
        .fake
        .comments(number)
        .into_iter()
        .find(|c| ours(&c.body) && c.body.contains("widens the approved scope"))
        .expect("a scope diff comment")
        .body;
    for part in [
        "Subtasks: 2 → 3",
        "+`task_3`",
        "+`list_files`",
        "+`deploy/prod.yml`",
        "+`make deploy`",
    ] {
        assert!(diff.contains(part), "{part} in:\n{diff}");
    }
    assert!(!diff.contains("Deploy\n"), "no prose:\n{diff}");
    assert!(
        !world.llm.requests().iter().any(|r| r
            .texts()
            .iter()
            .any(|t| t.contains("Execute subtask `task_3`"))),
        "the wider plan did not run"
    );

    let narrower = comment_by(&world, number, "maya", "/replan tasks only the file");
    let output = world.run(&scope_env("issue_comment", &narrower));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let outputs = world.outputs();
    assert_eq!(outputs["status"], "completed", "{outputs:?}");
    assert_eq!(outputs["tasks_total"], "1", "{outputs:?}");
}
