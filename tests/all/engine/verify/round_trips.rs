//! A passing `each_task` check is evidence, not a question: the run with it makes exactly the
//! model requests the run without checks makes (the bench's 20-subtask cycle relies on it to keep
//! its round-trip target with one check per subtask).

use super::{MAPPED_PLAN, checks, run_with};
use replan::history::entry::RunStatus;

#[test]
fn a_passing_each_task_check_asks_the_model_nothing_more() {
    let unchecked = run_with("verify: []\n", MAPPED_PLAN);
    let checked = run_with(
        "verify:\n  - name: hello\n    argv: [test, -f, hello.md]\n",
        MAPPED_PLAN,
    );
    assert_eq!(checked.status, RunStatus::Completed, "{}", checked.stderr);
    assert!(
        checks(&checked.entries)
            .iter()
            .any(|c| c.task_id.as_deref() == Some("task_1") && c.passed()),
        "task_1's check did not run and pass"
    );
    let prompts = |run: &super::Run| -> Vec<String> {
        run.llm
            .requests()
            .iter()
            .map(|r| {
                let text = r.texts().join("\n");
                // What the request asks for: the last line of its prompt.
                text.lines().last().unwrap_or_default().to_owned()
            })
            .collect()
    };
    let (with, without) = (prompts(&checked), prompts(&unchecked));
    assert_eq!(
        with.len(),
        without.len(),
        "passing checks changed the model requests:\nwith checks: {with:#?}\nwithout: {without:#?}"
    );
}
