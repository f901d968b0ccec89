//! `verify` — the checks that prove the work (issue 37): named commands run by Replan itself, on
//! the tree a subtask left (`each_task`) and on the final tree (`final`).
//!
//! `verify:` is a map (`checks`, ...) or, for short, the list of checks itself. Unset `checks`
//! means "detect them from the repository"; an empty list turns verification off. `ci_rounds`:
//! how many times a failing CI run on Replan's own pull request branch reopens the thread before
//! it waits for a person.

use serde::{Deserialize, Deserializer, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyConfig {
    /// The checks; unset = detected from the repository's manifests at its starting commit,
    /// `[]` = no verification.
    pub checks: Option<Vec<CheckConfig>>,
    /// CI failures on the thread's pull request branch that start a fixing cycle; the next
    /// failure is recorded and left for a person. 0: CI results are recorded, never acted on.
    pub ci_rounds: u32,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            checks: None,
            ci_rounds: DEFAULT_CI_ROUNDS,
        }
    }
}

const DEFAULT_CI_ROUNDS: u32 = 3;

fn default_ci_rounds() -> u32 {
    DEFAULT_CI_ROUNDS
}

/// One named check: an exact argv, run without a shell in the same sandbox as `run_command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    pub name: String,
    pub argv: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    #[serde(default)]
    pub when: CheckWhen,
}

/// When a check runs. Every check runs on the final tree; `each_task` ones also after every
/// attempt of a subtask that changed files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckWhen {
    #[default]
    EachTask,
    Final,
}

fn default_timeout() -> u64 {
    600
}

impl CheckConfig {
    pub fn new(name: &str, argv: &[&str], when: CheckWhen) -> Self {
        CheckConfig {
            name: name.to_owned(),
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            timeout_seconds: default_timeout(),
            when,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyMap {
    #[serde(default)]
    checks: Option<Vec<CheckConfig>>,
    #[serde(default = "default_ci_rounds")]
    ci_rounds: u32,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum VerifyRepr {
    List(Vec<CheckConfig>),
    Map(VerifyMap),
}

impl<'de> Deserialize<'de> for VerifyConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<VerifyRepr>::deserialize(deserializer)? {
            None => VerifyConfig::default(),
            Some(VerifyRepr::List(checks)) => VerifyConfig {
                checks: Some(checks),
                ..VerifyConfig::default()
            },
            Some(VerifyRepr::Map(map)) => VerifyConfig {
                checks: map.checks,
                ci_rounds: map.ci_rounds,
            },
        })
    }
}

/// Problems with the configured checks, as (key, message) pairs.
pub fn problems(config: &VerifyConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, check) in config.checks.iter().flatten().enumerate() {
        let key = format!("verify.checks[{i}]");
        if check.name.trim().is_empty() {
            out.push((key.clone(), "give the check a `name`".to_owned()));
        } else if !seen.insert(check.name.clone()) {
            out.push((
                key.clone(),
                format!(
                    "the name `{}` is used twice; names must be unique",
                    check.name
                ),
            ));
        }
        if check.argv.is_empty() || check.argv[0].trim().is_empty() {
            out.push((
                key.clone(),
                "`argv` must name a program, e.g. [\"cargo\", \"test\"]".to_owned(),
            ));
        }
        if check.timeout_seconds == 0 {
            out.push((key, "`timeout_seconds` must be at least 1".to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_or_a_map_or_nothing() {
        let list: VerifyConfig =
            serde_json::from_str(r#"[{"name":"t","argv":["make","test"]}]"#).unwrap();
        assert_eq!(list.checks.as_ref().unwrap()[0].when, CheckWhen::EachTask);
        let off: VerifyConfig = serde_json::from_str("[]").unwrap();
        assert_eq!(off.checks, Some(vec![]));
        let map: VerifyConfig = serde_json::from_str(r#"{"checks":null}"#).unwrap();
        assert_eq!(map.checks, None);
        assert_eq!(map.ci_rounds, 3);
        let rounds: VerifyConfig = serde_json::from_str(r#"{"ci_rounds":1}"#).unwrap();
        assert_eq!((rounds.checks, rounds.ci_rounds), (None, 1));
        let err = serde_json::from_str::<VerifyConfig>(r#"[{"name":"t","cmd":"x"}]"#);
        assert!(err.is_err());
    }

    #[test]
    fn duplicate_names_and_empty_argv_are_problems() {
        let config = VerifyConfig {
            checks: Some(vec![
                CheckConfig::new("t", &["true"], CheckWhen::Final),
                CheckConfig::new("t", &[], CheckWhen::Final),
            ]),
            ..VerifyConfig::default()
        };
        let found = problems(&config);
        assert_eq!(found.len(), 2, "{found:?}");
    }
}
