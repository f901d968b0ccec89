//! The `planning` section (seed 001 §6 and §9.1), with `replanning` nested inside (seed 000 §12.1).

use serde::{Deserialize, Serialize};

use super::replanning::ReplanningConfig;

/// `planning:` — the five-phase planning process (seed 001 §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanningConfig {
    /// Planning on; `false` runs the legacy plain tool-calling loop.
    pub enabled: bool,
    pub strategy: Strategy,
    pub max_subtasks: u32,
    pub decomposition_level: DecompositionLevel,
    /// Our addition (SPEC F5): the three planning phases in one LLM response, or one call per phase.
    pub mode: PlanningMode,
    /// Issue 15: `folded` asks the replan decisions, the task judge, the quality self-check and
    /// reflections inside the turns that already talk to the model; `separate` makes one call
    /// each, as the seeds describe. The history records one entry per decision either way.
    pub decisions: DecisionMode,
    pub reflection: ReflectionConfig,
    pub revision: RevisionConfig,
    pub history: PlanningHistoryConfig,
    pub replanning: ReplanningConfig,
    /// Issue 39: whether a person approves the plan (`plan`), only a plan whose scope grew
    /// (`scope`), or nothing (`never`) before subtasks run.
    pub approval: ApprovalMode,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            strategy: Strategy::default(),
            max_subtasks: 100,
            decomposition_level: DecompositionLevel::default(),
            mode: PlanningMode::default(),
            decisions: DecisionMode::default(),
            reflection: ReflectionConfig::default(),
            revision: RevisionConfig::default(),
            history: PlanningHistoryConfig::default(),
            replanning: ReplanningConfig::default(),
            approval: ApprovalMode::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    #[default]
    ChainOfThought,
    Hierarchical,
    Simple,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecompositionLevel {
    Detailed,
    #[default]
    Moderate,
    Minimal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanningMode {
    /// Goal understanding, decomposition and action sequence in one response (SPEC F5 default).
    #[default]
    SingleCall,
    PerPhase,
}

/// `planning.decisions`: one round trip per decision, or decisions carried by the reply the
/// model gives anyway (a reply without them falls back to the separate call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionMode {
    Separate,
    #[default]
    Folded,
}

/// `planning.reflection` (seed 001 §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReflectionConfig {
    pub enabled: bool,
    pub trigger_on_error: bool,
    /// Reflect every N actions; 0 turns periodic reflection off (seed 001 §9.1).
    pub trigger_interval: u32,
}

impl Default for ReflectionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            trigger_on_error: true,
            trigger_interval: 3,
        }
    }
}

/// `planning.revision` (seed 001 §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RevisionConfig {
    pub max_revisions: u32,
}

impl Default for RevisionConfig {
    fn default() -> Self {
        Self { max_revisions: 3 }
    }
}

/// `planning.history` (seed 001 §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanningHistoryConfig {
    pub storage_type: String,
}

impl Default for PlanningHistoryConfig {
    fn default() -> Self {
        Self {
            storage_type: "jsonl".to_owned(),
        }
    }
}

/// `planning.approval` (issue 39): when execution waits for a person's `/approve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Plan and execute in one go (the behaviour before issue 39).
    #[default]
    Never,
    /// Every plan, and every replan that changes it, waits for `/approve`.
    Plan,
    /// The first plan runs at once; a replan that widens the approved scope waits.
    Scope,
}
