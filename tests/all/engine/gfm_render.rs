//! Rendered comments read by a GitHub-flavoured Markdown parser (`support::gfm`): task lists,
//! `<details>` and headings come out as Replan wrote them, whatever the model put in task ids,
//! descriptions and questions.

use super::mermaid_graph::{hostile_plan, task};
use crate::support::gfm;
use replan::forge::pr_section;
use replan::history::SessionState;
use replan::history::check::{CheckRecord, CheckStatus, CriterionEvidence};
use replan::history::entry::{CiResult, RunStatus};
use replan::history::evidence::Verification;
use replan::plan::Subtask;
use replan::report::Notice;
use replan::report::checklist::{self, ChecklistContext};
use replan::report::verification::{HistoryLink, pull_request_section};

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

fn check(name: &str, task: Option<&str>, tree: &str, status: CheckStatus) -> CheckRecord {
    CheckRecord {
        name: name.into(),
        argv: vec!["x".into()],
        status,
        exit_code: None,
        duration_ms: 1200,
        tree: Some(tree.into()),
        task_id: task.map(Into::into),
        base_tree: None,
        output_tail: String::new(),
    }
}

/// The pull request body's "Verification" section (issue 37, point 5) read by the GFM parser:
/// one list item per fact and no markup of its own, whatever the model put in task ids, success
/// criteria and manual reasons, and whatever a check's name or a CI job's name holds.
#[test]
fn the_pull_request_section_keeps_each_fact_one_item_whatever_the_model_wrote() {
    let mut plan = hostile_plan();
    plan.task_decomposition.subtasks = markup_plan();
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    let mut state = SessionState {
        plan: Some(plan.clone().into()),
        last_status: Some(RunStatus::Unverified),
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
    let hostile_check = "unit `tests` | <b>\n# h";
    for task in &plan.task_decomposition.subtasks {
        state.evidence.record(check(
            hostile_check,
            Some(&task.id),
            &a,
            CheckStatus::Passed,
        ));
    }
    state
        .evidence
        .record(check(hostile_check, None, &b, CheckStatus::NotRun));
    state.evidence.verification = Some(Verification {
        source: "configured".into(),
        checks: vec![hostile_check.into()],
        problems: vec!["check `x` could not run: </details> # [a](b)\n- [x] y".into()],
        criteria: vec![
            CriterionEvidence {
                criterion: "Tests <b>pass</b>\n# twice; `ok` [x]".into(),
                check: Some(hostile_check.into()),
                manual_reason: None,
                status: Some(CheckStatus::NotRun),
                tree: Some(b.clone()),
            },
            CriterionEvidence {
                criterion: "Grüße — \"quoted\" 'docs'".into(),
                check: None,
                manual_reason: Some("a person </details> reads it\n- [ ] z".into()),
                status: None,
                tree: None,
            },
        ],
    });
    let history = HistoryLink {
        path: "planning_history/issues/1.jsonl".into(),
        branch: "replan-history".into(),
        url: Some(
            "https://github.com/o/r/blob/replan-history/planning_history/issues/1.jsonl".into(),
        ),
    };
    let section = pull_request_section(&state, &history);
    let body = pr_section::splice(
        "Adds the files.\n\nCloses #1\n\n<!-- replan:key=0123abcd -->",
        &section,
    );
    let rendered = gfm::render(&body);

    assert_eq!(rendered.headings, vec!["Verification"], "{body}");
    assert!(rendered.tasks.is_empty(), "{body}");
    rendered.assert_only_tags(&[], &body);
    assert!(
        rendered.tables.is_empty() && rendered.code_blocks.is_empty(),
        "{body}"
    );
    assert_eq!(
        rendered.links,
        vec![
            "https://github.com/o/r/actions/runs/1".to_owned(),
            history.url.clone().unwrap()
        ],
        "{body}"
    );
    // One item per task with evidence, its id as written; the check's name shown whole.
    for task in &plan.task_decomposition.subtasks {
        let id = task.id.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            rendered
                .items
                .iter()
                .any(|item| item.starts_with(&format!("{id} — ✅ "))),
            "no item for {id:?}: {:#?}\n{body}",
            rendered.items
        );
    }
    let shown_check = hostile_check
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        rendered
            .items
            .iter()
            .any(|i| *i == format!("❌ {shown_check} could not run on bbbbbbb, 1.2 s")),
        "{:#?}\n{body}",
        rendered.items
    );
    assert!(
        rendered.items.iter().any(|i| i
            == "Grüße — \"quoted\" 'docs' — manual — not verified (a person </details> reads it - [ ] z)"),
        "{:#?}\n{body}",
        rendered.items
    );
    let tasks = plan.task_decomposition.subtasks.len();
    // The tasks, two criteria, one final check, one problem.
    assert_eq!(
        rendered.items.len(),
        tasks + 4,
        "{:#?}\n{body}",
        rendered.items
    );
}
