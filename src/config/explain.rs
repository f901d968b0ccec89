//! `replan config --explain`: every leaf of the merged config and the source that set it.
//!
//! Nothing secret can appear: credentials are only ever referenced by variable name.

use serde_json::{Map, Value};

use super::layers::join;
use super::load::LoadedConfig;
use super::source::Source;

/// Every leaf as `(dotted path, value)`, in declaration order; arrays and empty maps are leaves.
pub fn leaves(value: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    collect(value, "", &mut out);
    out
}

fn collect(value: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                collect(child, &join(path, key), out);
            }
        }
        _ => out.push((path.to_owned(), value.clone())),
    }
}

fn rows(loaded: &LoadedConfig) -> Vec<(String, Value, Source)> {
    let tree = serde_json::to_value(&loaded.config).expect("config serializes");
    leaves(&tree)
        .into_iter()
        .map(|(path, value)| {
            let source = loaded.provenance.source_of(&path);
            (path, value, source)
        })
        .collect()
}

/// `key = value   (source)`, one line per leaf, values as JSON, sources aligned.
pub fn explain_text(loaded: &LoadedConfig) -> String {
    let lines: Vec<(String, Source)> = rows(loaded)
        .into_iter()
        .map(|(path, value, source)| (format!("{path} = {value}"), source))
        .collect();
    let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (line, source) in lines {
        // Padded by hand: a format width above u16::MAX panics, and a config line may be longer.
        out.push_str(&line);
        out.extend(std::iter::repeat_n(' ', width - line.len()));
        out.push_str(&format!("   ({source})\n"));
    }
    out
}

/// `{"<path>": {"value": ..., "source": "<source>"}}`, in declaration order.
pub fn explain_json(loaded: &LoadedConfig) -> Value {
    let mut map = Map::new();
    for (path, value, source) in rows(loaded) {
        let mut entry = Map::new();
        entry.insert("value".into(), value);
        entry.insert("source".into(), Value::String(source.to_string()));
        map.insert(path, Value::Object(entry));
    }
    Value::Object(map)
}
