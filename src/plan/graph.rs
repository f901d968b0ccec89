//! The dependency graph over a plan's subtasks: execution order, cycles, dependents, ready tasks.
//!
//! Edges point from a task to the tasks it depends on. Unknown dependencies and self-dependencies
//! are left out of the graph (validation reports them) so that a single bad id cannot hide the
//! real shape of the plan.

use super::Plan;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::fmt;

/// A dependency cycle: `path[0]` depends on `path[1]`, ..., and the last element repeats the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    pub path: Vec<String>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path.join(" → "))
    }
}

/// The subtasks of one plan as a graph. Duplicate ids: the first subtask with an id wins.
#[derive(Debug, Clone)]
pub struct TaskGraph {
    ids: Vec<String>,
    index: HashMap<String, usize>,
    /// `deps[i]`: the known tasks `i` depends on, in the order the plan lists them, deduplicated.
    deps: Vec<Vec<usize>>,
    /// `dependents[i]`: the tasks that depend on `i`, in node order.
    dependents: Vec<Vec<usize>>,
    /// Tie-break key: position in `execution_order` (unlisted tasks last), then id.
    rank: Vec<(usize, String)>,
}

impl TaskGraph {
    pub fn new(plan: &Plan) -> Self {
        let mut ids = Vec::new();
        let mut index = HashMap::new();
        for s in &plan.task_decomposition.subtasks {
            if !index.contains_key(&s.id) {
                index.insert(s.id.clone(), ids.len());
                ids.push(s.id.clone());
            }
        }
        let mut deps = vec![Vec::new(); ids.len()];
        let mut seen = vec![false; ids.len()];
        for s in &plan.task_decomposition.subtasks {
            let i = index[&s.id];
            if seen[i] {
                continue;
            }
            seen[i] = true;
            for d in &s.dependencies {
                match index.get(d) {
                    Some(&j) if j != i && !deps[i].contains(&j) => deps[i].push(j),
                    _ => {}
                }
            }
        }
        let mut dependents = vec![Vec::new(); ids.len()];
        for (i, ds) in deps.iter().enumerate() {
            for &j in ds {
                dependents[j].push(i);
            }
        }
        let mut position = HashMap::new();
        for (p, id) in plan.action_plan.execution_order.iter().enumerate() {
            position.entry(id.as_str()).or_insert(p);
        }
        let rank = ids
            .iter()
            .map(|id| {
                (
                    position.get(id.as_str()).copied().unwrap_or(usize::MAX),
                    id.clone(),
                )
            })
            .collect();
        TaskGraph {
            ids,
            index,
            deps,
            dependents,
            rank,
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// The known tasks `id` depends on directly.
    pub fn dependencies(&self, id: &str) -> Vec<&str> {
        self.index
            .get(id)
            .map(|&i| self.deps[i].iter().map(|&j| self.ids[j].as_str()).collect())
            .unwrap_or_default()
    }

    /// The tasks that depend on `id` directly, in plan order.
    pub fn dependents(&self, id: &str) -> Vec<&str> {
        self.index
            .get(id)
            .map(|&i| {
                self.dependents[i]
                    .iter()
                    .map(|&j| self.ids[j].as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every task that depends on `id` directly or through other tasks, in plan order.
    pub fn transitive_dependents(&self, id: &str) -> Vec<&str> {
        let Some(&start) = self.index.get(id) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.ids.len()];
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            for &j in &self.dependents[i] {
                if !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        seen[start] = false;
        (0..self.ids.len())
            .filter(|&i| seen[i])
            .map(|i| self.ids[i].as_str())
            .collect()
    }

    /// Tasks not in `done` whose known dependencies are all in `done`, in execution priority.
    pub fn ready(&self, done: &BTreeSet<String>) -> Vec<&str> {
        let mut ready: Vec<usize> = (0..self.ids.len())
            .filter(|&i| !done.contains(&self.ids[i]))
            .filter(|&i| self.deps[i].iter().all(|&j| done.contains(&self.ids[j])))
            .collect();
        ready.sort_by(|&a, &b| self.rank[a].cmp(&self.rank[b]));
        ready.into_iter().map(|i| self.ids[i].as_str()).collect()
    }

    /// Every task once, each after all of its dependencies. Among tasks that could go next, the
    /// one earlier in `execution_order` goes first, then the smaller id.
    pub fn topological_order(&self) -> Result<Vec<&str>, Cycle> {
        let n = self.ids.len();
        let mut missing: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        let mut heap: BinaryHeap<Reverse<(&(usize, String), usize)>> = (0..n)
            .filter(|&i| missing[i] == 0)
            .map(|i| Reverse((&self.rank[i], i)))
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse((_, i))) = heap.pop() {
            order.push(self.ids[i].as_str());
            for &j in &self.dependents[i] {
                missing[j] -= 1;
                if missing[j] == 0 {
                    heap.push(Reverse((&self.rank[j], j)));
                }
            }
        }
        if order.len() == n {
            Ok(order)
        } else {
            Err(self
                .find_cycle()
                .expect("Kahn's algorithm stopped early, so a cycle exists"))
        }
    }

    /// A dependency cycle if there is one (iterative DFS; the first found in plan order).
    pub fn find_cycle(&self) -> Option<Cycle> {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let n = self.ids.len();
        let mut colour = vec![WHITE; n];
        for root in 0..n {
            if colour[root] != WHITE {
                continue;
            }
            // Stack of (node, next edge index); the grey nodes on it form the current path.
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            colour[root] = GREY;
            while let Some(top) = stack.last_mut() {
                let (node, edge) = *top;
                if edge < self.deps[node].len() {
                    top.1 += 1;
                    let next = self.deps[node][edge];
                    match colour[next] {
                        WHITE => {
                            colour[next] = GREY;
                            stack.push((next, 0));
                        }
                        GREY => {
                            let from = stack
                                .iter()
                                .position(|&(n, _)| n == next)
                                .expect("a grey node is on the stack");
                            let mut path: Vec<String> = stack[from..]
                                .iter()
                                .map(|&(n, _)| self.ids[n].clone())
                                .collect();
                            path.push(self.ids[next].clone());
                            return Some(Cycle { path });
                        }
                        _ => {}
                    }
                } else {
                    colour[node] = BLACK;
                    stack.pop();
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Subtask;
    use crate::plan::plan_of as plan;
    use proptest::prelude::*;

    #[test]
    fn order_follows_dependencies_then_execution_order_then_id() {
        let p = plan(
            &[
                ("d", &["a"]),
                ("c", &[]),
                ("b", &[]),
                ("a", &[]),
                ("e", &[]),
            ],
            &["c", "a", "d"],
        );
        let g = TaskGraph::new(&p);
        // c, a listed first; d as soon as a is done; then unlisted b, e by id.
        assert_eq!(g.topological_order().unwrap(), ["c", "a", "d", "b", "e"]);
    }

    #[test]
    fn cycle_is_reported_with_its_path() {
        let p = plan(
            &[
                ("task_1", &[]),
                ("task_2", &["task_1", "task_3"]),
                ("task_3", &["task_2"]),
            ],
            &[],
        );
        let g = TaskGraph::new(&p);
        let cycle = g.topological_order().unwrap_err();
        assert_eq!(cycle.to_string(), "task_2 → task_3 → task_2");
    }

    #[test]
    fn dependents_and_ready() {
        let p = plan(
            &[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &["a"])],
            &["a", "d", "b", "c"],
        );
        let g = TaskGraph::new(&p);
        assert_eq!(g.dependents("a"), ["b", "d"]);
        assert_eq!(g.transitive_dependents("a"), ["b", "c", "d"]);
        assert_eq!(g.ready(&BTreeSet::new()), ["a"]);
        let done: BTreeSet<String> = ["a".to_string()].into();
        assert_eq!(g.ready(&done), ["d", "b"]);
    }

    /// A random DAG: node `i` may depend only on nodes listed before it; ids are shuffled names.
    fn dag() -> impl Strategy<Value = (Vec<String>, Vec<Vec<usize>>)> {
        (1usize..25).prop_flat_map(|n| {
            let deps =
                proptest::collection::vec(proptest::collection::vec(any::<usize>(), 0..4), n);
            let names = Just((0..n).map(|i| format!("t{}", (i * 7919) % 1000)).collect());
            (names, deps).prop_map(|(names, raw): (Vec<String>, Vec<Vec<usize>>)| {
                let deps = raw
                    .into_iter()
                    .enumerate()
                    .map(|(i, ds)| {
                        if i == 0 {
                            vec![]
                        } else {
                            ds.into_iter().map(|d| d % i).collect()
                        }
                    })
                    .collect();
                (names, deps)
            })
        })
    }

    fn build(names: &[String], deps: &[Vec<usize>]) -> Plan {
        let mut p = Plan::default();
        // Listed in reverse so the graph cannot rely on list order for correctness.
        for i in (0..names.len()).rev() {
            p.task_decomposition.subtasks.push(Subtask {
                id: names[i].clone(),
                description: String::new(),
                dependencies: deps[i].iter().map(|&d| names[d].clone()).collect(),
                ..Default::default()
            });
        }
        p
    }

    proptest! {
        #[test]
        fn topological_order_respects_every_edge((names, deps) in dag()) {
            let p = build(&names, &deps);
            let g = TaskGraph::new(&p);
            let order = g.topological_order().expect("a DAG has an order");
            prop_assert_eq!(order.len(), names.len());
            let pos: HashMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            prop_assert_eq!(pos.len(), names.len());
            for (i, ds) in deps.iter().enumerate() {
                for &d in ds {
                    prop_assert!(pos[names[d].as_str()] < pos[names[i].as_str()]);
                }
            }
        }

        #[test]
        fn a_back_edge_always_yields_a_real_cycle((names, deps) in dag(), pick in any::<usize>()) {
            let edges: Vec<(usize, usize)> = deps.iter().enumerate()
                .flat_map(|(i, ds)| ds.iter().map(move |&d| (i, d))).collect();
            prop_assume!(!edges.is_empty());
            let (from, to) = edges[pick % edges.len()];
            let mut deps = deps.clone();
            deps[to].push(from); // `to` now depends on `from`, which depends on `to`.
            let p = build(&names, &deps);
            let g = TaskGraph::new(&p);
            let cycle = g.topological_order().expect_err("a back edge makes a cycle");
            prop_assert!(cycle.path.len() >= 3);
            prop_assert_eq!(cycle.path.first(), cycle.path.last());
            for pair in cycle.path.windows(2) {
                prop_assert!(g.dependencies(&pair[0]).contains(&pair[1].as_str()),
                    "{} → {} is not an edge", pair[0], pair[1]);
            }
        }

        #[test]
        fn validate_never_panics(
            ids in proptest::collection::vec("[a-c]{0,2}", 0..8),
            deps in proptest::collection::vec(proptest::collection::vec("[a-c]{0,2}", 0..3), 0..8),
            order in proptest::collection::vec("[a-c]{0,2}", 0..10),
            actions in proptest::collection::vec(("[a-c]{0,2}", proptest::option::of("[xy]")), 0..5),
            max in 0usize..6,
        ) {
            let mut p = Plan::default();
            for (i, id) in ids.iter().enumerate() {
                p.task_decomposition.subtasks.push(Subtask {
                    id: id.clone(),
                    description: String::new(),
                    dependencies: deps.get(i).cloned().unwrap_or_default(),
                    required_tools: vec!["x".into()],
                    ..Default::default()
                });
            }
            p.action_plan.execution_order = order;
            p.action_plan.actions = actions.into_iter().map(|(t, tool)| crate::plan::PlannedAction {
                task_id: t, tool, ..Default::default()
            }).collect();
            let rules = crate::plan::validate::ValidationRules {
                max_subtasks: max,
                known_tools: Some(["x".to_string()].into()),
            };
            let _ = crate::plan::validate::validate(&p, &rules);
        }
    }
}
