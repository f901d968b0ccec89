//! Rendered comments read by a GitHub-flavoured Markdown parser (`support::gfm`): task lists,
//! `<details>` and headings come out as Replan wrote them, whatever the model put in task ids,
//! descriptions and questions.

use super::mermaid_graph::{hostile_plan, task};
use crate::support::gfm;
use replan::history::SessionState;
use replan::history::entry::CiResult;
use replan::plan::Subtask;
use replan::report::Notice;
use replan::report::checklist::{self, ChecklistContext};

/// Text a model may write that is Markdown or HTML to a renderer.
fn markup_plan() -> Vec<Subtask> {
    let mut subtasks = hostile_plan().task_decomposition.subtasks;
    subtasks.extend([
        task(
            "close",
            "</details> then <details><summary>x</summary>",
            &[],
        ),
        task("**bold**", "- [x] a fake done task\n- [ ] another", &[]),
        task(
            "esc\\",
            "back\\slash \\*not bold\\* [link](https://e.com) ![i](x.png)",
            &[],
        ),
        task("h", "# heading? | a | b |\n|---|---|", &[]),
        task(
            "ent",
            "&lt;b&gt; &#60;i&#62; ~~struck~~ _under_ <!-- hidden -->",
            &[],
        ),
    ]);
    subtasks
}

fn displayed(task: &Subtask) -> String {
    let text = format!("{}: {}", task.id, task.description);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_checklist_renders_one_task_item_per_task_with_its_text_as_written() {
    let mut plan = hostile_plan();
    plan.task_decomposition.subtasks = markup_plan();
    let state = SessionState {
        plan: Some(plan.clone().into()),
        ci_results: vec![CiResult {
            branch: "replan/issue-1".into(),
            conclusion: "failure".into(),
            passed: false,
            head_sha: "0123456789abcdef".into(),
            run_url: Some("https://github.com/o/r/actions/runs/1".into()),
            failed_jobs: vec!["test `x` | </details>\n# y".into()],
            round: 1,
        }],
        ..Default::default()
    };
    let markdown = checklist::render(&state, &ChecklistContext::default());
    let rendered = gfm::render(&markdown);

    let shown: Vec<String> = rendered
        .tasks
        .iter()
        .map(|(_, text)| text.clone())
        .collect();
    let expected: Vec<String> = plan
        .task_decomposition
        .subtasks
        .iter()
        .map(displayed)
        .collect();
    assert_eq!(shown, expected, "{markdown}");
    assert!(rendered.tasks.iter().all(|(done, _)| !done), "{markdown}");
    rendered.assert_details_balanced(&markdown);
    rendered.assert_only_tags(&["details", "summary"], &markdown);
    assert_eq!(
        rendered.headings,
        vec!["📋 Execution Plan", "Plan:"],
        "{markdown}"
    );
    let graphs: Vec<&(String, String)> = rendered
        .code_blocks
        .iter()
        .filter(|(info, _)| info == "mermaid")
        .collect();
    assert_eq!(graphs.len(), 1, "{markdown}");
    assert_eq!(rendered.code_blocks.len(), 1, "{markdown}");
    assert!(rendered.tables.is_empty(), "{markdown}");
}

#[test]
fn notices_keep_each_question_and_bullet_one_item() {
    let questions = vec![
        "Which file?\n# injected".to_owned(),
        "</details> <b>x</b> `y`".to_owned(),
    ];
    let assumptions = vec!["hello.md\n- [x] fake".to_owned(), "| a | b |".to_owned()];
    let notice = Notice::Clarification {
        questions: questions.clone(),
        context: String::new(),
        assumptions: assumptions.clone(),
    };
    let markdown = replan::report::notice::render(&notice, chrono::Utc::now());
    let rendered = gfm::render(&markdown);
    assert_eq!(
        rendered.headings,
        vec!["❓ Clarification Needed (AI Decision)"],
        "{markdown}"
    );
    assert!(rendered.tasks.is_empty(), "{markdown}");
    rendered.assert_only_tags(&[], &markdown);
    assert!(rendered.tables.is_empty(), "{markdown}");
}
