//! Every secret a run knows, for the redactor of everything outbound and `::add-mask::`.
//!
//! The environment part is read at start-up by `crate::outbound`; this adds what only the
//! configuration names: the LLM key's variable, the remote config token's variable and
//! `secrets.extra_values`.

use crate::config::Config;
use crate::outbound::{NamedSecret, is_secret_name};
use std::collections::BTreeMap;

/// The environment secrets plus the variables the config names (`llm.api_key_env`,
/// `user_config_api.token_env`) and `secrets.extra_values`, each named by its variable (the extra
/// values by the setting), so a push refusal can say which secret it found.
pub fn known_secrets(env: &BTreeMap<String, String>, config: Option<&Config>) -> Vec<NamedSecret> {
    let mut names: Vec<&str> = env
        .keys()
        .map(String::as_str)
        .filter(|name| is_secret_name(name))
        .collect();
    let mut extra = Vec::new();
    if let Some(config) = config {
        names.extend(config.llm.api_key_env.iter().map(String::as_str));
        if let Some(api) = &config.user_config_api {
            names.extend(api.token_env.iter().map(String::as_str));
        }
        extra.extend(config.secrets.extra_values.iter().cloned());
    }
    names
        .iter()
        .filter_map(|name| Some(NamedSecret::new(*name, env.get(*name)?.clone())))
        .chain(
            extra
                .into_iter()
                .map(|value| NamedSecret::new("secrets.extra_values", value)),
        )
        .filter(|secret| !secret.value.trim().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_key_variable_and_extra_values_are_secrets() {
        let env: BTreeMap<String, String> = [
            ("MY_LLM", "llm-value-123456"),
            ("GITHUB_TOKEN", "ghs_value123456"),
            ("HOME", "/home/me"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        let mut config = Config::default();
        config.llm.api_key_env = Some("MY_LLM".into());
        config.secrets.extra_values = vec!["extra-value-99".into()];
        let known = known_secrets(&env, Some(&config));
        for (name, value) in [
            ("MY_LLM", "llm-value-123456"),
            ("GITHUB_TOKEN", "ghs_value123456"),
            ("secrets.extra_values", "extra-value-99"),
        ] {
            assert!(
                known.contains(&NamedSecret::new(name, value)),
                "{name}: {known:?}"
            );
        }
        assert!(!known.iter().any(|s| s.value == "/home/me"));
    }

    #[test]
    fn extra_values_come_from_the_environment_too() {
        let dir = tempfile::tempdir().unwrap();
        let env: BTreeMap<String, String> = [(
            "REPLAN_SECRETS__EXTRA_VALUES".to_owned(),
            "first-extra-1, second-extra-2".to_owned(),
        )]
        .into();
        let loaded = crate::config::load_local(&crate::config::LoadOptions {
            workspace: dir.path().to_path_buf(),
            config_path: None,
            env: env.clone(),
            overrides: Vec::new(),
            user: None,
        })
        .unwrap();
        assert_eq!(
            loaded.config.secrets.extra_values,
            ["first-extra-1", "second-extra-2"]
        );
        let known = known_secrets(&env, Some(&loaded.config));
        assert!(
            known.iter().any(|s| s.value == "second-extra-2"),
            "{known:?}"
        );
    }
}
