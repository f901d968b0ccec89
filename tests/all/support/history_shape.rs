//! What two runs' histories must share to "end the same": the entry types in order, except
//! where an `effect` entry (a write's intent) lands. A run records an intent at once: with the
//! entries waiting to be committed when no commit of them is under way, alone (before them)
//! when one is (it may wait for the work branch's push), so its place depends on timing.

use replan::history::entry::EntryBody;
use replan::history::jsonl;

/// The entry types of `history` in order without the effects, and the effects' kinds and keys
/// in order.
pub fn history_shape(history: &str) -> (Vec<String>, Vec<String>) {
    let entries = jsonl::parse(history).entries;
    let types = entries
        .iter()
        .filter(|e| !matches!(e.body, EntryBody::Effect { .. }))
        .map(|e| e.body.type_name().to_owned())
        .collect();
    let effects = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Effect { key, effect, .. } => Some(format!("{effect:?} {key}")),
            _ => None,
        })
        .collect();
    (types, effects)
}
