//! Model replies: locating the JSON in free text and reading it as a plan or a replan decision.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::llm::{locate_json, parse_reply};
use replan::plan::{Plan, ReplanDecision};

fuzz_target!(|data: &[u8]| {
    let Ok(reply) = std::str::from_utf8(data) else {
        return;
    };
    let _ = locate_json(reply);
    let _ = parse_reply::<Plan>(reply);
    let _ = parse_reply::<ReplanDecision>(reply);
});
