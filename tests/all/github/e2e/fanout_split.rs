//! The fan-out in split-trust mode on GitHub: every stage (plan, each subtask, join) runs as an
//! agent job with `--bundle DIR` that sends GitHub no writing request and pushes nothing to
//! `origin`; a publish job without the LLM key then makes that stage's writes. The thread ends
//! as the single-job fan-out leaves it.

use std::collections::BTreeMap;
use std::ffi::OsString;

use super::{World, checklist_of, text};
use crate::support::history_shape::history_shape;

const WRITING: [&str; 4] = ["POST", "PATCH", "PUT", "DELETE"];

/// What a runner's `actions/checkout` leaves: the commit of `main`, nothing else.
fn fresh_checkout(world: &World) {
    world.checkout.run_git(&["checkout", "-q", "-f", "main"]);
    world.checkout.run_git(&["clean", "-q", "-fdx"]);
}

fn origin_refs(world: &World) -> String {
    world
        ._origin
        .run_git(&["for-each-ref", "--format=%(refname) %(objectname)"])
}

fn matrices(world: &World) -> Vec<String> {
    let text = std::fs::read_to_string(world.files.path().join("output.txt")).unwrap_or_default();
    replan::actions::outputs::parse(&text)
        .into_iter()
        .filter(|(name, _)| name == "matrix")
        .map(|(_, value)| value)
        .collect()
}

/// The checklist without its "View run" link: every job is a workflow run of its own, and the
/// split fan-out runs twice as many.
fn without_run_link(checklist: &str) -> String {
    checklist
        .lines()
        .map(|line| line.split(" | [View run]").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The single-job fan-out of alice's issue, for comparison.
fn single_job_fanout() -> (World, u64) {
    let (world, number) = super::split::world_with_issue();
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    for args in [
        &["run", "--stage", "plan"][..],
        &["run", "--stage", "subtask", "--subtask", "task_1"],
        &["run", "--stage", "join"],
        &["run", "--stage", "subtask", "--subtask", "task_2"],
        &["run", "--stage", "join"],
    ] {
        fresh_checkout(&world);
        let output = world.run_args(&env, args);
        assert_eq!(output.status.code(), Some(0), "{args:?}\n{}", text(&output));
    }
    (world, number)
}

/// One stage as a pair of jobs: the agent job (LLM key, read-only) records into a fresh bundle
/// directory and writes nothing anywhere; the publish job (write token, no LLM key) publishes it.
fn stage_pair(
    world: &World,
    env: &BTreeMap<String, String>,
    publish_env: &BTreeMap<String, String>,
    name: &str,
    args: &[&str],
) {
    let dir = world.files.path().join(format!("bundle-{name}"));
    fresh_checkout(world);
    world.fake.clear_requests();
    let refs_before = origin_refs(world);
    let mut agent: Vec<OsString> = args.iter().map(OsString::from).collect();
    agent.extend([OsString::from("--bundle"), dir.clone().into()]);
    let output = world.run_args(env, &agent);
    assert_eq!(output.status.code(), Some(0), "{args:?}\n{}", text(&output));
    let writes: Vec<String> = world
        .fake
        .requests()
        .into_iter()
        .filter(|r| WRITING.contains(&r.method.as_str()))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(writes, Vec::<String>::new(), "{name}: the agent job wrote");
    assert_eq!(
        origin_refs(world),
        refs_before,
        "{name}: the agent job pushed"
    );

    fresh_checkout(world);
    let llm_calls = world.llm.requests().len();
    let output = world.run_args(
        publish_env,
        &[OsString::from("publish"), dir.clone().into()],
    );
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap_or_default();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}\n{}\n{manifest}",
        text(&output)
    );
    assert_eq!(
        world.llm.requests().len(),
        llm_calls,
        "publish calls no LLM"
    );
}

#[test]
fn split_fanout_agent_jobs_write_nothing_and_publish_ends_as_the_single_job_fanout() {
    let (normal, normal_number) = single_job_fanout();

    let (world, number) = super::split::world_with_issue();
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    let mut publish_env = env.clone();
    publish_env.retain(|name, _| !name.starts_with("REPLAN_LLM") && name != "OPENAI_API_KEY");

    stage_pair(
        &world,
        &env,
        &publish_env,
        "plan",
        &["run", "--stage", "plan"],
    );
    assert_eq!(matrices(&world), [r#"{"subtask":["task_1"]}"#]);
    assert_eq!(world.outputs()["status"], "fanned_out");
    stage_pair(
        &world,
        &env,
        &publish_env,
        "task_1",
        &["run", "--stage", "subtask", "--subtask", "task_1"],
    );
    stage_pair(
        &world,
        &env,
        &publish_env,
        "join-1",
        &["run", "--stage", "join"],
    );
    assert_eq!(
        matrices(&world),
        [r#"{"subtask":["task_1"]}"#, r#"{"subtask":["task_2"]}"#]
    );
    stage_pair(
        &world,
        &env,
        &publish_env,
        "task_2",
        &["run", "--stage", "subtask", "--subtask", "task_2"],
    );
    stage_pair(
        &world,
        &env,
        &publish_env,
        "join-2",
        &["run", "--stage", "join"],
    );

    assert_eq!(world.outputs()["status"], "completed");
    assert_eq!(
        without_run_link(&checklist_of(&world, number)),
        without_run_link(&checklist_of(&normal, normal_number))
    );
    let checklists = world
        .fake
        .comments(number)
        .into_iter()
        .filter(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .count();
    assert_eq!(checklists, 1, "one checklist for all the jobs");
    let (pulls, normal_pulls) = (world.fake.pull_requests(), normal.fake.pull_requests());
    assert_eq!(pulls.len(), 1, "{}", world.history(number));
    assert_eq!(
        (&pulls[0].head, &pulls[0].base, &pulls[0].title),
        (
            &normal_pulls[0].head,
            &normal_pulls[0].base,
            &normal_pulls[0].title
        )
    );
    assert_eq!(
        world._origin.show(&format!("{}:hello.md", pulls[0].head)),
        "hello\n",
        "the pull request's branch holds the subtasks' work"
    );
    let history = world.history(number);
    assert!(!history.contains("replan-bundle:"), "{history}");
    assert_eq!(
        history_shape(&history),
        history_shape(&normal.history(normal_number))
    );
}

/// Two independent subtasks writing the same file: the join merges task_1, task_2 conflicts and
/// goes round again on the merged tree. The reports come before task_2's step, so that a
/// follow-up call of the same conversation gets a report, not task_2's write again.
const CONFLICTING: &str = r#"
mode: matched
steps:
  - when: { contains: "Produce the planning phases" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Write hello.md", "success_criteria": ["it exists"], "constraints": []},
       "task_decomposition": {"reasoning": "independent", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]},
          {"id": "task_2", "description": "Write hello.md as well", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]}]},
       "action_plan": {"execution_order": ["task_1", "task_2"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write", "expected_outcome": "written"},
          {"task_id": "task_2", "action_type": "tool_call", "tool": "write_file", "purpose": "write", "expected_outcome": "written"}]},
       "self_check": {"goal_understanding": {"ok": true, "notes": ""}, "task_decomposition": {"ok": true, "notes": ""}, "action_plan": {"ok": true, "notes": ""}},
       "comment": "ok",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
  - when: { contains: "created `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "created `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "created `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "created `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "replaced `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "replaced `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "replaced `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "replaced `hello.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "Execute subtask `task_2`" }
    tool_calls: [ { name: write_file, arguments: { path: hello.md, content: "world\n" } } ]
  - when: { contains: "Execute subtask `task_2`" }
    tool_calls: [ { name: write_file, arguments: { path: hello.md, content: "world\n" } } ]
"#;

/// A subtask redone after a conflict is published as a fast-forward of its earlier branch: the
/// publish job never needs to force a push.
#[test]
fn split_fanout_redoes_a_conflicting_subtask_without_a_forced_push() {
    let world = World::new(CONFLICTING);
    world.fake.add_collaborator("alice", "write");
    let number = world.fake.seed_issue("Hello", "Please.", "alice");
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    let mut publish_env = env.clone();
    publish_env.retain(|name, _| !name.starts_with("REPLAN_LLM") && name != "OPENAI_API_KEY");

    stage_pair(
        &world,
        &env,
        &publish_env,
        "plan",
        &["run", "--stage", "plan"],
    );
    assert_eq!(matrices(&world), [r#"{"subtask":["task_1","task_2"]}"#]);
    for id in ["task_1", "task_2"] {
        let args = ["run", "--stage", "subtask", "--subtask", id];
        stage_pair(&world, &env, &publish_env, id, &args);
    }
    let branch = format!("replan/issue-{number}-tasks/task_2");
    let first_attempt = world._origin.rev_parse(&branch).expect("task_2 published");
    stage_pair(
        &world,
        &env,
        &publish_env,
        "join-1",
        &["run", "--stage", "join"],
    );
    assert_eq!(
        matrices(&world)[1],
        r#"{"subtask":["task_2"]}"#,
        "task_2 again"
    );

    let args = ["run", "--stage", "subtask", "--subtask", "task_2"];
    stage_pair(&world, &env, &publish_env, "task_2-again", &args);
    let second_attempt = world._origin.rev_parse(&branch).unwrap();
    assert_ne!(second_attempt, first_attempt);
    world._origin.run_git(&[
        "merge-base",
        "--is-ancestor",
        &first_attempt,
        &second_attempt,
    ]);
    stage_pair(
        &world,
        &env,
        &publish_env,
        "join-2",
        &["run", "--stage", "join"],
    );
    assert_eq!(
        world.outputs()["status"],
        "completed",
        "{}",
        world.history(number)
    );
    let work = format!("replan/work/issue-{number}");
    assert_eq!(world._origin.show(&format!("{work}:hello.md")), "world\n");
}
