//! Where a configuration value came from, per leaf key path.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// One configuration source. Higher variants in [`Source::rank`] win.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Source {
    Default,
    /// The repository file (`.github/replan.yml`, `.replan.yml` or `--config PATH`).
    File(PathBuf),
    /// The `user_config_api` endpoint (URL without query string or credentials).
    Remote(String),
    /// An environment variable, by name.
    Env(String),
    /// A CLI flag, as the user typed it (e.g. `--model` or `--set planning.mode=per_phase`).
    Flag(String),
    /// A GitHub Action input, by its environment variable (`INPUT_MODEL`).
    Input(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Remote(url) => write!(f, "remote {url}"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Input(var) => write!(f, "action input {var}"),
        }
    }
}

/// The source of every leaf set by something other than the defaults.
///
/// Keys are dotted paths (`planning.replanning.global.max_total_replans`); arrays and empty maps
/// are leaves. A path not present here has its default value.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Provenance {
    leaves: BTreeMap<String, Source>,
}

impl Provenance {
    pub(crate) fn record(&mut self, path: &str, source: &Source) {
        self.forget_below(path);
        self.leaves.insert(path.to_owned(), source.clone());
    }

    /// Drops the entries of `path` and everything under it (a higher layer replaced them).
    pub(crate) fn forget_below(&mut self, path: &str) {
        let prefix = format!("{path}.");
        self.leaves
            .retain(|key, _| key != path && !key.starts_with(&prefix));
    }

    /// The source of the value at `path`: itself, else the nearest ancestor that was set as a
    /// whole, else the first leaf below it, else the defaults.
    pub fn source_of(&self, path: &str) -> Source {
        let path = strip_indices(path);
        let mut probe = path.as_str();
        loop {
            if let Some(source) = self.leaves.get(probe) {
                return source.clone();
            }
            match probe.rfind('.') {
                Some(dot) => probe = &probe[..dot],
                None => break,
            }
        }
        let prefix = format!("{path}.");
        self.leaves
            .iter()
            .find(|(key, _)| key.starts_with(&prefix))
            .map(|(_, source)| source.clone())
            .unwrap_or(Source::Default)
    }

    /// Every recorded leaf and its source.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Source)> {
        self.leaves.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// `tools.enabled[2]` → `tools.enabled`: arrays are replaced whole, so they carry one source.
fn strip_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_of_walks_up_then_down_then_defaults() {
        let mut p = Provenance::default();
        let env = Source::Env("X".into());
        p.record("tools.enabled", &env);
        p.record("llm.headers.x-a", &Source::Flag("--set".into()));
        assert_eq!(p.source_of("tools.enabled[0]"), env);
        assert_eq!(p.source_of("llm.headers"), Source::Flag("--set".into()));
        assert_eq!(p.source_of("planning.enabled"), Source::Default);
        p.record("llm", &env);
        assert_eq!(p.source_of("llm.headers.x-a"), env);
    }
}
