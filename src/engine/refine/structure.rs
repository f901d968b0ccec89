//! Seed 002 structure validation between a plan and its refined version, and the per-task
//! fallback used when the refined plan broke the structure.
//!
//! The refined plan is broken when any of these holds:
//! - the task count changed by more than `task_count_change_threshold` (30 %) of the previous
//!   count AND by more than `task_count_change_min_absolute` (2) tasks;
//! - a dependency names a task that is not in the refined plan (dangling);
//! - the dependencies form a cycle.

use crate::config::RefinementConfig;
use crate::plan::{Plan, PlannedAction, Subtask};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StructureProblem {
    TaskCountChanged {
        before: usize,
        after: usize,
    },
    DanglingDependency {
        task: String,
        missing: String,
    },
    /// The tasks on one cycle, in dependency order, starting from the smallest id.
    Cycle {
        tasks: Vec<String>,
    },
}

impl fmt::Display for StructureProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StructureProblem::TaskCountChanged { before, after } => {
                write!(f, "task count changed from {before} to {after}")
            }
            StructureProblem::DanglingDependency { task, missing } => {
                write!(f, "task `{task}` depends on unknown task `{missing}`")
            }
            StructureProblem::Cycle { tasks } => {
                write!(f, "dependency cycle: {}", tasks.join(" → "))
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructureValidation {
    pub problems: Vec<StructureProblem>,
}

impl StructureValidation {
    pub fn is_broken(&self) -> bool {
        !self.problems.is_empty()
    }
}

/// Compare the refined plan `next` with `prev`.
pub fn validate_structure(prev: &Plan, next: &Plan, cfg: &RefinementConfig) -> StructureValidation {
    let mut problems = Vec::new();
    let before = prev.task_decomposition.subtasks.len();
    let after = next.task_decomposition.subtasks.len();
    if count_change_breaks(before, after, cfg) {
        problems.push(StructureProblem::TaskCountChanged { before, after });
    }
    let ids: BTreeSet<&str> = next.subtask_ids().collect();
    for t in &next.task_decomposition.subtasks {
        for d in &t.dependencies {
            if !ids.contains(d.as_str()) {
                problems.push(StructureProblem::DanglingDependency {
                    task: t.id.clone(),
                    missing: d.clone(),
                });
            }
        }
    }
    if let Some(tasks) = find_cycle(&next.task_decomposition.subtasks) {
        problems.push(StructureProblem::Cycle { tasks });
    }
    StructureValidation { problems }
}

fn count_change_breaks(before: usize, after: usize, cfg: &RefinementConfig) -> bool {
    let diff = before.abs_diff(after);
    let ratio = if before == 0 {
        if diff == 0 { 0.0 } else { f64::INFINITY }
    } else {
        diff as f64 / before as f64
    };
    ratio > cfg.task_count_change_threshold && diff > cfg.task_count_change_min_absolute as usize
}

/// One dependency cycle, if any. Dangling dependencies are ignored here (reported separately).
fn find_cycle(tasks: &[Subtask]) -> Option<Vec<String>> {
    let deps: BTreeMap<&str, Vec<&str>> = tasks
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.dependencies.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    let mut marks: BTreeMap<&str, Mark> = BTreeMap::new();
    // Iterative DFS keeps a 10k-task chain from overflowing the stack.
    for &start in deps.keys() {
        if marks.contains_key(start) {
            continue;
        }
        let mut path: Vec<&str> = vec![start];
        let mut next_child: Vec<usize> = vec![0];
        marks.insert(start, Mark::Visiting);
        while let Some(&node) = path.last() {
            let i = *next_child.last().unwrap_or(&0);
            let children = &deps[node];
            if i < children.len() {
                *next_child.last_mut().expect("in step with path") += 1;
                let child = children[i];
                if !deps.contains_key(child) {
                    continue;
                }
                match marks.get(child) {
                    Some(Mark::Visiting) => {
                        let from = path.iter().position(|n| *n == child).unwrap_or(0);
                        let mut cycle: Vec<String> =
                            path[from..].iter().map(|s| s.to_string()).collect();
                        let min = cycle
                            .iter()
                            .enumerate()
                            .min_by(|a, b| a.1.cmp(b.1))
                            .map_or(0, |(i, _)| i);
                        cycle.rotate_left(min);
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(child, Mark::Visiting);
                        path.push(child);
                        next_child.push(0);
                    }
                }
            } else {
                marks.insert(node, Mark::Done);
                path.pop();
                next_child.pop();
            }
        }
    }
    None
}

/// The per-task fallback (`enable_individual_fallback`) when the refined plan broke the structure.
///
/// Exactly: the result is `prev` with, for every subtask whose id is also in `next`, the refined
/// `description`, `required_tools` and `estimated_complexity` taken from `next`, and the refined
/// actions of that task (when `next` has any for it) in place of the previous ones. Everything
/// else comes from `prev`: the goal understanding, the reasoning, the task list and its order,
/// every dependency, the execution order, and the subtasks and actions of tasks missing from
/// `next`. Tasks only in `next` are dropped: they are what broke the structure.
pub fn fallback_per_task(prev: &Plan, next: &Plan) -> Plan {
    let mut out = prev.clone();
    for t in &mut out.task_decomposition.subtasks {
        if let Some(n) = next.subtask(&t.id) {
            t.description = n.description.clone();
            t.required_tools = n.required_tools.clone();
            t.estimated_complexity = n.estimated_complexity;
        }
    }
    let refined_actions = |id: &str| -> Vec<PlannedAction> {
        next.action_plan
            .actions
            .iter()
            .filter(|a| a.task_id == id)
            .cloned()
            .collect()
    };
    let mut actions = Vec::with_capacity(prev.action_plan.actions.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    // Actions follow the previous action list; a task's refined actions replace its previous ones
    // at the position of its first previous action.
    for a in &prev.action_plan.actions {
        let id = a.task_id.as_str();
        let refined = if next.subtask(id).is_some() && prev.subtask(id).is_some() {
            refined_actions(id)
        } else {
            Vec::new()
        };
        if refined.is_empty() {
            actions.push(a.clone());
        } else if placed.insert(id) {
            actions.extend(refined);
        }
    }
    out.action_plan.actions = actions;
    out
}

/// The plan to go on with after a refinement: `next` when its structure holds; otherwise the
/// per-task fallback when `enable_individual_fallback`, else `prev` unchanged.
pub fn choose_refined_plan(
    prev: &Plan,
    next: &Plan,
    cfg: &RefinementConfig,
) -> (Plan, StructureValidation) {
    let v = validate_structure(prev, next, cfg);
    let plan = if !v.is_broken() {
        next.clone()
    } else if cfg.enable_individual_fallback {
        fallback_per_task(prev, next)
    } else {
        prev.clone()
    };
    (plan, v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Complexity;

    fn task(id: &str, deps: &[&str]) -> Subtask {
        Subtask {
            id: id.into(),
            description: format!("old {id}"),
            dependencies: deps.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn plan(tasks: Vec<Subtask>) -> Plan {
        let mut p = Plan::default();
        p.action_plan.execution_order = tasks.iter().map(|t| t.id.clone()).collect();
        p.action_plan.actions = tasks
            .iter()
            .map(|t| PlannedAction {
                task_id: t.id.clone(),
                purpose: format!("old action {}", t.id),
                ..Default::default()
            })
            .collect();
        p.task_decomposition.subtasks = tasks;
        p
    }

    fn chain(n: usize) -> Plan {
        let ids: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
        plan(
            ids.iter()
                .enumerate()
                .map(|(i, id)| {
                    let deps: Vec<&str> = if i == 0 {
                        vec![]
                    } else {
                        vec![ids[i - 1].as_str()]
                    };
                    task(id, &deps)
                })
                .collect(),
        )
    }

    #[test]
    fn task_count_needs_both_ratio_and_absolute_change() {
        let cfg = RefinementConfig::default();
        // 10 → 13: 30 % exactly, 3 tasks: ratio not above 30 % → fine.
        assert!(!validate_structure(&chain(10), &chain(13), &cfg).is_broken());
        // 10 → 14: 40 % and 4 tasks → broken.
        assert_eq!(
            validate_structure(&chain(10), &chain(14), &cfg).problems,
            vec![StructureProblem::TaskCountChanged {
                before: 10,
                after: 14
            }]
        );
        // 4 → 6: 50 % but only 2 tasks → fine.
        assert!(!validate_structure(&chain(4), &chain(6), &cfg).is_broken());
        // 4 → 7: 75 % and 3 tasks → broken.
        assert!(validate_structure(&chain(4), &chain(7), &cfg).is_broken());
        // 3 → 0: all gone.
        assert!(validate_structure(&chain(3), &chain(0), &cfg).is_broken());
    }

    #[test]
    fn dangling_dependencies_and_cycles_break_the_structure() {
        let cfg = RefinementConfig::default();
        let prev = chain(3);
        let dangling = plan(vec![
            task("t1", &[]),
            task("t2", &["t9"]),
            task("t3", &["t2"]),
        ]);
        assert_eq!(
            validate_structure(&prev, &dangling, &cfg).problems,
            vec![StructureProblem::DanglingDependency {
                task: "t2".into(),
                missing: "t9".into()
            }]
        );
        let cyclic = plan(vec![
            task("t1", &["t3"]),
            task("t2", &["t1"]),
            task("t3", &["t2"]),
        ]);
        assert_eq!(
            validate_structure(&prev, &cyclic, &cfg).problems,
            vec![StructureProblem::Cycle {
                tasks: vec!["t1".into(), "t3".into(), "t2".into()]
            }]
        );
        let self_loop = plan(vec![task("t1", &["t1"]), task("t2", &[]), task("t3", &[])]);
        assert!(validate_structure(&prev, &self_loop, &cfg).is_broken());
    }

    #[test]
    fn a_long_chain_is_checked_without_recursion() {
        let cfg = RefinementConfig::default();
        let big = chain(20_000);
        assert!(!validate_structure(&big, &big, &cfg).is_broken());
    }

    #[test]
    fn fallback_takes_refined_details_for_shared_ids_only() {
        let prev = plan(vec![
            task("t1", &[]),
            task("t2", &["t1"]),
            task("t3", &["t2"]),
        ]);
        let mut t2 = task("t2", &[]);
        t2.description = "new t2".into();
        t2.required_tools = vec!["search".into()];
        t2.estimated_complexity = Complexity::High;
        let mut next = plan(vec![
            t2,
            task("x1", &["t2"]),
            task("x2", &[]),
            task("x3", &[]),
        ]);
        let action = |task: &str, purpose: &str| PlannedAction {
            task_id: task.into(),
            purpose: purpose.into(),
            ..Default::default()
        };
        next.action_plan.actions = vec![
            action("x1", "new x1"),
            action("t2", "new t2 a"),
            action("t2", "new t2 b"),
        ];
        next.task_decomposition.reasoning = "refined".into();
        let out = fallback_per_task(&prev, &next);
        let ids: Vec<&str> = out.subtask_ids().collect();
        assert_eq!(ids, vec!["t1", "t2", "t3"]);
        let t2 = out.subtask("t2").unwrap();
        assert_eq!(t2.description, "new t2");
        assert_eq!(t2.required_tools, vec!["search".to_string()]);
        assert_eq!(t2.estimated_complexity, Complexity::High);
        assert_eq!(
            t2.dependencies,
            vec!["t1".to_string()],
            "structure stays the previous one"
        );
        assert_eq!(out.subtask("t1").unwrap().description, "old t1");
        assert_eq!(
            out.action_plan.execution_order,
            prev.action_plan.execution_order
        );
        assert_eq!(out.task_decomposition.reasoning, "");
        let purposes: Vec<&str> = out
            .action_plan
            .actions
            .iter()
            .map(|a| a.purpose.as_str())
            .collect();
        assert_eq!(
            purposes,
            vec!["old action t1", "new t2 a", "new t2 b", "old action t3"]
        );
    }

    #[test]
    fn choose_uses_next_fallback_or_prev() {
        let mut cfg = RefinementConfig::default();
        let prev = chain(3);
        let mut good = chain(3);
        good.task_decomposition.subtasks[0].description = "better".into();
        assert_eq!(choose_refined_plan(&prev, &good, &cfg).0, good);
        let broken = plan(vec![
            task("t1", &["t3"]),
            task("t2", &["t1"]),
            task("t3", &["t2"]),
        ]);
        let (fb, v) = choose_refined_plan(&prev, &broken, &cfg);
        assert!(v.is_broken());
        assert_eq!(fb.subtask("t1").unwrap().dependencies, Vec::<String>::new());
        assert_eq!(fb.subtask("t1").unwrap().description, "old t1");
        cfg.enable_individual_fallback = false;
        assert_eq!(choose_refined_plan(&prev, &broken, &cfg).0, prev);
    }
}
