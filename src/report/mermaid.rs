//! The plan's dependency graph as a mermaid flowchart.

use crate::history::SessionState;
use crate::plan::{Plan, TaskState};
use std::collections::HashMap;
use std::fmt::Write;

/// Node ids are the task's position in the plan (`t0`, `t1`, …): task ids come from the model,
/// and any cleaning of them into identifiers would let two ids (`task-1`, `task_1`) collapse into
/// one node. The id itself is shown in the label.
fn node_id(position: usize) -> String {
    format!("t{position}")
}

/// Labels go inside `"…"`. Only ASCII letters, digits, spaces and punctuation that means nothing
/// to mermaid, markdown or HTML are written as they are; every other character (quotes,
/// brackets, backticks, `#`, `;`, `|`, `<>`, `&`, `%`, non-ASCII) is written as mermaid's entity
/// code `#NNN;`, which mermaid shows as that character. So no text the model writes can end the
/// label, start a markdown label, become HTML, or close the comment's code fence. Whitespace runs,
/// newlines included, become one space.
fn label(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let flat = words.join(" ");
    let short: String = flat.chars().take(48).collect();
    let ellipsis = if flat.chars().count() > 48 { "…" } else { "" };
    let mut out = String::new();
    for c in format!("{short}{ellipsis}").chars() {
        if c.is_ascii_alphanumeric() || " -_.,:/!?'()+=@".contains(c) {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", u32::from(c));
        }
    }
    out
}

pub fn render(plan: &Plan, state: &SessionState) -> String {
    let subtasks = &plan.task_decomposition.subtasks;
    let mut positions: HashMap<&str, usize> = HashMap::new();
    for (position, task) in subtasks.iter().enumerate() {
        positions.entry(task.id.as_str()).or_insert(position);
    }
    let mut out = String::from("```mermaid\ngraph TD\n");
    for (position, task) in subtasks.iter().enumerate() {
        let id = node_id(position);
        let (name, description) = (label(&task.id), label(&task.description));
        let _ = writeln!(out, "  {id}[\"{name}: {description}\"]");
        let class = match state.task_state(&task.id) {
            TaskState::Done => Some("done"),
            TaskState::Running | TaskState::NeedsContinuation => Some("running"),
            TaskState::Blocked => Some("blocked"),
            TaskState::ReplacedByReplan | TaskState::Cancelled => Some("replaced"),
            TaskState::Ready => None,
        };
        if let Some(class) = class {
            let _ = writeln!(out, "  class {id} {class}");
        }
    }
    for (position, task) in subtasks.iter().enumerate() {
        // Plan validation rejects a dependency on no task; a graph has no node to draw it to.
        for dep in task
            .dependencies
            .iter()
            .filter_map(|d| positions.get(d.as_str()))
        {
            let _ = writeln!(out, "  {} --> {}", node_id(*dep), node_id(position));
        }
    }
    out.push_str("  classDef done fill:#d4edda,stroke:#28a745\n");
    out.push_str("  classDef running fill:#fff3cd,stroke:#ffc107\n");
    out.push_str("  classDef blocked fill:#f8d7da,stroke:#dc3545\n");
    out.push_str("  classDef replaced fill:#eeeeee,stroke:#999999,stroke-dasharray: 4\n");
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Subtask, TaskDecomposition};

    fn plan(subtasks: Vec<Subtask>) -> Plan {
        Plan {
            task_decomposition: TaskDecomposition {
                reasoning: String::new(),
                subtasks,
            },
            ..Default::default()
        }
    }

    #[test]
    fn ids_that_clean_to_the_same_identifier_stay_two_nodes() {
        let plan = plan(vec![
            Subtask {
                id: "task-1".into(),
                description: "Read \"docs\"".into(),
                ..Default::default()
            },
            Subtask {
                id: "task_1".into(),
                description: "Write [it]\nthen stop".into(),
                dependencies: vec!["task-1".into()],
                ..Default::default()
            },
        ]);
        let out = render(&plan, &SessionState::default());
        assert!(out.contains("  t0 --> t1\n"), "{out}");
        assert!(out.contains("t0[\"task-1: Read #34;docs#34;\"]"), "{out}");
        assert!(
            out.contains("t1[\"task_1: Write #91;it#93; then stop\"]"),
            "{out}"
        );
    }

    #[test]
    fn labels_hold_nothing_mermaid_markdown_or_html_reads() {
        let text = label("a`b`#1;<i>&|\"[]{}%\u{e9}\n```");
        assert_eq!(
            text,
            "a#96;b#96;#35;1#59;#60;i#62;#38;#124;#34;#91;#93;#123;#125;#37;#233; #96;#96;#96;"
        );
    }
}
