//! Environment variables: the seeds' names (seed 001 §9.2, seed 000 §12.2) and `REPLAN_<PATH>`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::error::ConfigError;
use super::layers::Layered;
use super::source::Source;

/// Seed variable names and the key each sets.
///
/// `MAX_PLAN_REVISIONS` is listed in seed 001 §9.2 as the "maximum plan revisions" of seed 001's
/// own `planning.revision.max_revisions`, so it sets that key (not seed 000's
/// `planning.replanning.reflection.max_plan_revisions`, which has no variable of its own).
pub const SEED_ENV_VARS: &[(&str, &str)] = &[
    ("PLANNING_ENABLED", "planning.enabled"),
    ("PLANNING_STRATEGY", "planning.strategy"),
    ("PLANNING_MAX_SUBTASKS", "planning.max_subtasks"),
    ("REFLECTION_ENABLED", "planning.reflection.enabled"),
    (
        "REFLECTION_INTERVAL",
        "planning.reflection.trigger_interval",
    ),
    ("MAX_PLAN_REVISIONS", "planning.revision.max_revisions"),
    ("REPLANNING_ENABLED", "planning.replanning.enabled"),
    (
        "REPLANNING_MIN_CONFIDENCE",
        "planning.replanning.llm_decision.min_confidence_threshold",
    ),
    (
        "MAX_TOTAL_REPLANS",
        "planning.replanning.global.max_total_replans",
    ),
];

/// Prefix of the generic form: `REPLAN_PLANNING__REPLANNING__GLOBAL__MAX_TOTAL_REPLANS=4`.
pub const GENERIC_PREFIX: &str = "REPLAN_";

/// Top-level config keys; a `REPLAN_` variable whose first segment is none of these (e.g.
/// `REPLAN_LOG`) is not configuration and is left alone.
pub(crate) const TOP_LEVEL_KEYS: &[&str] = &[
    "planning",
    "refinement",
    "replanning",
    "llm",
    "tools",
    "execution",
    "mcp_servers",
    "history",
    "github",
    "gitlab",
    "triggers",
    "gate",
    "forge_api",
    "user_config_api",
    "secrets",
    "publish",
    "verify",
];

/// The seed variables, read with `envy` (field names are the variable names, lowercased).
#[derive(Debug, Default, Deserialize)]
struct SeedEnv {
    planning_enabled: Option<String>,
    planning_strategy: Option<String>,
    planning_max_subtasks: Option<String>,
    reflection_enabled: Option<String>,
    reflection_interval: Option<String>,
    max_plan_revisions: Option<String>,
    replanning_enabled: Option<String>,
    replanning_min_confidence: Option<String>,
    max_total_replans: Option<String>,
}

impl SeedEnv {
    fn values(self) -> [Option<String>; 9] {
        [
            self.planning_enabled,
            self.planning_strategy,
            self.planning_max_subtasks,
            self.reflection_enabled,
            self.reflection_interval,
            self.max_plan_revisions,
            self.replanning_enabled,
            self.replanning_min_confidence,
            self.max_total_replans,
        ]
    }
}

/// Applies the environment layer: seed names first, then `REPLAN_*` (more specific, wins).
pub(crate) fn apply(
    layered: &mut Layered,
    env: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    let seed: SeedEnv =
        envy::from_iter(env.iter().map(|(k, v)| (k.clone(), v.clone()))).unwrap_or_default();
    for ((var, key), value) in SEED_ENV_VARS.iter().zip(seed.values()) {
        if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
            layered.apply_raw(key, &value, &Source::Env((*var).to_owned()));
        }
    }
    for (var, value) in env {
        let Some(key) = generic_key(var)? else {
            continue;
        };
        layered.apply_raw(&key, value, &Source::Env(var.clone()));
    }
    Ok(())
}

/// `REPLAN_LLM__MODEL` → `llm.model`; `None` for variables that are not configuration.
fn generic_key(var: &str) -> Result<Option<String>, ConfigError> {
    let Some(rest) = var.strip_prefix(GENERIC_PREFIX) else {
        return Ok(None);
    };
    let segments: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    let first = segments[0].as_str();
    if !TOP_LEVEL_KEYS.contains(&first) {
        // A near miss of a real section is a typo, not some other tool's variable.
        if let Some(close) = TOP_LEVEL_KEYS
            .iter()
            .find(|known| strsim::levenshtein(known, first) <= 2 && first.len() > 3)
        {
            return Err(ConfigError::UnknownKey {
                key: segments.join("."),
                origin: Source::Env(var.to_owned()),
                suggestion: Some((*close).to_owned()),
                allowed: TOP_LEVEL_KEYS.iter().map(|k| (*k).to_owned()).collect(),
            });
        }
        return Ok(None);
    }
    if segments.len() < 2 || segments.iter().any(String::is_empty) {
        return Err(ConfigError::InvalidValue {
            key: segments.join("."),
            origin: Source::Env(var.to_owned()),
            message: "the variable does not name a setting".to_owned(),
            fix: "separate levels with a double underscore, e.g. REPLAN_LLM__MODEL".to_owned(),
        });
    }
    Ok(Some(segments.join(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_top_level_section_can_be_set_from_the_environment() {
        let tree = serde_json::to_value(super::super::Config::default()).unwrap();
        let mut sections: Vec<&str> = tree
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut known = TOP_LEVEL_KEYS.to_vec();
        sections.sort_unstable();
        known.sort_unstable();
        assert_eq!(sections, known);
    }

    #[test]
    fn generic_names_map_to_paths_and_foreign_vars_are_ignored() {
        assert_eq!(
            generic_key("REPLAN_PLANNING__REPLANNING__GLOBAL__MAX_TOTAL_REPLANS").unwrap(),
            Some("planning.replanning.global.max_total_replans".to_owned())
        );
        assert_eq!(generic_key("REPLAN_LOG").unwrap(), None);
        assert_eq!(generic_key("HOME").unwrap(), None);
        let err = generic_key("REPLAN_PLANING__ENABLED").unwrap_err();
        assert!(err.to_string().contains("did you mean `planning`"), "{err}");
    }
}
