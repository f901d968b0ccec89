//! The fan-out on GitHub: each stage a separate run of the binary against the fake GitHub (one
//! history branch, one checklist), the `matrix` step output driving the next jobs, and a fresh
//! checkout per job as a runner gives it.

use super::{World, checklist_of, text};

/// What a runner's `actions/checkout` leaves: the commit of `main`, nothing else.
fn fresh_checkout(world: &World) {
    world.checkout.run_git(&["checkout", "-q", "-f", "main"]);
    world.checkout.run_git(&["clean", "-q", "-fdx"]);
}

/// Every value the runs wrote to the `matrix` output, in order.
fn matrices(world: &World) -> Vec<String> {
    let text = std::fs::read_to_string(world.files.path().join("output.txt")).unwrap_or_default();
    replan::actions::outputs::parse(&text)
        .into_iter()
        .filter(|(name, _)| name == "matrix")
        .map(|(_, value)| value)
        .collect()
}

#[test]
fn plan_subtask_and_join_jobs_follow_the_matrix_output_to_completion() {
    let (world, number) = super::split::world_with_issue();
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    let job = |args: &[&str]| {
        fresh_checkout(&world);
        let output = world.run_args(&env, args);
        assert_eq!(output.status.code(), Some(0), "{args:?}\n{}", text(&output));
    };

    job(&["run", "--stage", "plan"]);
    assert_eq!(matrices(&world), [r#"{"subtask":["task_1"]}"#]);
    assert_eq!(world.outputs()["status"], "fanned_out");
    let checklist = checklist_of(&world, number);
    assert!(
        checklist.contains("Waiting for the subtask jobs"),
        "{checklist}"
    );
    assert!(!checklist.contains("Planning…"), "{checklist}");

    job(&["run", "--stage", "subtask", "--subtask", "task_1"]);
    // task_2 (the pull request) waits for task_1: the join fans out the second wave.
    job(&["run", "--stage", "join"]);
    assert_eq!(
        matrices(&world),
        [r#"{"subtask":["task_1"]}"#, r#"{"subtask":["task_2"]}"#]
    );
    job(&["run", "--stage", "subtask", "--subtask", "task_2"]);
    job(&["run", "--stage", "join"]);
    assert_eq!(world.outputs()["status"], "completed");
    assert_eq!(matrices(&world).len(), 2, "no matrix once completed");
    assert_eq!(world.checkout.read("hello.md"), "hello\n");
    assert_eq!(
        world.fake.pull_requests().len(),
        1,
        "{}",
        world.history(number)
    );
    let checklists = world
        .fake
        .comments(number)
        .into_iter()
        .filter(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .count();
    assert_eq!(checklists, 1, "one checklist for all the jobs");
    let history = world.history(number);
    let finished = history
        .lines()
        .filter(|l| l.contains(r#""type":"run_finished""#))
        .count();
    assert_eq!(finished, 5, "{history}");
    assert!(
        history
            .lines()
            .last()
            .is_some_and(|l| l.contains(r#""status":"completed""#)),
        "{history}"
    );
}

/// Two independent subtasks, each writing its own file.
const TWO_INDEPENDENT: &str = r#"
mode: matched
steps:
  - when: { contains: "Produce the planning phases" }
    reply: |
      {"phase": "planning",
       "goal_understanding": {"main_objective": "Write two files", "success_criteria": ["both exist"], "constraints": []},
       "task_decomposition": {"reasoning": "independent", "subtasks": [
          {"id": "task_1", "description": "Write hello.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]},
          {"id": "task_2", "description": "Write world.md", "dependencies": [], "estimated_complexity": "low", "required_tools": ["write_file"]}]},
       "action_plan": {"execution_order": ["task_1", "task_2"], "actions": [
          {"task_id": "task_1", "action_type": "tool_call", "tool": "write_file", "purpose": "write", "expected_outcome": "written"},
          {"task_id": "task_2", "action_type": "tool_call", "tool": "write_file", "purpose": "write", "expected_outcome": "written"}]},
       "self_check": {"goal_understanding": {"ok": true, "notes": ""}, "task_decomposition": {"ok": true, "notes": ""}, "action_plan": {"ok": true, "notes": ""}},
       "comment": "ok",
       "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "quality": {"score": 90, "is_acceptable": true, "issues": [], "suggestions": []}}
  - when: { contains: "created `world.md`" }
    reply: |
      {"report": "Wrote the file.", "replan_decision": {"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []},
       "verdict": {"success": true, "shouldContinue": false, "shouldReplan": false, "reason": "done", "missingRequirements": []},
       "reflection": {"action_evaluated": "work", "status": "success", "evaluation": "fine", "issues_identified": [], "plan_revision_needed": false}}
  - when: { contains: "Execute subtask `task_2`" }
    tool_calls: [ { name: write_file, arguments: { path: world.md, content: "world\n" } } ]
"#;

#[test]
fn two_subtask_jobs_at_once_both_land_on_the_github_history_branch() {
    let world = World::new(TWO_INDEPENDENT);
    world.fake.add_collaborator("alice", "write");
    let number = world.fake.seed_issue("Two files", "Please.", "alice");
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    let plan = world.run_args(&env, &["run", "--stage", "plan"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    assert_eq!(matrices(&world), [r#"{"subtask":["task_1","task_2"]}"#]);

    // Each job in its own checkout, both at once.
    let clones: Vec<crate::support::TestRepo> = (0..2)
        .map(|_| {
            let clone = crate::support::TestRepo::clone_from(&world._origin);
            clone.run_git(&["checkout", "-q", "main"]);
            clone
        })
        .collect();
    let children: Vec<_> = ["task_1", "task_2"]
        .into_iter()
        .zip(&clones)
        .map(|(id, clone)| {
            world
                .command(&env)
                .env("GITHUB_WORKSPACE", clone.path())
                .args(["run", "--stage", "subtask", "--subtask", id])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }

    fresh_checkout(&world);
    let join = world.run_args(&env, &["run", "--stage", "join"]);
    assert_eq!(join.status.code(), Some(0), "{}", text(&join));
    assert_eq!(world.outputs()["status"], "completed");
    assert_eq!(world.checkout.read("hello.md"), "hello\n");
    assert_eq!(world.checkout.read("world.md"), "world\n");
    let history = world.history(number);
    for id in ["task_1", "task_2"] {
        let judged = history
            .lines()
            .filter(|l| {
                l.contains(r#""type":"judge""#) && l.contains(&format!(r#""task_id":"{id}""#))
            })
            .count();
        assert_eq!(judged, 1, "{id}: {history}");
    }
    assert_eq!(
        history.matches(r#""type":"run_finished""#).count(),
        4,
        "{history}"
    );
}
