//! Plan validation (SPEC F5): every problem is collected, each naming the ids involved and the fix.

use super::Plan;
use super::graph::{Cycle, TaskGraph};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationRules {
    /// `planning.max_subtasks` (seed 001 default 100).
    pub max_subtasks: usize,
    /// The tools the run can call; None skips the tool check (e.g. validating a file offline).
    pub known_tools: Option<BTreeSet<String>>,
}

impl Default for ValidationRules {
    fn default() -> Self {
        ValidationRules {
            max_subtasks: 100,
            known_tools: None,
        }
    }
}

/// Where a tool was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolUse {
    /// `task_decomposition.subtasks[].required_tools`
    RequiredBySubtask,
    /// `action_plan.actions[].tool`
    Action,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanProblem {
    EmptyPlan,
    TooManySubtasks {
        count: usize,
        max: usize,
    },
    EmptyId {
        position: usize,
    },
    DuplicateSubtask {
        id: String,
    },
    UnknownDependency {
        task: String,
        dependency: String,
    },
    SelfDependency {
        task: String,
    },
    Cycle(Cycle),
    MissingFromExecutionOrder {
        task: String,
    },
    UnknownInExecutionOrder {
        id: String,
    },
    DuplicateInExecutionOrder {
        id: String,
    },
    OrderedBeforeDependency {
        task: String,
        dependency: String,
    },
    ActionForUnknownTask {
        task: String,
    },
    ToolNotAvailable {
        task: String,
        tool: String,
        used_by: ToolUse,
    },
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PlanProblem::*;
        match self {
            EmptyPlan => write!(
                f,
                "the plan has no subtasks: add at least one subtask to task_decomposition.subtasks"
            ),
            TooManySubtasks { count, max } => write!(
                f,
                "the plan has {count} subtasks, more than max_subtasks = {max}: merge subtasks or raise planning.max_subtasks"
            ),
            EmptyId { position } => write!(
                f,
                "subtask #{} has an empty id: give it a unique id such as \"task_{}\"",
                position + 1,
                position + 1
            ),
            DuplicateSubtask { id } => write!(
                f,
                "subtask id \"{id}\" is used more than once: give each subtask a unique id"
            ),
            UnknownDependency { task, dependency } => write!(
                f,
                "subtask \"{task}\" depends on \"{dependency}\", which is not a subtask: remove the dependency or add the subtask"
            ),
            SelfDependency { task } => write!(
                f,
                "subtask \"{task}\" depends on itself: remove \"{task}\" from its dependencies"
            ),
            Cycle(c) => write!(
                f,
                "dependency cycle {c}: remove one of these dependencies so the tasks can run in order"
            ),
            MissingFromExecutionOrder { task } => write!(
                f,
                "subtask \"{task}\" is missing from action_plan.execution_order: add it after its dependencies"
            ),
            UnknownInExecutionOrder { id } => write!(
                f,
                "action_plan.execution_order names \"{id}\", which is not a subtask: remove it or add the subtask"
            ),
            DuplicateInExecutionOrder { id } => write!(
                f,
                "action_plan.execution_order lists \"{id}\" more than once: keep one occurrence"
            ),
            OrderedBeforeDependency { task, dependency } => write!(
                f,
                "action_plan.execution_order runs \"{task}\" before its dependency \"{dependency}\": move \"{dependency}\" earlier"
            ),
            ActionForUnknownTask { task } => write!(
                f,
                "an action in action_plan.actions is for \"{task}\", which is not a subtask: fix its task_id or remove the action"
            ),
            ToolNotAvailable {
                task,
                tool,
                used_by,
            } => {
                let place = match used_by {
                    ToolUse::RequiredBySubtask => "requires",
                    ToolUse::Action => "has an action calling",
                };
                write!(
                    f,
                    "subtask \"{task}\" {place} tool \"{tool}\", which is not available: use one of the available tools or configure the tool"
                )
            }
        }
    }
}

/// Check a plan. All problems are returned, in a stable order, not just the first.
pub fn validate(plan: &Plan, rules: &ValidationRules) -> Result<(), Vec<PlanProblem>> {
    let mut problems = Vec::new();
    let subtasks = &plan.task_decomposition.subtasks;
    if subtasks.is_empty() {
        problems.push(PlanProblem::EmptyPlan);
    }
    if subtasks.len() > rules.max_subtasks {
        problems.push(PlanProblem::TooManySubtasks {
            count: subtasks.len(),
            max: rules.max_subtasks,
        });
    }

    let mut ids: HashSet<&str> = HashSet::new();
    let mut reported_duplicates: HashSet<&str> = HashSet::new();
    for (position, s) in subtasks.iter().enumerate() {
        if s.id.trim().is_empty() {
            problems.push(PlanProblem::EmptyId { position });
        }
        if !ids.insert(&s.id) && reported_duplicates.insert(&s.id) {
            problems.push(PlanProblem::DuplicateSubtask { id: s.id.clone() });
        }
    }

    for s in subtasks {
        for d in &s.dependencies {
            if *d == s.id {
                problems.push(PlanProblem::SelfDependency { task: s.id.clone() });
            } else if !ids.contains(d.as_str()) {
                problems.push(PlanProblem::UnknownDependency {
                    task: s.id.clone(),
                    dependency: d.clone(),
                });
            }
        }
    }

    let graph = TaskGraph::new(plan);
    let cycle = graph.find_cycle();
    if let Some(c) = &cycle {
        problems.push(PlanProblem::Cycle(c.clone()));
    }

    let order = &plan.action_plan.execution_order;
    let mut position: HashMap<&str, usize> = HashMap::new();
    for (p, id) in order.iter().enumerate() {
        if !ids.contains(id.as_str()) {
            problems.push(PlanProblem::UnknownInExecutionOrder { id: id.clone() });
        } else if position.contains_key(id.as_str()) {
            problems.push(PlanProblem::DuplicateInExecutionOrder { id: id.clone() });
        } else {
            position.insert(id, p);
        }
    }
    let mut listed: HashSet<&str> = HashSet::new();
    for s in subtasks {
        if !listed.insert(&s.id) {
            continue;
        }
        match position.get(s.id.as_str()) {
            None => problems.push(PlanProblem::MissingFromExecutionOrder { task: s.id.clone() }),
            // Ordering inside a cycle is meaningless; the cycle is reported instead.
            Some(&p) if cycle.is_none() => {
                for d in graph.dependencies(&s.id) {
                    if position.get(d).is_some_and(|&dp| dp > p) {
                        problems.push(PlanProblem::OrderedBeforeDependency {
                            task: s.id.clone(),
                            dependency: d.to_string(),
                        });
                    }
                }
            }
            Some(_) => {}
        }
    }

    let mut unknown_action_tasks: BTreeSet<&str> = BTreeSet::new();
    for a in &plan.action_plan.actions {
        if !ids.contains(a.task_id.as_str()) {
            unknown_action_tasks.insert(&a.task_id);
        }
    }
    problems.extend(
        unknown_action_tasks
            .into_iter()
            .map(|t| PlanProblem::ActionForUnknownTask {
                task: t.to_string(),
            }),
    );

    if let Some(known) = &rules.known_tools {
        let mut seen: HashSet<(&str, &str, bool)> = HashSet::new();
        for s in subtasks {
            for tool in &s.required_tools {
                if !known.contains(tool) && seen.insert((&s.id, tool, false)) {
                    problems.push(PlanProblem::ToolNotAvailable {
                        task: s.id.clone(),
                        tool: tool.clone(),
                        used_by: ToolUse::RequiredBySubtask,
                    });
                }
            }
        }
        for a in &plan.action_plan.actions {
            if let Some(tool) = &a.tool {
                if !known.contains(tool) && seen.insert((&a.task_id, tool, true)) {
                    problems.push(PlanProblem::ToolNotAvailable {
                        task: a.task_id.clone(),
                        tool: tool.clone(),
                        used_by: ToolUse::Action,
                    });
                }
            }
        }
    }

    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ActionPlan, PlannedAction, Subtask, TaskDecomposition};

    fn subtask(id: &str, deps: &[&str], tools: &[&str]) -> Subtask {
        Subtask {
            id: id.into(),
            description: format!("do {id}"),
            dependencies: deps.iter().map(|s| s.to_string()).collect(),
            required_tools: tools.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn plan(subtasks: Vec<Subtask>, order: &[&str], actions: &[(&str, &str)]) -> Plan {
        Plan {
            task_decomposition: TaskDecomposition {
                reasoning: String::new(),
                subtasks,
            },
            action_plan: ActionPlan {
                execution_order: order.iter().map(|s| s.to_string()).collect(),
                actions: actions
                    .iter()
                    .map(|(t, tool)| PlannedAction {
                        task_id: t.to_string(),
                        tool: Some(tool.to_string()),
                        ..Default::default()
                    })
                    .collect(),
            },
            ..Default::default()
        }
    }

    fn messages(p: &Plan, rules: &ValidationRules) -> Vec<String> {
        validate(p, rules)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_sound_plan_passes() {
        let p = plan(
            vec![
                subtask("task_1", &[], &["read"]),
                subtask("task_2", &["task_1"], &[]),
            ],
            &["task_1", "task_2"],
            &[("task_1", "read"), ("task_2", "write")],
        );
        let rules = ValidationRules {
            max_subtasks: 10,
            known_tools: Some(["read".to_string(), "write".to_string()].into()),
        };
        assert_eq!(validate(&p, &rules), Ok(()));
    }

    #[test]
    fn empty_plan_is_rejected() {
        assert_eq!(
            validate(&Plan::default(), &ValidationRules::default()),
            Err(vec![PlanProblem::EmptyPlan])
        );
    }

    #[test]
    fn each_problem_names_the_ids_and_the_fix() {
        let p = plan(
            vec![
                subtask("task_1", &["task_9"], &["teleport"]),
                subtask("task_1", &[], &[]),
                subtask("task_2", &["task_2", "task_3"], &[]),
                subtask("task_3", &["task_2"], &[]),
                subtask("task_4", &[], &[]),
            ],
            &["task_1", "task_2", "ghost", "task_2", "task_3"],
            &[("nobody", "read"), ("task_1", "fly")],
        );
        let rules = ValidationRules {
            max_subtasks: 3,
            known_tools: Some(["read".to_string()].into()),
        };
        let m = messages(&p, &rules);
        let expected = [
            "the plan has 5 subtasks, more than max_subtasks = 3: merge subtasks or raise planning.max_subtasks",
            "subtask id \"task_1\" is used more than once: give each subtask a unique id",
            "subtask \"task_1\" depends on \"task_9\", which is not a subtask: remove the dependency or add the subtask",
            "subtask \"task_2\" depends on itself: remove \"task_2\" from its dependencies",
            "dependency cycle task_2 → task_3 → task_2: remove one of these dependencies so the tasks can run in order",
            "action_plan.execution_order names \"ghost\", which is not a subtask: remove it or add the subtask",
            "action_plan.execution_order lists \"task_2\" more than once: keep one occurrence",
            "subtask \"task_4\" is missing from action_plan.execution_order: add it after its dependencies",
            "an action in action_plan.actions is for \"nobody\", which is not a subtask: fix its task_id or remove the action",
            "subtask \"task_1\" requires tool \"teleport\", which is not available: use one of the available tools or configure the tool",
            "subtask \"task_1\" has an action calling tool \"fly\", which is not available: use one of the available tools or configure the tool",
        ];
        assert_eq!(m, expected);
    }

    #[test]
    fn ordering_a_task_before_its_dependency_is_reported() {
        let p = plan(
            vec![subtask("a", &[], &[]), subtask("b", &["a"], &[])],
            &["b", "a"],
            &[],
        );
        assert_eq!(
            validate(&p, &ValidationRules::default()),
            Err(vec![PlanProblem::OrderedBeforeDependency {
                task: "b".into(),
                dependency: "a".into()
            }])
        );
    }

    #[test]
    fn tools_are_not_checked_without_a_tool_list() {
        let p = plan(
            vec![subtask("a", &[], &["anything"])],
            &["a"],
            &[("a", "x")],
        );
        assert_eq!(validate(&p, &ValidationRules::default()), Ok(()));
    }
}
