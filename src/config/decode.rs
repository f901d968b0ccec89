//! The merged tree into [`Config`], turning serde's errors into errors that name the key path,
//! its source and the fix.

use serde_json::Value;

use super::Config;
use super::error::ConfigError;
use super::layers::{Layered, join};

pub(crate) fn decode(layered: &mut Layered) -> Result<Config, ConfigError> {
    // Each retry turns one env/flag value that parsed as a number or bool back into its text.
    for _ in 0..=layered.raw.len() {
        let err = match serde_path_to_error::deserialize::<_, Config>(layered.tree.clone()) {
            Ok(config) => return Ok(config),
            Err(err) => err,
        };
        let path = err.path().to_string();
        let message = err.inner().to_string();
        if message.contains("expected a string") && retry_as_string(layered, &path) {
            continue;
        }
        return Err(describe(layered, &path, &message));
    }
    unreachable!("every retry consumes one raw value")
}

fn retry_as_string(layered: &mut Layered, path: &str) -> bool {
    let Some(raw) = layered.raw.get(path).cloned() else {
        return false;
    };
    match layered.value_at_mut(path) {
        Some(value) if !value.is_string() => {
            *value = Value::String(raw);
            layered.raw.remove(path);
            true
        }
        _ => false,
    }
}

fn describe(layered: &Layered, path: &str, message: &str) -> ConfigError {
    let path = if path == "." { "" } else { path };
    let names = backticked(message);
    if message.starts_with("unknown field") {
        let unknown = names.first().cloned().unwrap_or_default();
        // serde_path_to_error reports the mapping holding the unknown key, or the key itself.
        let key = if path.ends_with(&unknown) && !unknown.is_empty() {
            path.to_owned()
        } else {
            join(path, &unknown)
        };
        // camelCase aliases were normalized away before decoding; listing them would only confuse.
        let allowed: Vec<String> = names
            .into_iter()
            .skip(1)
            .filter(|name| !name.chars().any(|c| c.is_ascii_uppercase()))
            .collect();
        return ConfigError::UnknownKey {
            origin: layered.provenance.source_of(&key),
            suggestion: closest(&unknown, &allowed),
            allowed,
            key,
        };
    }
    let origin = layered.provenance.source_of(path);
    if message.starts_with("unknown variant") {
        let allowed = names.iter().skip(1).cloned().collect::<Vec<_>>().join(", ");
        return ConfigError::InvalidValue {
            key: path.to_owned(),
            origin,
            message: message.to_owned(),
            fix: format!("use one of: {allowed}"),
        };
    }
    let expected = message.split(", expected ").nth(1).unwrap_or_default();
    ConfigError::InvalidValue {
        key: path.to_owned(),
        origin,
        message: message.to_owned(),
        fix: format!("give {} (see docs/config-reference.md)", friendly(expected)),
    }
}

/// serde's Rust type names in words a config author knows.
fn friendly(expected: &str) -> String {
    match expected {
        "f64" | "f32" => "a number".to_owned(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "a list (in YAML `[a, b]`; in env or flags `a,b`)".to_owned(),
        "a string" => "a text value".to_owned(),
        "" => "a value of the documented type".to_owned(),
        other if other.starts_with("struct ") || other.starts_with("a map") => {
            "a mapping of keys".to_owned()
        }
        other => other.to_owned(),
    }
}

/// The words between backticks, in order: serde's unknown name, then the expected names.
fn backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

pub(crate) fn closest(unknown: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(unknown, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.clone())
}
