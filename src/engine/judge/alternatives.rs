//! Seed 003 ADR-003: ranked alternatives for a failed task, each with a confidence score
//!
//! `score = 0.4 × LLM self-estimate + 0.3 × past success of similar tasks
//!        + 0.2 × tool availability + 0.1 × complexity score`
//!
//! with complexity scores low 1.0, medium 0.6, high 0.3. Below
//! `replanning.alternatives_approval_threshold` a person approves the alternative.

use crate::history::SessionState;
use crate::plan::{Complexity, TaskState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub const WEIGHT_LLM: f64 = 0.4;
pub const WEIGHT_PAST: f64 = 0.3;
pub const WEIGHT_TOOLS: f64 = 0.2;
pub const WEIGHT_COMPLEXITY: f64 = 0.1;
/// No similar task in history: neither evidence for nor against.
pub const NEUTRAL_PAST_SUCCESS: f64 = 0.5;
/// Two descriptions are similar when the Jaccard index of their word sets is at least this.
pub const SIMILARITY_THRESHOLD: f64 = 0.5;

/// One alternative the model proposes for a failed task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Alternative {
    pub description: String,
    #[serde(default)]
    pub approach: String,
    /// The model's own confidence, 0.0–1.0.
    pub llm_confidence: f64,
    #[serde(default)]
    pub required_tools: Vec<String>,
    #[serde(default)]
    pub complexity: Complexity,
}

/// The four weighted parts and their sum, kept so notices can show why an alternative ranks where
/// it does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreBreakdown {
    pub llm: f64,
    pub past_success: f64,
    pub tools: f64,
    pub complexity: f64,
    pub total: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredAlternative {
    pub alternative: Alternative,
    pub score: ScoreBreakdown,
}

pub fn complexity_score(c: Complexity) -> f64 {
    match c {
        Complexity::Low => 1.0,
        Complexity::Medium => 0.6,
        Complexity::High => 0.3,
    }
}

fn unit(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// Score one alternative. `past_success_rate` is `None` when history has no similar task; it then
/// counts as [`NEUTRAL_PAST_SUCCESS`]. The complexity is the alternative's own. Inputs outside
/// 0..=1 are clamped (NaN counts as 0).
pub fn score(
    alt: &Alternative,
    past_success_rate: Option<f64>,
    tools_available_ratio: f64,
) -> ScoreBreakdown {
    let llm = unit(alt.llm_confidence);
    let past_success = unit(past_success_rate.unwrap_or(NEUTRAL_PAST_SUCCESS));
    let tools = unit(tools_available_ratio);
    let complexity = complexity_score(alt.complexity);
    ScoreBreakdown {
        llm,
        past_success,
        tools,
        complexity,
        total: WEIGHT_LLM * llm
            + WEIGHT_PAST * past_success
            + WEIGHT_TOOLS * tools
            + WEIGHT_COMPLEXITY * complexity,
    }
}

/// Share of the required tools that are available; 1.0 when none are required.
pub fn tools_available_ratio(required: &[String], is_available: impl Fn(&str) -> bool) -> f64 {
    if required.is_empty() {
        return 1.0;
    }
    let available = required.iter().filter(|t| is_available(t)).count();
    available as f64 / required.len() as f64
}

/// Score and sort best first. Equal scores keep the model's order (stable sort).
pub fn rank(
    alternatives: Vec<Alternative>,
    past_success: impl Fn(&Alternative) -> Option<f64>,
    is_tool_available: impl Fn(&str) -> bool,
) -> Vec<ScoredAlternative> {
    let mut scored: Vec<ScoredAlternative> = alternatives
        .into_iter()
        .map(|a| {
            let s = score(
                &a,
                past_success(&a),
                tools_available_ratio(&a.required_tools, &is_tool_available),
            );
            ScoredAlternative {
                alternative: a,
                score: s,
            }
        })
        .collect();
    scored.sort_by(|a, b| b.score.total.total_cmp(&a.score.total));
    scored
}

/// Below the threshold a person must `/approve` the alternative.
pub fn needs_approval(score: f64, threshold: f64) -> bool {
    score < threshold
}

/// Lower-case words of letters and digits.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Success rate of tasks similar to `description` across `sessions` (other threads' replayed
/// histories, or this one's). Every plan a session ever had is looked at, with each task's final
/// state in that plan: `DONE` is a success; `BLOCKED`, `CANCELLED` and `REPLACED_BY_REPLAN` (it
/// could not be done as planned) are failures; unfinished states are not evidence. `None` when no
/// similar finished task exists.
pub fn past_success_rate(sessions: &[SessionState], description: &str) -> Option<f64> {
    let target = words(description);
    if target.is_empty() {
        return None;
    }
    let (mut done, mut failed) = (0u32, 0u32);
    for s in sessions {
        let last = s.plan_history.len().saturating_sub(1);
        for (i, snap) in s.plan_history.iter().enumerate() {
            for t in &snap.plan.task_decomposition.subtasks {
                if jaccard(&target, &words(&t.description)) < SIMILARITY_THRESHOLD {
                    continue;
                }
                // The current plan's states live in `tasks`; older plans kept theirs when replaced.
                let state = if i == last {
                    s.task_state(&t.id)
                } else {
                    snap.final_tasks.get(&t.id).copied().unwrap_or_default()
                };
                match state {
                    TaskState::Done => done += 1,
                    TaskState::Blocked | TaskState::Cancelled | TaskState::ReplacedByReplan => {
                        failed += 1
                    }
                    TaskState::Ready | TaskState::Running | TaskState::NeedsContinuation => {}
                }
            }
        }
    }
    let n = done + failed;
    (n > 0).then(|| f64::from(done) / f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::state::{PlanSnapshot, TaskStatus};
    use crate::plan::{Plan, Subtask};
    use chrono::Utc;
    use std::collections::BTreeMap;

    fn alt(desc: &str, llm: f64, tools: &[&str], c: Complexity) -> Alternative {
        Alternative {
            description: desc.into(),
            approach: String::new(),
            llm_confidence: llm,
            required_tools: tools.iter().map(|s| s.to_string()).collect(),
            complexity: c,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn weights_are_40_30_20_10() {
        let a = alt("x", 1.0, &[], Complexity::Low);
        assert!(close(score(&a, Some(1.0), 1.0).total, 1.0));
        let a = alt("x", 0.5, &[], Complexity::Medium);
        // 0.4*0.5 + 0.3*0.5 (neutral) + 0.2*0.5 + 0.1*0.6
        let s = score(&a, None, 0.5);
        assert!(close(s.total, 0.2 + 0.15 + 0.1 + 0.06), "{s:?}");
        assert!(close(s.past_success, 0.5));
        let a = alt("x", 0.0, &[], Complexity::High);
        assert!(close(score(&a, Some(0.0), 0.0).total, 0.03));
        assert!(close(complexity_score(Complexity::Low), 1.0));
        assert!(close(complexity_score(Complexity::Medium), 0.6));
        assert!(close(complexity_score(Complexity::High), 0.3));
        let wild = alt("x", 7.0, &[], Complexity::Low);
        assert!(close(score(&wild, Some(-1.0), f64::NAN).total, 0.4 + 0.1));
    }

    #[test]
    fn rank_sorts_best_first_and_keeps_ties_in_order() {
        let avail = |t: &str| t != "docker";
        let ranked = rank(
            vec![
                alt("first tie", 0.5, &[], Complexity::Medium),
                alt(
                    "needs docker",
                    0.9,
                    &["docker", "run_command"],
                    Complexity::Low,
                ),
                alt("second tie", 0.5, &[], Complexity::Medium),
                alt("best", 0.9, &["run_command"], Complexity::Low),
            ],
            |_| None,
            avail,
        );
        let order: Vec<&str> = ranked
            .iter()
            .map(|s| s.alternative.description.as_str())
            .collect();
        assert_eq!(
            order,
            vec!["best", "needs docker", "first tie", "second tie"]
        );
        assert!(close(ranked[1].score.tools, 0.5));
    }

    #[test]
    fn approval_below_the_threshold() {
        assert!(needs_approval(0.49, 0.5));
        assert!(!needs_approval(0.5, 0.5));
    }

    /// Task descriptions of one plan, and the states its tasks had when it was replaced.
    type PlanWithFinalStates<'a> = (Vec<&'a str>, Vec<(&'a str, TaskState)>);

    fn session(
        plans: Vec<PlanWithFinalStates<'_>>,
        current: Vec<(&str, TaskState)>,
    ) -> SessionState {
        let mut s = SessionState::default();
        for (descs, final_states) in plans {
            let mut p = Plan::default();
            p.task_decomposition.subtasks = descs
                .iter()
                .enumerate()
                .map(|(i, d)| Subtask {
                    id: format!("t{}", i + 1),
                    description: d.to_string(),
                    ..Default::default()
                })
                .collect();
            s.plan_history.push(PlanSnapshot {
                version: s.plan_history.len() as u32 + 1,
                plan: std::sync::Arc::new(p),
                started_at: Utc::now(),
                reason: None,
                replan_type: Default::default(),
                final_tasks: final_states
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<BTreeMap<_, _>>(),
            });
            s.plan = s.plan_history.last().map(|snap| snap.plan.clone());
        }
        for (id, st) in current {
            s.tasks.insert(
                id.into(),
                TaskStatus {
                    state: st,
                    ..Default::default()
                },
            );
        }
        s
    }

    #[test]
    fn past_success_counts_similar_finished_tasks() {
        let a = session(
            vec![
                (
                    vec!["Run the unit tests with cargo", "Write the changelog"],
                    vec![("t1", TaskState::Blocked), ("t2", TaskState::Done)],
                ),
                (vec!["run unit tests with cargo nextest"], vec![]),
            ],
            vec![("t1", TaskState::Done)],
        );
        let b = session(
            vec![(vec!["run the unit tests with cargo"], vec![])],
            vec![("t1", TaskState::Running)],
        );
        // Similar: a/v1 t1 (blocked), a/v2 t1 (done); b's is unfinished; the changelog is not similar.
        assert_eq!(
            past_success_rate(&[a.clone(), b], "Run the unit tests with cargo"),
            Some(0.5)
        );
        assert_eq!(past_success_rate(&[a], "deploy to production"), None);
        assert_eq!(past_success_rate(&[], "anything"), None);
    }
}
