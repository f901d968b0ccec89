//! Layered merge of JSON trees, recording which source set each leaf.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::source::{Provenance, Source};

/// The merged tree so far, with provenance and the raw text of values that came from strings
/// (env vars, flags, inputs), so a value parsed as a number can be retried as a string.
#[derive(Debug, Clone)]
pub(crate) struct Layered {
    pub tree: Value,
    pub provenance: Provenance,
    pub raw: BTreeMap<String, String>,
}

impl Layered {
    pub fn new(defaults: Value) -> Self {
        Self {
            tree: defaults,
            provenance: Provenance::default(),
            raw: BTreeMap::new(),
        }
    }

    /// Deep-merges `layer` over the tree: mappings merge key by key, anything else replaces.
    pub fn apply(&mut self, layer: Value, source: &Source) {
        merge_into(&mut self.tree, layer, source, &mut self.provenance, "");
    }

    /// Sets one dotted key path from a string (env var, flag, action input).
    pub fn apply_raw(&mut self, key: &str, raw: &str, source: &Source) {
        let value = parse_scalar(raw, self.value_at(key));
        let mut layer = value;
        for segment in key.rsplit('.') {
            let mut map = Map::new();
            map.insert(segment.to_owned(), layer);
            layer = Value::Object(map);
        }
        self.raw.retain(|k, _| k != key);
        self.apply(layer, source);
        self.raw.insert(key.to_owned(), raw.to_owned());
    }

    pub fn value_at(&self, key: &str) -> Option<&Value> {
        key.split('.')
            .try_fold(&self.tree, |node, segment| node.get(segment))
    }

    pub fn value_at_mut(&mut self, key: &str) -> Option<&mut Value> {
        key.split('.')
            .try_fold(&mut self.tree, |node, segment| node.get_mut(segment))
    }
}

fn merge_into(base: &mut Value, layer: Value, source: &Source, prov: &mut Provenance, path: &str) {
    match (base, layer) {
        // `planning:` with nothing under it is YAML null: it sets nothing.
        (Value::Object(_), Value::Null) => {}
        (Value::Object(base_map), Value::Object(layer_map)) => {
            for (key, value) in layer_map {
                let child = join(path, &key);
                match base_map.get_mut(&key) {
                    Some(existing) => merge_into(existing, value, source, prov, &child),
                    None => {
                        record_leaves(&value, source, prov, &child);
                        base_map.insert(key, value);
                    }
                }
            }
        }
        (base, layer) => {
            prov.forget_below(path);
            record_leaves(&layer, source, prov, path);
            *base = layer;
        }
    }
}

fn record_leaves(value: &Value, source: &Source, prov: &mut Provenance, path: &str) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                record_leaves(child, source, prov, &join(path, key));
            }
        }
        _ => prov.record(path, source),
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A string value as the type the key expects where that is knowable: a string default keeps
/// the text; an array default takes JSON or a comma-separated list; otherwise JSON scalars
/// (`true`, `3`, `0.5`, `null`) parse and anything else stays a string.
pub(crate) fn parse_scalar(raw: &str, current: Option<&Value>) -> Value {
    let trimmed = raw.trim();
    match current {
        Some(Value::String(_)) => Value::String(raw.to_owned()),
        Some(Value::Array(_)) => match serde_json::from_str::<Value>(trimmed) {
            Ok(array @ Value::Array(_)) => array,
            _ => Value::Array(
                trimmed
                    .split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| Value::String(item.to_owned()))
                    .collect(),
            ),
        },
        _ => match serde_json::from_str::<Value>(trimmed) {
            Ok(value) => value,
            Err(_) => Value::String(raw.to_owned()),
        },
    }
}

/// Seed 002 and 004 spell their keys in camelCase; the file may too. They are renamed to the
/// snake_case keys before merging so that a camelCase key in one layer and the snake_case key
/// in another address the same setting.
pub(crate) fn normalize_camel_case_sections(tree: &mut Value) {
    for section in ["refinement", "replanning"] {
        if let Some(Value::Object(map)) = tree.get_mut(section) {
            let renamed: Map<String, Value> = std::mem::take(map)
                .into_iter()
                .map(|(key, value)| (camel_to_snake(&key), value))
                .collect();
            *map = renamed;
        }
    }
}

fn camel_to_snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deep_merge_records_each_leaf_source() {
        let mut l = Layered::new(json!({"a": {"b": 1, "c": 2}, "m": {}}));
        let file = Source::File("f.yml".into());
        l.apply(json!({"a": {"b": 5}, "m": {"x": {"y": 1}}}), &file);
        assert_eq!(l.tree, json!({"a": {"b": 5, "c": 2}, "m": {"x": {"y": 1}}}));
        assert_eq!(l.provenance.source_of("a.b"), file);
        assert_eq!(l.provenance.source_of("a.c"), Source::Default);
        assert_eq!(l.provenance.source_of("m.x.y"), file);
    }

    #[test]
    fn raw_values_follow_the_type_of_the_current_value() {
        let mut l = Layered::new(json!({"s": "x", "n": 1, "a": [], "o": null}));
        let env = Source::Env("E".into());
        l.apply_raw("s", "123", &env);
        l.apply_raw("n", "7", &env);
        l.apply_raw("a", "alice, bob", &env);
        l.apply_raw("o", "0.25", &env);
        assert_eq!(
            l.tree,
            json!({"s": "123", "n": 7, "a": ["alice", "bob"], "o": 0.25})
        );
        assert_eq!(l.raw.get("o").map(String::as_str), Some("0.25"));
    }

    #[test]
    fn camel_case_keys_of_seed_sections_become_snake_case() {
        let mut tree =
            json!({"refinement": {"maxRefinementAttempts": 1}, "llm": {"headers": {"X-Key": "v"}}});
        normalize_camel_case_sections(&mut tree);
        assert_eq!(
            tree,
            json!({"refinement": {"max_refinement_attempts": 1}, "llm": {"headers": {"X-Key": "v"}}})
        );
    }
}
