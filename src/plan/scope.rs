//! The scope of a plan (issue 39, `planning.approval: scope`): the subtask ids, the paths and
//! commands its actions name, and the tools it requires. A replan that adds to any of these, or
//! raises the number of subtasks, widens the scope and waits for `/approve`; one that only narrows
//! or reorders goes on. Paths and commands are read from the plan's text: a word with a `/` or a
//! file extension is a path, inline code that is not a path is a command.

use super::Plan;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PlanScope {
    pub subtasks: BTreeSet<String>,
    pub paths: BTreeSet<String>,
    pub tools: BTreeSet<String>,
    pub commands: BTreeSet<String>,
    pub subtask_count: usize,
}

impl PlanScope {
    pub fn of(plan: &Plan) -> Self {
        let mut scope = PlanScope {
            subtask_count: plan.task_decomposition.subtasks.len(),
            ..PlanScope::default()
        };
        let mut texts: Vec<&str> = Vec::new();
        for subtask in &plan.task_decomposition.subtasks {
            scope.subtasks.insert(subtask.id.clone());
            scope.tools.extend(subtask.required_tools.iter().cloned());
            texts.push(&subtask.description);
        }
        for action in &plan.action_plan.actions {
            scope.tools.extend(action.tool.iter().cloned());
            texts.extend([action.purpose.as_str(), action.expected_outcome.as_str()]);
            texts.extend(action.fallback_strategy.as_deref());
        }
        for text in texts {
            scope.read(text);
        }
        scope
    }

    fn read(&mut self, text: &str) {
        for (i, part) in text.split('`').enumerate() {
            let in_code = i % 2 == 1;
            if in_code {
                let code = part.trim();
                if is_path(code) {
                    self.paths.insert(code.to_owned());
                } else if !code.is_empty() {
                    self.commands.insert(code.to_owned());
                }
                continue;
            }
            for word in part.split_whitespace() {
                let word = word.trim_matches(|c: char| ",;:!?()[]{}\"'<>*".contains(c));
                let word = word.trim_end_matches('.');
                if is_path(word) {
                    self.paths.insert(word.to_owned());
                }
            }
        }
    }

    /// What `new` adds to and drops from this (approved) scope.
    pub fn diff(&self, new: &PlanScope) -> ScopeDiff {
        let pair = |old: &BTreeSet<String>, new: &BTreeSet<String>| SetDiff {
            added: new.difference(old).cloned().collect(),
            removed: old.difference(new).cloned().collect(),
        };
        ScopeDiff {
            subtasks: pair(&self.subtasks, &new.subtasks),
            paths: pair(&self.paths, &new.paths),
            tools: pair(&self.tools, &new.tools),
            commands: pair(&self.commands, &new.commands),
            subtask_count: (self.subtask_count, new.subtask_count),
        }
    }
}

/// A path: one word with a `/` (not a URL), or a file name with a letter-led extension
/// (`README.md`, `.gitignore`; not `1.5`, `e.g`, `i.e`).
fn is_path(word: &str) -> bool {
    if word.is_empty() || word.contains(char::is_whitespace) || word.contains("://") {
        return false;
    }
    let name_char = |c: char| c.is_alphanumeric() || "._-/".contains(c);
    if !word.chars().all(name_char) {
        return false;
    }
    if word.contains('/') {
        return word.chars().any(char::is_alphanumeric);
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            let abbreviation = stem.chars().count() == 1 && ext.chars().count() == 1;
            !abbreviation && ext.starts_with(|c: char| c.is_ascii_alphabetic()) && ext.len() <= 8
        }
        None => false,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SetDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Old and new scope, set by set; the count as (approved, new).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ScopeDiff {
    pub subtasks: SetDiff,
    pub paths: SetDiff,
    pub tools: SetDiff,
    pub commands: SetDiff,
    pub subtask_count: (usize, usize),
}

impl ScopeDiff {
    /// Any set gains an element or the subtask count rises.
    pub fn widens(&self) -> bool {
        [&self.subtasks, &self.paths, &self.tools, &self.commands]
            .iter()
            .any(|set| !set.added.is_empty())
            || self.subtask_count.1 > self.subtask_count.0
    }

    /// The diff as Markdown lines (`+`/`-` per element), the prose left out.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let (old, new) = self.subtask_count;
        let _ = writeln!(out, "- Subtasks: {old} → {new}");
        for (name, set) in [
            ("Subtasks", &self.subtasks),
            ("Paths", &self.paths),
            ("Tools", &self.tools),
            ("Commands", &self.commands),
        ] {
            if set.added.is_empty() && set.removed.is_empty() {
                continue;
            }
            let mut items: Vec<String> = set.added.iter().map(|a| format!("+`{a}`")).collect();
            items.extend(set.removed.iter().map(|r| format!("-`{r}`")));
            let _ = writeln!(out, "- {name}: {}", items.join(" "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlannedAction, plan_of};

    fn plan(tasks: &[(&str, &[&str])], purposes: &[(&str, &str, &str)]) -> Plan {
        let ids: Vec<&str> = tasks.iter().map(|(id, _)| *id).collect();
        let mut plan = plan_of(tasks, &ids);
        plan.action_plan.actions = purposes
            .iter()
            .map(|(task, tool, purpose)| PlannedAction {
                task_id: task.to_string(),
                tool: Some(tool.to_string()),
                purpose: purpose.to_string(),
                ..Default::default()
            })
            .collect();
        plan
    }

    #[test]
    fn paths_and_commands_are_read_from_the_actions() {
        let scope = PlanScope::of(&plan(
            &[("a", &[])],
            &[(
                "a",
                "run_command",
                "edit src/lib.rs and README.md, then run `cargo test`, e.g. like v1.5 (see https://x.y/z).",
            )],
        ));
        assert_eq!(
            scope.paths.iter().collect::<Vec<_>>(),
            ["README.md", "src/lib.rs"]
        );
        assert_eq!(scope.commands.iter().collect::<Vec<_>>(), ["cargo test"]);
        assert_eq!(scope.tools.iter().collect::<Vec<_>>(), ["run_command"]);
    }

    #[test]
    fn a_new_path_tool_command_or_subtask_widens_and_a_subset_does_not() {
        let approved = PlanScope::of(&plan(
            &[("a", &[]), ("b", &["a"])],
            &[
                ("a", "write_file", "write a.md"),
                ("b", "write_file", "write b.md"),
            ],
        ));
        let narrower = PlanScope::of(&plan(&[("b", &[])], &[("b", "write_file", "write b.md")]));
        assert!(!approved.diff(&narrower).widens());
        let new_path = PlanScope::of(&plan(
            &[("a", &[]), ("b", &["a"])],
            &[
                ("a", "write_file", "write a.md"),
                ("b", "write_file", "write .env"),
            ],
        ));
        let diff = approved.diff(&new_path);
        assert!(diff.widens());
        assert_eq!(diff.paths.added, [".env"]);
        assert_eq!(diff.paths.removed, ["b.md"]);
        let new_tool = PlanScope::of(&plan(
            &[("a", &[]), ("b", &["a"])],
            &[
                ("a", "write_file", "write a.md"),
                ("b", "run_command", "write b.md"),
            ],
        ));
        assert_eq!(approved.diff(&new_tool).tools.added, ["run_command"]);
        let new_command = PlanScope::of(&plan(
            &[("a", &[]), ("b", &["a"])],
            &[
                ("a", "write_file", "write a.md `make`"),
                ("b", "write_file", "write b.md"),
            ],
        ));
        assert!(approved.diff(&new_command).widens());
        let more = PlanScope::of(&plan(
            &[("a", &[]), ("b", &["a"]), ("c", &[])],
            &[
                ("a", "write_file", "write a.md"),
                ("b", "write_file", "write b.md"),
            ],
        ));
        let markdown = approved.diff(&more).markdown();
        assert!(markdown.contains("Subtasks: 2 → 3"), "{markdown}");
        assert!(markdown.contains("+`c`"), "{markdown}");
    }
}
