//! The top layer: CLI flags and GitHub Action inputs, as `(key path, raw value, source)`.

use std::collections::BTreeMap;

use super::source::Source;

/// One value set on the command line or as an action input.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Dotted key path, e.g. `planning.replanning.global.max_total_replans`.
    pub key: String,
    /// The text as given; parsed like an environment value.
    pub value: String,
    /// Usually [`Source::Flag`]; [`Source::Input`] for inputs not read from the environment.
    pub source: Source,
}

impl Override {
    /// A CLI flag override; `flag` is what the user typed (`--model`, `--set`).
    pub fn flag(key: &str, value: &str, flag: &str) -> Self {
        Self {
            key: key.to_owned(),
            value: value.to_owned(),
            source: Source::Flag(flag.to_owned()),
        }
    }
}

/// GitHub Action inputs (`INPUT_<NAME>` in the environment) and the keys they set. The action
/// manifest (action.yml) declares these names; `CONFIG_PATH` is the `--config` file, handled by
/// the caller.
pub const ACTION_INPUTS: &[(&str, &str)] = &[
    ("PROVIDER", "llm.provider"),
    ("MODEL", "llm.model"),
    ("BASE_URL", "llm.base_url"),
    ("TRIGGER_LABEL", "github.trigger_label"),
    ("MENTION_HANDLE", "github.mention_handle"),
    ("HISTORY_BRANCH", "history.branch"),
    (
        "MAX_TOTAL_REPLANS",
        "planning.replanning.global.max_total_replans",
    ),
    ("MAX_SUBTASKS", "planning.max_subtasks"),
    ("PLANNING_MODE", "planning.mode"),
];

/// The action inputs present in `env`. An input left empty (the runner sets every declared
/// input, empty when not given) is not set. Hyphenated names (`INPUT_BASE-URL`) count too.
pub(crate) fn action_inputs(env: &BTreeMap<String, String>) -> Vec<Override> {
    let mut found = Vec::new();
    for (name, key) in ACTION_INPUTS {
        let underscored = format!("INPUT_{name}");
        let hyphenated = format!("INPUT_{}", name.replace('_', "-"));
        for var in [underscored, hyphenated] {
            if let Some(value) = env.get(&var).filter(|v| !v.trim().is_empty()) {
                found.push(Override {
                    key: (*key).to_owned(),
                    value: value.clone(),
                    source: Source::Input(var),
                });
                break;
            }
        }
    }
    found
}
