//! Issue 37 on the fake GitHub: a final check that fails leaves the job `unverified` (exit 0, the
//! `status` output says so), and the checklist and the job summary show which check failed on
//! which tree.

use super::{World, checklist_of, text};

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
