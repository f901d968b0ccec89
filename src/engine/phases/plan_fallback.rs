//! A weak model still makes progress: when the plan is still invalid after the re-ask, keep what
//! is usable instead of stopping. Invalid actions are dropped, valid subtasks kept; when nothing
//! valid remains, a one-subtask plan ("do what the issue asks") is executed with the tools, as
//! seed 002's per-task fallback does. Only when even that fails is a person asked.

use std::collections::HashSet;

use crate::engine::batch::Batch;
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::phases::planning::{commit_plan, invalid_plan, validation_problems};
use crate::history::entry::{DraftSource, EntryBody};
use crate::plan::{ActionPlan, GoalUnderstanding, Plan, PlannedAction, Subtask, TaskDecomposition};

/// Id of the single subtask of the last-resort plan.
pub const WHOLE_ISSUE_TASK: &str = "t1";

/// The plan is still invalid after a re-ask: commit the usable part of the draft, or a
/// one-subtask plan, and ask a person only when neither validates.
pub fn salvage(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let w = batch.state.planning.clone().unwrap_or_default();
    let goal = usable_goal(w.goal.clone(), &request_title(batch));
    let known: HashSet<String> = cx.deps.tools.names().map(str::to_string).collect();
    let max_subtasks = cx.cfg().planning.max_subtasks as usize;
    let kept = keep_valid(
        goal.clone(),
        w.decomposition.clone().unwrap_or_default(),
        w.actions.clone().unwrap_or_default(),
        &known,
        max_subtasks,
    );
    let candidates = [kept, Some(whole_issue_plan(goal))];
    let Some((plan, reason)) = candidates
        .into_iter()
        .flatten()
        .find(|(plan, _)| validation_problems(cx, plan).is_empty())
    else {
        return Ok(invalid_plan(batch));
    };
    tracing::warn!(
        subtasks = plan.task_decomposition.subtasks.len(),
        "{reason}; the run goes on with it"
    );
    batch.push(EntryBody::Draft {
        goal_understanding: Some(plan.goal_understanding),
        task_decomposition: Some(plan.task_decomposition),
        action_plan: Some(plan.action_plan),
        self_check: serde_json::Value::Null,
        source: DraftSource::Fallback,
        problems: vec![],
    });
    commit_plan(batch)
}

fn request_title(batch: &Batch) -> String {
    batch
        .state
        .runs
        .iter()
        .rev()
        .find_map(|r| r.request.title.clone())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "the request".to_string())
}

fn usable_goal(goal: Option<GoalUnderstanding>, title: &str) -> GoalUnderstanding {
    match goal {
        Some(g) if !g.main_objective.trim().is_empty() => g,
        other => GoalUnderstanding {
            main_objective: title.trim().chars().take(300).collect(),
            ..other.unwrap_or_default()
        },
    }
}

/// The valid part of a draft: subtasks with an id and a description (first of each id, at most
/// `max_subtasks`), their known tools and dependencies, actions of kept subtasks using known
/// tools. Dependencies are dropped when they would leave the order unsatisfiable.
fn keep_valid(
    goal: GoalUnderstanding,
    decomposition: TaskDecomposition,
    draft: ActionPlan,
    known: &HashSet<String>,
    max_subtasks: usize,
) -> Option<(Plan, &'static str)> {
    let mut seen = HashSet::new();
    let mut subtasks: Vec<Subtask> = decomposition
        .subtasks
        .into_iter()
        .filter(|s| !s.id.trim().is_empty() && !s.description.trim().is_empty())
        .filter(|s| seen.insert(s.id.clone()))
        .take(max_subtasks)
        .collect();
    if subtasks.is_empty() {
        return None;
    }
    let ids: HashSet<String> = subtasks.iter().map(|s| s.id.clone()).collect();
    for s in &mut subtasks {
        let own = s.id.clone();
        s.dependencies.retain(|d| *d != own && ids.contains(d));
        s.required_tools.retain(|t| known.contains(t));
    }
    let kept_actions: Vec<PlannedAction> = draft
        .actions
        .iter()
        .filter(|a| ids.contains(&a.task_id))
        .filter(|a| a.tool.as_ref().is_none_or(|t| known.contains(t)))
        .cloned()
        .collect();
    let preferred = preferred_order(&draft.execution_order, &kept_actions, &subtasks);
    let order = dependency_order(&subtasks, &preferred);
    let order = match order {
        Some(order) => order,
        None => {
            // A cycle: the dependencies cannot be trusted; run in the listed order.
            subtasks.iter_mut().for_each(|s| s.dependencies.clear());
            subtasks.iter().map(|s| s.id.clone()).collect()
        }
    };
    let plan = Plan {
        goal_understanding: goal,
        task_decomposition: TaskDecomposition {
            reasoning: decomposition.reasoning,
            subtasks,
        },
        action_plan: ActionPlan {
            execution_order: order,
            actions: kept_actions,
        },
    };
    Some((
        plan,
        "the plan was still invalid after a re-ask; its valid subtasks and actions are kept",
    ))
}

/// The draft's own order, then the order the actions mention subtasks in, then the listed order.
fn preferred_order(
    draft_order: &[String],
    actions: &[PlannedAction],
    subtasks: &[Subtask],
) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mentioned = actions.iter().map(|a| &a.task_id);
    for id in draft_order
        .iter()
        .chain(mentioned)
        .chain(subtasks.iter().map(|s| &s.id))
    {
        if subtasks.iter().any(|s| s.id == *id) && !order.contains(id) {
            order.push(id.clone());
        }
    }
    order
}

/// Every subtask after its dependencies, otherwise in `preferred` order; `None` on a cycle.
fn dependency_order(subtasks: &[Subtask], preferred: &[String]) -> Option<Vec<String>> {
    let mut placed: Vec<String> = Vec::new();
    while placed.len() < subtasks.len() {
        let next = preferred.iter().find(|id| {
            !placed.contains(id)
                && subtasks
                    .iter()
                    .find(|s| s.id == **id)
                    .is_some_and(|s| s.dependencies.iter().all(|d| placed.contains(d)))
        })?;
        placed.push(next.clone());
    }
    Some(placed)
}

/// The last resort: one subtask that is the whole request, executed with every tool.
fn whole_issue_plan(goal: GoalUnderstanding) -> (Plan, &'static str) {
    let description = format!(
        "Do what the request asks, using the tools: {}",
        goal.main_objective
    );
    let plan = Plan {
        goal_understanding: goal,
        task_decomposition: TaskDecomposition {
            reasoning: "The planner's reply could not be used; the whole request is one subtask."
                .into(),
            subtasks: vec![Subtask {
                id: WHOLE_ISSUE_TASK.into(),
                description,
                ..Subtask::default()
            }],
        },
        action_plan: ActionPlan {
            execution_order: vec![WHOLE_ISSUE_TASK.into()],
            actions: vec![],
        },
    };
    (
        plan,
        "the plan was still invalid after a re-ask and nothing in it was usable; one subtask does the whole request",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subtask(id: &str, description: &str, deps: &[&str], tools: &[&str]) -> Subtask {
        Subtask {
            id: id.into(),
            description: description.into(),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            required_tools: tools.iter().map(|t| t.to_string()).collect(),
            ..Subtask::default()
        }
    }

    fn action(task: &str, tool: &str) -> PlannedAction {
        PlannedAction {
            task_id: task.into(),
            tool: Some(tool.into()),
            ..PlannedAction::default()
        }
    }

    fn known() -> HashSet<String> {
        ["read_file", "write_file"].map(String::from).into()
    }

    #[test]
    fn invalid_actions_and_references_are_dropped_and_valid_subtasks_kept() {
        let decomposition = TaskDecomposition {
            reasoning: String::new(),
            subtasks: vec![
                subtask(
                    "b",
                    "write it",
                    &["a", "ghost", "b"],
                    &["write_file", "tool_name"],
                ),
                subtask("a", "read it", &[], &["read_file"]),
                subtask("a", "duplicate", &[], &[]),
                subtask("", "no id", &[], &[]),
                subtask("c", " ", &[], &[]),
            ],
        };
        let actions = ActionPlan {
            execution_order: vec!["zzz".into()],
            actions: vec![
                action("b", "write_file"),
                action("b", "tool_name"),
                action("ghost", "read_file"),
            ],
        };
        let (plan, _) = keep_valid(
            GoalUnderstanding::default(),
            decomposition,
            actions,
            &known(),
            10,
        )
        .unwrap();
        let ids: Vec<&str> = plan.subtask_ids().collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(plan.action_plan.execution_order, ["a", "b"]);
        assert_eq!(plan.subtask("b").unwrap().dependencies, ["a"]);
        assert_eq!(plan.subtask("b").unwrap().required_tools, ["write_file"]);
        assert_eq!(plan.action_plan.actions, vec![action("b", "write_file")]);
    }

    #[test]
    fn a_dependency_cycle_is_broken_and_nothing_valid_means_no_partial_plan() {
        let decomposition = TaskDecomposition {
            reasoning: String::new(),
            subtasks: vec![
                subtask("a", "x", &["b"], &[]),
                subtask("b", "y", &["a"], &[]),
            ],
        };
        let (plan, _) = keep_valid(
            GoalUnderstanding::default(),
            decomposition,
            ActionPlan::default(),
            &known(),
            10,
        )
        .unwrap();
        assert_eq!(plan.action_plan.execution_order, ["a", "b"]);
        assert!(
            plan.task_decomposition
                .subtasks
                .iter()
                .all(|s| s.dependencies.is_empty())
        );
        assert!(
            keep_valid(
                GoalUnderstanding::default(),
                TaskDecomposition::default(),
                ActionPlan::default(),
                &known(),
                10
            )
            .is_none()
        );
    }

    #[test]
    fn the_whole_issue_plan_names_the_goal_or_the_title() {
        let goal = usable_goal(None, "Add a hello file");
        let (plan, _) = whole_issue_plan(goal);
        assert_eq!(plan.action_plan.execution_order, [WHOLE_ISSUE_TASK]);
        assert!(
            plan.task_decomposition.subtasks[0]
                .description
                .ends_with("Add a hello file")
        );
    }
}
