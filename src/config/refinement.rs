//! `refinement` — the quality-judge refinement loop (seed 002, settings table).
//!
//! Keys are snake_case; the seed's camelCase names are accepted as aliases.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RefinementConfig {
    pub enabled: bool,
    #[serde(alias = "maxRefinementAttempts")]
    pub max_refinement_attempts: u32,
    #[serde(alias = "refineSuggestionsOnSuccess")]
    pub refine_suggestions_on_success: bool,
    #[serde(alias = "maxSuggestionReplans")]
    pub max_suggestion_replans: u32,
    #[serde(alias = "enableIndividualFallback")]
    pub enable_individual_fallback: bool,
    /// Stagnation: absolute score improvement below this stops refining.
    #[serde(alias = "deltaThreshold")]
    pub delta_threshold: f64,
    /// Stagnation: relative score improvement (percent, 0..=100) below this stops refining.
    #[serde(alias = "deltaThresholdPercent")]
    pub delta_threshold_percent: f64,
    /// A refined plan whose task count changes by more than this ratio (and by more than
    /// `task_count_change_min_absolute` tasks) fails structure validation.
    #[serde(alias = "taskCountChangeThreshold")]
    pub task_count_change_threshold: f64,
    #[serde(alias = "taskCountChangeMinAbsolute")]
    pub task_count_change_min_absolute: u32,
    /// Not in seed 002 (our addition): the quality judge's pass mark, 0..=100. A plan scoring at
    /// least this is "quality OK" in `makeRefinementDecision`.
    #[serde(alias = "acceptableScore")]
    pub acceptable_score: f64,
}

impl Default for RefinementConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_refinement_attempts: 2,
            refine_suggestions_on_success: false,
            max_suggestion_replans: 1,
            enable_individual_fallback: true,
            delta_threshold: 5.0,
            delta_threshold_percent: 5.0,
            task_count_change_threshold: 0.3,
            task_count_change_min_absolute: 2,
            acceptable_score: 70.0,
        }
    }
}
