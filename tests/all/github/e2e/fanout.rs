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
