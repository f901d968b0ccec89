//! The plan: the seeds' data model, its validation and its dependency graph.

pub(crate) mod confidence;
pub mod criteria;
pub(crate) mod file;
pub mod graph;
pub mod hash;
pub(crate) mod model;
pub mod scope;
pub mod shape;
pub(crate) mod validate;

pub use model::*;

/// A plan of these subtasks (id, dependencies) in this execution order, for unit tests.
#[cfg(test)]
pub(crate) fn plan_of(tasks: &[(&str, &[&str])], order: &[&str]) -> Plan {
    Plan {
        task_decomposition: TaskDecomposition {
            subtasks: tasks
                .iter()
                .map(|(id, deps)| Subtask {
                    id: id.to_string(),
                    description: format!("do {id}"),
                    dependencies: deps.iter().map(|d| d.to_string()).collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
        action_plan: ActionPlan {
            execution_order: order.iter().map(|s| s.to_string()).collect(),
            actions: vec![],
        },
        ..Default::default()
    }
}
