//! The dependency graph in the checklist, read by mermaid's own parser: every task is one node
//! labelled with its own id and description, whatever the model wrote in them, and the graph's
//! edges are the plan's dependencies.

use super::report_snapshots::revised_thread;
use crate::support::mermaid_parser::{self, Parsed};
use replan::history::SessionState;
use replan::plan::{Plan, Subtask, TaskDecomposition};
use replan::report::checklist::{self, ChecklistContext};
use replan::report::mermaid;
use std::collections::BTreeSet;

pub(super) fn task(id: &str, description: &str, dependencies: &[&str]) -> Subtask {
    Subtask {
        id: id.into(),
        description: description.into(),
        dependencies: dependencies.iter().map(|d| (*d).into()).collect(),
        ..Default::default()
    }
}

/// Ids that differ only in punctuation or non-ASCII letters, and descriptions a hostile or careless
/// model writes: quotes, brackets, backticks, newlines (one closing the markdown fence), `#`, `;`,
/// `|`, HTML, entity codes, mermaid keywords and comments, non-ASCII.
pub(super) fn hostile_plan() -> Plan {
    let subtasks = vec![
        task("task-1", "Read \"docs\" and 'notes'", &[]),
        task(
            "task_1",
            "Write [it] (now) {maybe} <b>bold</b>",
            &["task-1"],
        ),
        task(
            "task.1",
            "a `code` span; then #1; & &amp; #quot;",
            &["task_1"],
        ),
        task("tâche-1", "Grüße, 日本語, 🚀 and a\nnewline", &["task-1"]),
        task(
            "tache-1",
            "line one\n```\n# injected heading\n```",
            &["tâche-1"],
        ),
        task("t0", "`whole label in backticks`", &["task.1"]),
        task(
            "a\"]-->b[\"x",
            "end %% comment\r\nclick t0 call alert()",
            &["t0"],
        ),
        task(
            "x|y;z#w",
            "a | pipe --> arrow ; semi",
            &["a\"]-->b[\"x", "tache-1"],
        ),
    ];
    Plan {
        task_decomposition: TaskDecomposition {
            reasoning: String::new(),
            subtasks,
        },
        ..Default::default()
    }
}

/// What a reader should see as a task's label: its id and description, whitespace runs (newlines
/// included) as one space.
fn expected_label(task: &Subtask) -> String {
    let text = format!("{}: {}", task.id, task.description);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_shows_the_plan(parsed: &Parsed, plan: &Plan, graph: &str) {
    assert_eq!(parsed.error, None, "mermaid cannot parse:\n{graph}");
    let subtasks = &plan.task_decomposition.subtasks;
    let labels: Vec<&str> = parsed.vertices.iter().map(|v| v.text.as_str()).collect();
    let expected: Vec<String> = subtasks.iter().map(expected_label).collect();
    assert_eq!(
        labels, expected,
        "one node per task, labelled as written:\n{graph}"
    );
    let label_of = |node: &str| {
        let vertex = parsed.vertices.iter().find(|v| v.id == node);
        vertex.map(|v| v.text.clone()).unwrap_or_default()
    };
    let edges: BTreeSet<(String, String)> = parsed
        .edges
        .iter()
        .map(|(from, to)| (label_of(from), label_of(to)))
        .collect();
    let dependencies: BTreeSet<(String, String)> = subtasks
        .iter()
        .flat_map(|t| {
            t.dependencies.iter().map(move |d| {
                let dep = subtasks.iter().find(|s| &s.id == d).unwrap();
                (expected_label(dep), expected_label(t))
            })
        })
        .collect();
    assert_eq!(edges, dependencies, "edges are the dependencies:\n{graph}");
}

#[tokio::test]
async fn mermaid_parses_hostile_ids_and_descriptions_as_one_node_each() {
    let Some(dir) = mermaid_parser::available() else {
        return;
    };
    let plan = hostile_plan();
    let state = SessionState {
        plan: Some(plan.clone().into()),
        ..Default::default()
    };
    let rendered = mermaid::render(&plan, &state);
    let in_checklist = checklist::render(&state, &ChecklistContext::default());
    let graphs = vec![
        mermaid_parser::fenced_graph(&rendered),
        mermaid_parser::fenced_graph(&in_checklist),
    ];
    let parsed = mermaid_parser::parse(&dir, &graphs);
    for (parsed, graph) in parsed.iter().zip(&graphs) {
        assert_shows_the_plan(parsed, &plan, graph);
    }
}

#[tokio::test]
async fn mermaid_parses_the_graph_of_a_revised_plan_with_its_states() {
    let Some(dir) = mermaid_parser::available() else {
        return;
    };
    let thread = revised_thread().await;
    let state = thread.state();
    let plan = state.plan.clone().unwrap();
    let graph = mermaid_parser::fenced_graph(&mermaid::render(&plan, &state));
    let parsed = mermaid_parser::parse(&dir, std::slice::from_ref(&graph));
    assert_shows_the_plan(&parsed[0], &plan, &graph);
    let classes: Vec<Vec<String>> = parsed[0]
        .vertices
        .iter()
        .map(|v| v.classes.clone())
        .collect();
    assert!(classes.iter().any(|c| c == &["done"]), "{graph}");
}

#[tokio::test]
async fn mermaid_keeps_ids_differing_in_punctuation_apart_and_a_newline_inside_its_label() {
    let Some(dir) = mermaid_parser::available() else {
        return;
    };
    let plan = Plan {
        task_decomposition: TaskDecomposition {
            reasoning: String::new(),
            subtasks: vec![
                task("task-1", "first", &[]),
                task("task_1", "second\nline", &["task-1"]),
            ],
        },
        ..Default::default()
    };
    let state = SessionState::default();
    let graph = mermaid_parser::fenced_graph(&mermaid::render(&plan, &state));
    let parsed = mermaid_parser::parse(&dir, std::slice::from_ref(&graph));
    assert_shows_the_plan(&parsed[0], &plan, &graph);
}
