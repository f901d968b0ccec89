//! Seed 004: replace a task the judge sent back for replanning by 3–5 new subtasks.
//!
//! - The old task leaves the plan (its subtask, its actions, its place in the execution order);
//!   its record stays in the session as `REPLACED_BY_REPLAN` with `replanningInfo`
//!   (iteration, maxIterations, originalTaskId = the root of the chain, replacedBy, replanReason).
//! - New tasks keep the model's ids unless one collides (with a task of the plan, the old task's
//!   id, another new task, or is empty); then every new task is renamed
//!   `<root>_r<iteration>_<k>` (k from 1, skipping ids already taken) and the model's internal
//!   dependencies follow the rename.
//! - A new task's dependencies: its internal ones (to other new tasks) and ones to existing plan
//!   tasks; a new task with no internal dependency (a first task of the split) also inherits the
//!   old task's dependencies. A dependency on the old task itself is dropped; any other unknown
//!   id is an error so the model can be asked again.
//! - Every task that depended on the old task now depends on all new leaf tasks (those no other
//!   new task depends on).
//! - The execution order gets the new ids, topologically ordered (ties in the model's order),
//!   in place of the old id (appended when the old id was not in the order).
//! - The chain limit counts along the whole chain: a task split off another carries the
//!   iteration of its split; splitting it again makes iteration + 1; when that would reach
//!   `max_iterations` the task is BLOCKED instead (seed 004: `newIteration >= max` → BLOCKED).

use crate::config::TaskReplanningConfig;
use crate::plan::{Plan, ReplanningInfo, Subtask};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChainCheck {
    /// Splitting may go on; the new tasks get `next_iteration`.
    Allowed { next_iteration: u32 },
    /// The chain is at its limit: the task becomes BLOCKED.
    Exhausted { iteration: u32, max_iterations: u32 },
}

/// Whether a task with this `replanningInfo` may be split again. `max_iterations` comes from the
/// current configuration, so raising it lets old chains go further.
pub fn check_chain(info: Option<&ReplanningInfo>, cfg: &TaskReplanningConfig) -> ChainCheck {
    let iteration = info.map_or(0, |i| i.iteration);
    let next_iteration = iteration + 1;
    if next_iteration >= cfg.max_iterations {
        ChainCheck::Exhausted {
            iteration,
            max_iterations: cfg.max_iterations,
        }
    } else {
        ChainCheck::Allowed { next_iteration }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SplitError {
    #[error("task `{0}` is not in the plan")]
    UnknownTask(String),
    #[error(
        "the replanning reply has {got} new subtasks; split the task into at least {min} (and at most {max})"
    )]
    TooFew { got: usize, min: u32, max: u32 },
    #[error(
        "the replanning reply has {got} new subtasks; split the task into at most {max} (and at least {min})"
    )]
    TooMany { got: usize, min: u32, max: u32 },
    #[error(
        "new subtask `{task}` depends on `{missing}`, which is neither a new subtask nor a task of the plan"
    )]
    UnknownDependency { task: String, missing: String },
    #[error("the new subtasks' dependencies form a cycle through `{0}`")]
    Cycle(String),
    #[error(
        "task `{task}` has been replanned {iteration} time(s) along its chain; the limit is {max_iterations} (`replanning.max_iterations`)"
    )]
    ChainLimit {
        task: String,
        iteration: u32,
        max_iterations: u32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitResult {
    /// The plan with the split applied.
    pub plan: Plan,
    pub replaced_task_id: String,
    /// `replanningInfo` of the replaced task (state `REPLACED_BY_REPLAN`).
    pub replaced_info: ReplanningInfo,
    /// The new task ids in execution order.
    pub new_task_ids: Vec<String>,
    /// `replanningInfo` each new task carries (its generation in the chain).
    pub child_info: ReplanningInfo,
    /// Tasks whose dependencies were re-wired from the old task to the new leaves.
    pub rewired: Vec<String>,
    /// True when the model's ids collided and the new tasks were renamed.
    pub renamed: bool,
}

/// Apply the split of `task_id` (whose `replanningInfo` is `info`) into `new_subtasks`.
pub fn apply_split(
    plan: &Plan,
    task_id: &str,
    info: Option<&ReplanningInfo>,
    new_subtasks: Vec<Subtask>,
    reason: &str,
    cfg: &TaskReplanningConfig,
) -> Result<SplitResult, SplitError> {
    let old = plan
        .subtask(task_id)
        .ok_or_else(|| SplitError::UnknownTask(task_id.to_string()))?
        .clone();
    let next_iteration = match check_chain(info, cfg) {
        ChainCheck::Allowed { next_iteration } => next_iteration,
        ChainCheck::Exhausted {
            iteration,
            max_iterations,
        } => {
            return Err(SplitError::ChainLimit {
                task: task_id.to_string(),
                iteration,
                max_iterations,
            });
        }
    };
    let (min, max) = (cfg.min_new_subtasks, cfg.max_new_subtasks);
    let got = new_subtasks.len();
    if got < min as usize {
        return Err(SplitError::TooFew { got, min, max });
    }
    if got > max as usize {
        return Err(SplitError::TooMany { got, min, max });
    }
    let root = info
        .and_then(|i| i.original_task_id.clone())
        .unwrap_or_else(|| task_id.to_string());

    // Ids: keep the model's unless any collides; then rename all.
    let existing: BTreeSet<&str> = plan.subtask_ids().collect();
    let mut seen = BTreeSet::new();
    let collides = new_subtasks.iter().any(|t| {
        t.id.trim().is_empty() || existing.contains(t.id.as_str()) || !seen.insert(t.id.as_str())
    });
    let mut rename: BTreeMap<String, String> = BTreeMap::new();
    let new_ids: Vec<String> = if collides {
        let mut k = 0;
        let mut taken: BTreeSet<String> = existing.iter().map(|s| s.to_string()).collect();
        new_subtasks
            .iter()
            .map(|t| {
                let id = loop {
                    k += 1;
                    let candidate = format!("{root}_r{next_iteration}_{k}");
                    if taken.insert(candidate.clone()) {
                        break candidate;
                    }
                };
                rename.entry(t.id.clone()).or_insert_with(|| id.clone());
                id
            })
            .collect()
    } else {
        new_subtasks.iter().map(|t| t.id.clone()).collect()
    };
    let new_set: BTreeSet<&str> = new_ids.iter().map(String::as_str).collect();

    // Dependencies of the new tasks.
    let mut tasks: Vec<Subtask> = Vec::with_capacity(got);
    for (t, id) in new_subtasks.into_iter().zip(&new_ids) {
        let mut internal = Vec::new();
        let mut external = Vec::new();
        for d in &t.dependencies {
            let mapped = rename.get(d).cloned().unwrap_or_else(|| d.clone());
            if mapped == *id {
                return Err(SplitError::Cycle(id.clone()));
            }
            if new_set.contains(mapped.as_str()) {
                internal.push(mapped);
            } else if d == task_id {
                // Depending on the task being replaced means nothing once it is gone.
            } else if existing.contains(d.as_str()) {
                external.push(d.clone());
            } else {
                return Err(SplitError::UnknownDependency {
                    task: id.clone(),
                    missing: d.clone(),
                });
            }
        }
        let mut deps = Vec::new();
        if internal.is_empty() {
            deps.extend(old.dependencies.iter().cloned());
        }
        for d in external.into_iter().chain(internal) {
            if !deps.contains(&d) {
                deps.push(d);
            }
        }
        tasks.push(Subtask {
            id: id.clone(),
            dependencies: deps,
            ..t
        });
    }
    let ordered = topological(&tasks, &new_set)?;
    let depended_on: BTreeSet<&str> = tasks
        .iter()
        .flat_map(|t| t.dependencies.iter().map(String::as_str))
        .filter(|d| new_set.contains(d))
        .collect();
    let leaves: Vec<String> = ordered
        .iter()
        .filter(|id| !depended_on.contains(id.as_str()))
        .cloned()
        .collect();

    // Build the new plan.
    let mut out = plan.clone();
    let mut rewired = Vec::new();
    let position = out
        .task_decomposition
        .subtasks
        .iter()
        .position(|s| s.id == task_id)
        .expect("checked above");
    out.task_decomposition.subtasks.remove(position);
    for s in &mut out.task_decomposition.subtasks {
        if s.dependencies.iter().any(|d| d == task_id) {
            let mut deps: Vec<String> = Vec::new();
            for d in s.dependencies.drain(..) {
                let replacement = if d == task_id {
                    leaves.clone()
                } else {
                    vec![d]
                };
                for r in replacement {
                    if !deps.contains(&r) {
                        deps.push(r);
                    }
                }
            }
            s.dependencies = deps;
            rewired.push(s.id.clone());
        }
    }
    let by_id: BTreeMap<&str, &Subtask> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let ordered_tasks: Vec<Subtask> = ordered
        .iter()
        .map(|id| by_id[id.as_str()].clone())
        .collect();
    out.task_decomposition
        .subtasks
        .splice(position..position, ordered_tasks);
    let order = &mut out.action_plan.execution_order;
    match order.iter().position(|id| id == task_id) {
        Some(i) => {
            order.splice(i..=i, ordered.iter().cloned());
            // A second mention of the old id (a malformed order) must not survive either.
            order.retain(|id| id != task_id);
        }
        None => order.extend(ordered.iter().cloned()),
    }
    out.action_plan.actions.retain(|a| a.task_id != task_id);

    // The re-wiring must not have closed a loop through the rest of the plan.
    if let Some(id) = first_cycle(&out.task_decomposition.subtasks) {
        return Err(SplitError::Cycle(id));
    }

    let max_iterations = cfg.max_iterations;
    Ok(SplitResult {
        plan: out,
        replaced_task_id: task_id.to_string(),
        replaced_info: ReplanningInfo {
            iteration: next_iteration,
            max_iterations,
            original_task_id: Some(root.clone()),
            replaced_by: ordered.clone(),
            replan_reason: Some(reason.to_string()),
        },
        new_task_ids: ordered,
        child_info: ReplanningInfo {
            iteration: next_iteration,
            max_iterations,
            original_task_id: Some(root),
            replaced_by: Vec::new(),
            replan_reason: None,
        },
        rewired,
        renamed: collides,
    })
}

/// Kahn's algorithm over the new tasks' internal edges; ties keep the model's order.
fn topological(tasks: &[Subtask], new_set: &BTreeSet<&str>) -> Result<Vec<String>, SplitError> {
    let mut remaining: Vec<&Subtask> = tasks.iter().collect();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::with_capacity(tasks.len());
    while !remaining.is_empty() {
        let ready = remaining.iter().position(|t| {
            t.dependencies
                .iter()
                .filter(|d| new_set.contains(d.as_str()))
                .all(|d| done.contains(d.as_str()))
        });
        match ready {
            Some(i) => {
                let t = remaining.remove(i);
                done.insert(t.id.as_str());
                out.push(t.id.clone());
            }
            None => return Err(SplitError::Cycle(remaining[0].id.clone())),
        }
    }
    Ok(out)
}

/// Any task on a dependency cycle of the whole plan.
fn first_cycle(tasks: &[Subtask]) -> Option<String> {
    let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    let mut indegree_free: Vec<&Subtask> = tasks.iter().collect();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    loop {
        let before = indegree_free.len();
        indegree_free.retain(|t| {
            let ready = t
                .dependencies
                .iter()
                .filter(|d| ids.contains(d.as_str()))
                .all(|d| done.contains(d.as_str()));
            if ready {
                done.insert(t.id.as_str());
            }
            !ready
        });
        if indegree_free.is_empty() {
            return None;
        }
        if indegree_free.len() == before {
            return Some(indegree_free[0].id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, deps: &[&str]) -> Subtask {
        Subtask {
            id: id.into(),
            description: format!("do {id}"),
            dependencies: deps.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// t1 → t2 → t3, t4 depends on t2 as well.
    fn plan() -> Plan {
        let mut p = Plan::default();
        p.task_decomposition.subtasks = vec![
            task("t1", &[]),
            task("t2", &["t1"]),
            task("t3", &["t2"]),
            task("t4", &["t1", "t2"]),
        ];
        p.action_plan.execution_order = vec!["t1".into(), "t2".into(), "t3".into(), "t4".into()];
        p.action_plan.actions = vec![crate::plan::PlannedAction {
            task_id: "t2".into(),
            ..Default::default()
        }];
        p
    }

    fn cfg() -> TaskReplanningConfig {
        TaskReplanningConfig::default()
    }

    #[test]
    fn split_rewires_dependents_to_the_new_leaves() {
        // a → c, b → c? no: a and b are first tasks, c depends on a; leaves are b and c.
        let new = vec![task("a", &[]), task("c", &["a"]), task("b", &[])];
        let r = apply_split(&plan(), "t2", None, new, "too big", &cfg()).unwrap();
        assert_eq!(r.new_task_ids, vec!["a", "c", "b"]);
        assert!(!r.renamed);
        let p = &r.plan;
        assert!(p.subtask("t2").is_none());
        assert_eq!(p.subtask("a").unwrap().dependencies, vec!["t1"]);
        assert_eq!(p.subtask("b").unwrap().dependencies, vec!["t1"]);
        assert_eq!(p.subtask("c").unwrap().dependencies, vec!["a"]);
        assert_eq!(p.subtask("t3").unwrap().dependencies, vec!["c", "b"]);
        assert_eq!(p.subtask("t4").unwrap().dependencies, vec!["t1", "c", "b"]);
        assert_eq!(r.rewired, vec!["t3", "t4"]);
        assert_eq!(
            p.action_plan.execution_order,
            vec!["t1", "a", "c", "b", "t3", "t4"]
        );
        assert!(
            p.action_plan.actions.is_empty(),
            "the old task's actions go"
        );
        let ids: Vec<&str> = p.subtask_ids().collect();
        assert_eq!(ids, vec!["t1", "a", "c", "b", "t3", "t4"]);
        assert_eq!(
            r.replaced_info,
            ReplanningInfo {
                iteration: 1,
                max_iterations: 3,
                original_task_id: Some("t2".into()),
                replaced_by: vec!["a".into(), "c".into(), "b".into()],
                replan_reason: Some("too big".into()),
            }
        );
        assert_eq!(r.child_info.iteration, 1);
        assert_eq!(r.child_info.original_task_id.as_deref(), Some("t2"));
    }

    #[test]
    fn colliding_ids_are_renamed_with_internal_dependencies_followed() {
        let new = vec![task("t1", &[]), task("x", &["t1"]), task("x", &[])];
        let r = apply_split(&plan(), "t2", None, new, "r", &cfg()).unwrap();
        assert!(r.renamed);
        assert_eq!(r.new_task_ids, vec!["t2_r1_1", "t2_r1_2", "t2_r1_3"]);
        let p = &r.plan;
        // The model's "t1" was its own first task, not the plan's t1.
        assert_eq!(p.subtask("t2_r1_2").unwrap().dependencies, vec!["t2_r1_1"]);
        assert_eq!(p.subtask("t2_r1_1").unwrap().dependencies, vec!["t1"]);
        assert_eq!(
            p.subtask("t3").unwrap().dependencies,
            vec!["t2_r1_2", "t2_r1_3"]
        );
    }

    #[test]
    fn chain_limit_counts_across_generations() {
        let c = cfg();
        let first = apply_split(
            &plan(),
            "t2",
            None,
            vec![task("a", &[]), task("b", &["a"]), task("c", &["b"])],
            "r",
            &c,
        )
        .unwrap();
        assert_eq!(first.child_info.iteration, 1);
        // A child of the split is split again: generation 2, same root, ids from the root.
        let second = apply_split(
            &first.plan,
            "b",
            Some(&first.child_info),
            vec![task("a", &[]), task("b2", &[]), task("b3", &[])],
            "r",
            &c,
        )
        .unwrap();
        assert_eq!(second.replaced_info.iteration, 2);
        assert_eq!(second.replaced_info.original_task_id.as_deref(), Some("t2"));
        assert_eq!(second.new_task_ids, vec!["t2_r2_1", "t2_r2_2", "t2_r2_3"]);
        assert_eq!(
            second.plan.subtask("c").unwrap().dependencies,
            vec!["t2_r2_1", "t2_r2_2", "t2_r2_3"]
        );
        // A grandchild would make iteration 3 = maxIterations: BLOCKED.
        assert_eq!(
            check_chain(Some(&second.child_info), &c),
            ChainCheck::Exhausted {
                iteration: 2,
                max_iterations: 3
            }
        );
        let err = apply_split(
            &second.plan,
            "t2_r2_1",
            Some(&second.child_info),
            vec![task("p", &[]), task("q", &[]), task("r", &[])],
            "r",
            &c,
        )
        .unwrap_err();
        assert!(
            matches!(err, SplitError::ChainLimit { iteration: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn two_or_six_new_tasks_are_rejected() {
        let two = vec![task("a", &[]), task("b", &[])];
        let err = apply_split(&plan(), "t2", None, two, "r", &cfg()).unwrap_err();
        assert_eq!(
            err,
            SplitError::TooFew {
                got: 2,
                min: 3,
                max: 5
            }
        );
        assert!(err.to_string().contains("at least 3"), "{err}");
        let six: Vec<Subtask> = (1..=6).map(|i| task(&format!("n{i}"), &[])).collect();
        let err = apply_split(&plan(), "t2", None, six, "r", &cfg()).unwrap_err();
        assert_eq!(
            err,
            SplitError::TooMany {
                got: 6,
                min: 3,
                max: 5
            }
        );
        let five: Vec<Subtask> = (1..=5).map(|i| task(&format!("n{i}"), &[])).collect();
        assert!(apply_split(&plan(), "t2", None, five, "r", &cfg()).is_ok());
    }

    #[test]
    fn unknown_dependencies_and_cycles_are_errors() {
        let unknown = vec![task("a", &["zzz"]), task("b", &[]), task("c", &[])];
        assert_eq!(
            apply_split(&plan(), "t2", None, unknown, "r", &cfg()).unwrap_err(),
            SplitError::UnknownDependency {
                task: "a".into(),
                missing: "zzz".into()
            }
        );
        let cyclic = vec![task("a", &["c"]), task("b", &["a"]), task("c", &["b"])];
        assert!(matches!(
            apply_split(&plan(), "t2", None, cyclic, "r", &cfg()).unwrap_err(),
            SplitError::Cycle(_)
        ));
        // Depending on a downstream task of the old one closes a loop after re-wiring.
        let loop_back = vec![task("a", &["t3"]), task("b", &[]), task("c", &[])];
        assert!(matches!(
            apply_split(&plan(), "t2", None, loop_back, "r", &cfg()).unwrap_err(),
            SplitError::Cycle(_)
        ));
        assert_eq!(
            apply_split(&plan(), "nope", None, vec![], "r", &cfg()).unwrap_err(),
            SplitError::UnknownTask("nope".into())
        );
    }

    #[test]
    fn dependency_on_the_old_task_is_dropped_and_external_ones_kept() {
        let new = vec![
            task("a", &["t2"]),
            task("b", &["a", "t1"]),
            task("c", &["b"]),
        ];
        let r = apply_split(&plan(), "t2", None, new, "r", &cfg()).unwrap();
        assert_eq!(r.plan.subtask("a").unwrap().dependencies, vec!["t1"]);
        assert_eq!(r.plan.subtask("b").unwrap().dependencies, vec!["t1", "a"]);
    }
}
