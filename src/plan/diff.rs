//! Structure comparison of two plans (seed 002 "構造検証"): did a refinement keep the plan's shape,
//! or did it break it (too many tasks added or removed, dangling dependencies, a cycle)?

use super::graph::TaskGraph;
use super::{Plan, Subtask};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Seed 002 `taskCountChangeThreshold` / `taskCountChangeMinAbsolute`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StructureThresholds {
    /// Relative change of the task count above which the structure counts as broken (0.3 = 30 %).
    pub task_count_change_threshold: f64,
    /// ...but only when the absolute difference is also above this.
    pub task_count_change_min_absolute: usize,
}

impl Default for StructureThresholds {
    fn default() -> Self {
        StructureThresholds {
            task_count_change_threshold: 0.3,
            task_count_change_min_absolute: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DanglingDependency {
    pub task: String,
    pub dependency: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StructureComparison {
    pub task_count_prev: usize,
    pub task_count_next: usize,
    /// |next − prev| / prev (prev = 0 counts as 1 so an empty previous plan does not divide by 0).
    pub change_ratio: f64,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Ids present in both whose description, dependencies, complexity or tools changed.
    pub changed: Vec<String>,
    pub dangling_dependencies: Vec<DanglingDependency>,
    pub cycle: Option<Vec<String>>,
    pub broken: bool,
    pub reasons: Vec<String>,
}

pub fn compare(prev: &Plan, next: &Plan, thresholds: &StructureThresholds) -> StructureComparison {
    let by_id = |p: &Plan| -> BTreeMap<String, Subtask> {
        let mut m = BTreeMap::new();
        for s in &p.task_decomposition.subtasks {
            m.entry(s.id.clone()).or_insert_with(|| s.clone());
        }
        m
    };
    let before = by_id(prev);
    let after = by_id(next);
    let task_count_prev = prev.task_decomposition.subtasks.len();
    let task_count_next = next.task_decomposition.subtasks.len();
    let difference = task_count_prev.abs_diff(task_count_next);
    let change_ratio = difference as f64 / task_count_prev.max(1) as f64;

    let added = after
        .keys()
        .filter(|id| !before.contains_key(*id))
        .cloned()
        .collect();
    let removed = before
        .keys()
        .filter(|id| !after.contains_key(*id))
        .cloned()
        .collect();
    let changed = after
        .iter()
        .filter(|(id, s)| before.get(*id).is_some_and(|b| b != *s))
        .map(|(id, _)| id.clone())
        .collect();

    let dangling: BTreeSet<DanglingDependency> = next
        .task_decomposition
        .subtasks
        .iter()
        .flat_map(|s| {
            s.dependencies
                .iter()
                .filter(|d| !after.contains_key(*d))
                .map(|d| DanglingDependency {
                    task: s.id.clone(),
                    dependency: d.clone(),
                })
        })
        .collect();
    let dangling_dependencies: Vec<DanglingDependency> = dangling.into_iter().collect();
    let cycle = TaskGraph::new(next).find_cycle().map(|c| c.path);

    let mut reasons = Vec::new();
    if change_ratio > thresholds.task_count_change_threshold
        && difference > thresholds.task_count_change_min_absolute
    {
        reasons.push(format!(
            "task count changed from {task_count_prev} to {task_count_next} ({:.0} %, more than {:.0} % and more than {} tasks)",
            change_ratio * 100.0,
            thresholds.task_count_change_threshold * 100.0,
            thresholds.task_count_change_min_absolute
        ));
    }
    for d in &dangling_dependencies {
        reasons.push(format!(
            "subtask \"{}\" depends on \"{}\", which is not in the new plan",
            d.task, d.dependency
        ));
    }
    if let Some(c) = &cycle {
        reasons.push(format!("dependency cycle {}", c.join(" → ")));
    }

    StructureComparison {
        task_count_prev,
        task_count_next,
        change_ratio,
        added,
        removed,
        changed,
        dangling_dependencies,
        cycle,
        broken: !reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tasks: &[(&str, &[&str])]) -> Plan {
        let mut p = Plan::default();
        for (id, deps) in tasks {
            p.task_decomposition.subtasks.push(Subtask {
                id: id.to_string(),
                description: format!("do {id}"),
                dependencies: deps.iter().map(|d| d.to_string()).collect(),
                ..Default::default()
            });
        }
        p
    }

    fn n_tasks(n: usize) -> Plan {
        let ids: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
        let tasks: Vec<(&str, &[&str])> = ids.iter().map(|s| (s.as_str(), &[][..])).collect();
        plan(&tasks)
    }

    #[test]
    fn count_change_needs_both_ratio_and_absolute_difference() {
        let t = StructureThresholds::default();
        // 2 → 4: +100 % but only 2 tasks: kept.
        assert!(!compare(&n_tasks(2), &n_tasks(4), &t).broken);
        // 10 → 13: 30 % exactly is not above the threshold.
        assert!(!compare(&n_tasks(10), &n_tasks(13), &t).broken);
        // 10 → 14: 40 % and 4 tasks: broken.
        let c = compare(&n_tasks(10), &n_tasks(14), &t);
        assert!(c.broken);
        assert_eq!(c.added, ["t11", "t12", "t13", "t14"]);
        assert_eq!(
            c.reasons,
            ["task count changed from 10 to 14 (40 %, more than 30 % and more than 2 tasks)"]
        );
        // 6 → 3: 50 % and 3 tasks: broken.
        let c = compare(&n_tasks(6), &n_tasks(3), &t);
        assert!(c.broken);
        assert_eq!(c.removed, ["t4", "t5", "t6"]);
    }

    #[test]
    fn dangling_dependencies_and_cycles_break_the_structure() {
        let prev = plan(&[("a", &[]), ("b", &["a"])]);
        let next = plan(&[("b", &["a"]), ("c", &["d"]), ("d", &["c"])]);
        let c = compare(&prev, &next, &StructureThresholds::default());
        assert!(c.broken);
        assert_eq!(c.removed, ["a"]);
        assert_eq!(c.added, ["c", "d"]);
        assert_eq!(
            c.dangling_dependencies,
            [DanglingDependency {
                task: "b".into(),
                dependency: "a".into()
            }]
        );
        assert_eq!(
            c.cycle.as_deref(),
            Some(&["c".to_string(), "d".into(), "c".into()][..])
        );
        assert_eq!(c.reasons.len(), 2);
    }

    #[test]
    fn changed_tasks_are_listed_and_small_edits_keep_the_structure() {
        let prev = plan(&[("a", &[]), ("b", &["a"])]);
        let mut next = prev.clone();
        next.task_decomposition.subtasks[1].description = "do b better".into();
        let c = compare(&prev, &next, &StructureThresholds::default());
        assert_eq!(c.changed, ["b"]);
        assert!(!c.broken);
        assert!(c.reasons.is_empty());
    }
}
