//! GitLab webhook payloads (TRIGGER_PAYLOAD given inline, as a pipeline trigger passes it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::trigger::StartRules;
use replan::trigger::gitlab_event::from_gitlab;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = std::str::from_utf8(data) else {
        return;
    };
    let vars = HashMap::from([
        ("GITLAB_CI".to_owned(), "true".to_owned()),
        ("CI_PIPELINE_SOURCE".to_owned(), "trigger".to_owned()),
        ("CI_PROJECT_ID".to_owned(), "101".to_owned()),
        // Inline JSON only: a payload that is not `{...}` would be read as a path.
        ("TRIGGER_PAYLOAD".to_owned(), format!("{{{payload}")),
    ]);
    let _ = from_gitlab(&vars, &StartRules::default());
});
