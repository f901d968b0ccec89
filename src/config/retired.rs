//! Keys the seeds name that Replan does not read. A config copied from a seed still loads: each
//! such key is taken out before decoding, with a warning that says what to do instead.

use super::layers::Layered;
use serde_json::Value;

/// The dotted key and why it is not read.
pub(crate) const RETIRED: &[(&str, &str)] = &[
    (
        "planning.history.directory",
        "the history's directory is `history.directory`; set that instead",
    ),
    (
        "planning.reflection.depth",
        "reflection has one depth (the reflection prompt); remove the key",
    ),
    (
        "replanning.timeout_seconds",
        "a re-decomposition is bounded by `llm.timeout_seconds` per model call and by the budgets; remove the key",
    ),
];

/// Removes the retired keys that a layer set; one warning each.
pub(crate) fn take_out(layered: &mut Layered) -> Vec<String> {
    let mut warnings = Vec::new();
    for (key, why) in RETIRED {
        let (parent, leaf) = key.rsplit_once('.').expect("dotted key");
        let section = parent
            .split('.')
            .try_fold(&mut layered.tree, |node, part| node.get_mut(part));
        if let Some(Value::Object(map)) = section
            && map.remove(leaf).is_some()
        {
            let origin = layered.provenance.source_of(key);
            warnings.push(format!(
                "warning: config key `{key}` (from {origin}) is not read and was ignored: {why}"
            ));
        }
    }
    warnings
}
