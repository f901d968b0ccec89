//! Issue 37 on the fake GitHub: a final check that fails leaves the job `unverified` (exit 0, the
//! `status` output says so), and the checklist and the job summary show which check failed on
//! which tree.

use super::{World, checklist_of, text};
use crate::support::gfm;
use replan::history::check::CheckRecord;
use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;

#[test]
fn github_e2e_a_failing_final_check_ends_unverified_with_the_proof_shown() {
    let world = World::new("");
    world.checkout.write(
        ".replan.yml",
        "verify:\n  - name: greets\n    argv: [grep, -q, goodbye, hello.md]\n    when: final\n",
    );
    world.checkout.commit_all("replan config");
    world.checkout.run_git(&["push", "-q", "origin", "main"]);
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let output = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "unverified", "{}", text(&output));
    let checklist = checklist_of(&world, number);
    assert!(
        checklist.contains("*Final verification (configured checks): ❌ `greets` failed on `"),
        "{checklist}"
    );
    let history = world.history(number);
    assert!(history.contains("\"type\":\"check\""), "{history}");
    assert!(history.contains("\"status\":\"unverified\""), "{history}");
    let summary = std::fs::read_to_string(world.files.path().join("summary.md")).unwrap();
    assert!(summary.contains("`greets` failed"), "{summary}");
}

/// task_2 overwrites what task_1 wrote; its alternatives, when blocked: none.
const OVERWRITES_HELLO: &str = r#"
steps:
  - when: { contains: "Execute subtask `task_2`" }
    tool_calls: [ { name: write_file, arguments: { path: hello.md, content: "goodbye\n" } } ]
  - when: { contains: "Propose up to three alternative ways" }
    reply: '{"alternatives": []}'
"#;

/// Issue 37, "Precise terms": a check's evidence counts only for the tree it ran on. The check
/// passes for task_1 on tree A; task_2 then changes the tree to B, where it fails. The checklist
/// shows task_1's proof as stale, and the run does not end `completed` on it.
#[test]
fn github_e2e_evidence_on_an_earlier_tree_is_shown_stale_and_proves_nothing() {
    let world = World::new(OVERWRITES_HELLO);
    world.checkout.write(
        ".replan.yml",
        "verify:\n  - name: greets\n    argv: [grep, -q, hello, hello.md]\n",
    );
    world.checkout.commit_all("replan config");
    world.checkout.run_git(&["push", "-q", "origin", "main"]);
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");

    let output = world.run(&world.env("issues", &world.issue_opened(number, "alice")));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_ne!(world.outputs()["status"], "completed", "{}", text(&output));
    let entries = jsonl::parse(&world.history(number)).entries;
    let checks: Vec<&CheckRecord> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Check(c) => Some(c.as_ref()),
            _ => None,
        })
        .collect();
    let first = checks
        .iter()
        .find(|c| c.task_id.as_deref() == Some("task_1"))
        .expect("task_1 was checked");
    assert!(first.passed(), "{first:?}");
    let tree_a = first.tree.clone().expect("a tree id");
    let later: Vec<_> = checks
        .iter()
        .filter(|c| c.tree.as_ref() != Some(&tree_a))
        .collect();
    assert!(
        !later.is_empty(),
        "no check ran on the changed tree: {checks:?}"
    );
    assert!(
        later.iter().all(|c| !c.passed()),
        "nothing passes on tree B: {later:?}"
    );
    let status = entries.iter().rev().find_map(|e| match &e.body {
        EntryBody::RunFinished { status, .. } => Some(*status),
        _ => None,
    });
    assert!(
        status.is_some() && status != Some(RunStatus::Completed),
        "{status:?}"
    );
    let checklist = checklist_of(&world, number);
    let short: String = tree_a.chars().take(7).collect();
    assert!(
        checklist.contains(&format!(
            "**task_1**: Write hello.md — ✅ `greets` on `{short}`, "
        )),
        "{checklist}"
    );
    let task_1_line = checklist
        .lines()
        .find(|l| l.contains("**task_1**"))
        .unwrap();
    assert!(
        task_1_line.ends_with("*(stale: the tree changed since)*"),
        "{checklist}"
    );
    let task_2_line = checklist
        .lines()
        .find(|l| l.contains("**task_2**"))
        .unwrap();
    assert!(
        task_2_line.contains("❌ `greets` failed on `"),
        "{checklist}"
    );
    assert!(!task_2_line.contains(&short), "{checklist}");
    let rendered = gfm::render(&checklist);
    rendered.assert_details_balanced(&checklist);
}

/// The scenarios of issue 37 on the fake GitHub as on the local forge: a model that changes
/// nothing ends `no_changes`, whatever it claims.
#[test]
fn github_e2e_a_model_that_changes_nothing_ends_no_changes() {
    let world = World::new(&crate::engine::verify::changes_nothing());
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let output = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "no_changes", "{}", text(&output));
    let history = world.history(number);
    assert!(history.contains("\"status\":\"no_changes\""), "{history}");
    assert!(!history.contains("\"status\":\"completed\""), "{history}");
}

/// A check that outlives its timeout is stopped, and the run ends `unverified` saying so.
#[test]
fn github_e2e_a_check_that_times_out_leaves_the_run_unverified() {
    let world = World::new("");
    world.checkout.write(
        ".replan.yml",
        "verify:\n  - name: slow\n    argv: [sleep, \"30\"]\n    timeout_seconds: 1\n    when: final\n",
    );
    world.checkout.commit_all("replan config");
    world.checkout.run_git(&["push", "-q", "origin", "main"]);
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let output = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "unverified", "{}", text(&output));
    assert!(
        checklist_of(&world, number).contains("`slow` timed out"),
        "{}",
        checklist_of(&world, number)
    );
    assert!(world.history(number).contains("\"status\":\"timed_out\""));
}
