//! History files as stored (any bytes): parse, replay, and append after them. An append must
//! keep every earlier byte and never reuse a `seq`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::history::rebase::PendingAppend;
use replan::history::{jsonl, replay};

fuzz_target!(|data: &[u8]| {
    let text = jsonl::text_of(data);
    let parsed = jsonl::parse(&text);
    let _ = replay(&parsed.entries);
    let max = jsonl::max_seq_bytes(data);
    let mine: Vec<_> = parsed.entries.iter().take(3).cloned().collect();
    if mine.is_empty() {
        return;
    }
    match PendingAppend::new("fuzz.jsonl", &mine).append_to(data) {
        Ok((bytes, first)) => {
            assert!(bytes.starts_with(data), "earlier bytes kept");
            assert_eq!(first, max + 1, "numbered after the highest seq");
        }
        Err(_) => assert!(max.checked_add(mine.len() as u64).is_none()),
    }
});
