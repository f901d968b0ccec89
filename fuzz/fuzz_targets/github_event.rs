//! GitHub Actions event payloads: any bytes as the payload of any event Replan handles.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::trigger::StartRules;
use replan::trigger::github_event::from_actions_explained;

const EVENTS: &[&str] = &[
    "issues",
    "issue_comment",
    "pull_request",
    "pull_request_target",
    "pull_request_review_comment",
    "workflow_dispatch",
    "schedule",
];

fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let Ok(payload) = std::str::from_utf8(rest) else {
        return;
    };
    let event = EVENTS[usize::from(*first) % EVENTS.len()];
    let _ = from_actions_explained(
        event,
        payload,
        std::path::Path::new("fuzz.json"),
        &StartRules::default(),
    );
});
