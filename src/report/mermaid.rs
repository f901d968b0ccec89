//! The plan's dependency graph as a mermaid flowchart.

use crate::history::SessionState;
use crate::plan::{Plan, TaskState};
use std::fmt::Write;

/// Mermaid node ids must be plain identifiers; task ids come from the model.
fn node_id(task_id: &str) -> String {
    let cleaned: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("t_{cleaned}")
}

/// Labels are quoted; quotes and brackets inside would end the label early.
fn label(text: &str) -> String {
    let short: String = text.chars().take(48).collect();
    let ellipsis = if text.chars().count() > 48 { "…" } else { "" };
    format!("{short}{ellipsis}")
        .replace('"', "'")
        .replace(['[', ']', '{', '}', '<', '>', '|'], " ")
}

pub fn render(plan: &Plan, state: &SessionState) -> String {
    let mut out = String::from("```mermaid\ngraph TD\n");
    for task in &plan.task_decomposition.subtasks {
        let id = node_id(&task.id);
        let _ = writeln!(
            out,
            "  {id}[\"{}: {}\"]",
            label(&task.id),
            label(&task.description)
        );
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
    for task in &plan.task_decomposition.subtasks {
        for dep in &task.dependencies {
            let _ = writeln!(out, "  {} --> {}", node_id(dep), node_id(&task.id));
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

    #[test]
    fn edges_follow_dependencies_and_ids_are_sanitised() {
        let plan = Plan {
            task_decomposition: TaskDecomposition {
                reasoning: String::new(),
                subtasks: vec![
                    Subtask {
                        id: "task-1".into(),
                        description: "Read \"docs\"".into(),
                        ..Default::default()
                    },
                    Subtask {
                        id: "task_2".into(),
                        description: "Write [it]".into(),
                        dependencies: vec!["task-1".into()],
                        ..Default::default()
                    },
                ],
            },
            ..Default::default()
        };
        let out = render(&plan, &SessionState::default());
        assert!(out.contains("t_task_1 --> t_task_2"), "{out}");
        assert!(out.contains("t_task_1[\"task-1: Read 'docs'\"]"), "{out}");
        assert!(out.contains("Write  it "), "{out}");
    }
}
