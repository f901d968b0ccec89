//! Seed 000 §9.3 confidence bands: the one table that places a decision's confidence. The replan
//! policy (`engine::replan::policy`) acts on the band; `replan history stats` counts by it.
//!
//! The bands move with the configuration: with thresholds 0.6 / 0.2 the warning band is
//! 0.6–0.8, approval 0.2–0.6 and untrusted below 0.2. A minimum above 0.8 leaves no warning band.

use crate::config::LlmDecisionConfig;
use serde::{Deserialize, Serialize};

/// §9.3: at or above this the replan runs without a warning. Not configurable in the seed.
pub const HIGH_CONFIDENCE: f64 = 0.8;

/// The §9.3 bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfidenceBand {
    /// ≥ 0.8 (and ≥ the minimum).
    High,
    /// minimum (0.5) ≤ c < 0.8.
    Warn,
    /// user confirmation threshold (0.3) ≤ c < minimum.
    Low,
    /// c < user confirmation threshold, or not a number.
    Untrusted,
}

/// Place a confidence in its band. Values outside 0..=1 are clamped; NaN is untrusted. (Replies
/// are already 0..=1: [`super::model::ranged`] checks them at parse.)
pub fn band(confidence: f64, cfg: &LlmDecisionConfig) -> ConfidenceBand {
    if confidence.is_nan() {
        return ConfidenceBand::Untrusted;
    }
    let c = confidence.clamp(0.0, 1.0);
    if c >= cfg.min_confidence_threshold {
        if c >= HIGH_CONFIDENCE {
            ConfidenceBand::High
        } else {
            ConfidenceBand::Warn
        }
    } else if c >= cfg.user_confirmation_threshold {
        ConfidenceBand::Low
    } else {
        ConfidenceBand::Untrusted
    }
}
