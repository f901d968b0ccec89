//! The environment handed to commands and MCP servers: a short list of harmless variables, never
//! anything that looks like a credential.

use std::collections::BTreeMap;

/// Variables passed through by name (plus every `LC_*`).
const SAFE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "CI",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "RUST_BACKTRACE",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "npm_config_cache",
    "NODE_PATH",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "PIP_CACHE_DIR",
    "JAVA_HOME",
    "MAVEN_OPTS",
    "GRADLE_USER_HOME",
];

/// A variable on the safe list is still dropped when its name marks it as secret.
pub fn looks_secret(name: &str) -> bool {
    crate::outbound::is_secret_name(name)
}

/// The scrubbed environment built from `vars` (normally `std::env::vars()`).
pub fn scrubbed(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(name, _)| {
            (SAFE.contains(&name.as_str()) || name.starts_with("LC_")) && !looks_secret(name)
        })
        .collect()
}

/// The scrubbed environment of this process, with git's global config pointed at `/dev/null`:
/// Landlock denies the sandbox the home directory, and git stops when it cannot read
/// `~/.gitconfig` (the model's own `git` commands, and the local run's branch hand-over).
pub fn scrubbed_process_env() -> BTreeMap<String, String> {
    let mut env = scrubbed(std::env::vars());
    env.insert("GIT_CONFIG_GLOBAL".into(), "/dev/null".into());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_non_secret_variables_pass() {
        let env = scrubbed(
            [
                ("PATH", "/bin"),
                ("LC_ALL", "C"),
                ("GITHUB_TOKEN", "ghp_x"),
                ("OPENAI_API_KEY", "sk"),
                ("RANDOM_THING", "1"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned())),
        );
        assert_eq!(env.keys().collect::<Vec<_>>(), vec!["LC_ALL", "PATH"]);
    }
}
