//! Comment bodies: command parsing, classification and mention detection.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::trigger::command::{mentions, parse_commands};
use replan::trigger::{StartRules, classify_comment};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_commands(body);
    let _ = mentions(body, "@replan");
    let _ = classify_comment(body, &StartRules::default());
});
