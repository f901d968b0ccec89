//! History replay at 1k, 10k and 100k entries: the JSONL of a real cycle (the 20-subtask run on
//! the fake GitHub) repeated as many runs on one thread, then read, parsed and replayed by a
//! child process per size so the sizes' memory does not mix.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use replan::history::jsonl;
use serde_json::{Value, json};

use crate::stats::Samples;

pub const CHILD_FLAG: &str = "--replay-child";

/// `template` repeated (new run ids, renumbered) to exactly `count` entries.
pub fn history_text(template: &str, count: usize) -> String {
    let base = jsonl::parse(template).entries;
    assert!(!base.is_empty(), "the template history has entries");
    let mut out = String::with_capacity(count * 400);
    let mut seq = 0u64;
    let mut run = 0usize;
    'outer: loop {
        run += 1;
        for entry in &base {
            if seq as usize == count {
                break 'outer;
            }
            seq += 1;
            let mut e = entry.clone();
            e.seq = seq;
            e.run_id = format!("{}-{run}", 7000 + run);
            out.push_str(&jsonl::to_line(&e));
            out.push('\n');
        }
    }
    out
}

/// In the child: read `path` and replay it as the product's load path does (parsing and
/// applying entry by entry, `history::replay_text`); print one JSON line of timings and memory.
/// `parse_ms` is parse and replay together (they overlap).
pub fn child(path: &Path) {
    let base_kib = status_kib("VmRSS");
    let start = Instant::now();
    let text = std::fs::read_to_string(path).expect("history file");
    let read = start.elapsed();
    let (state, scan) = replan::history::replay_text(&text);
    let total = start.elapsed();
    assert!(scan.corrupt.is_empty(), "generated history is clean");
    std::hint::black_box(&state);
    println!(
        "{}",
        json!({
            "entries": scan.entries,
            "bytes": text.len(),
            "read_ms": read.as_secs_f64() * 1e3,
            "parse_ms": (total - read).as_secs_f64() * 1e3,
            "total_ms": total.as_secs_f64() * 1e3,
            "base_rss_kib": base_kib,
            "peak_rss_kib": status_kib("VmHWM"),
        })
    );
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub struct ReplayRow {
    pub entries: usize,
    pub megabytes: f64,
    pub total_ms: Samples,
    /// Parse and replay together (one pass).
    pub parse_ms: Samples,
    pub base_rss_kib: u64,
    pub peak_rss_kib: u64,
}

pub fn measure(dir: &Path, template: &str, count: usize, reps: usize) -> ReplayRow {
    let path = dir.join(format!("history-{count}.jsonl"));
    std::fs::write(&path, history_text(template, count)).expect("write history");
    let exe = std::env::current_exe().expect("bench executable");
    let mut row = ReplayRow {
        entries: count,
        megabytes: 0.0,
        total_ms: Samples::default(),
        parse_ms: Samples::default(),
        base_rss_kib: 0,
        peak_rss_kib: 0,
    };
    for _ in 0..reps {
        let output = Command::new(&exe)
            .arg(CHILD_FLAG)
            .arg(&path)
            .output()
            .expect("run the replay child");
        assert!(output.status.success(), "replay child failed: {output:?}");
        let v: Value = serde_json::from_slice(&output.stdout).expect("child JSON");
        assert_eq!(v["entries"].as_u64(), Some(count as u64));
        row.megabytes = v["bytes"].as_f64().unwrap_or(0.0) / 1e6;
        row.total_ms.push(v["total_ms"].as_f64().unwrap_or(0.0));
        row.parse_ms.push(v["parse_ms"].as_f64().unwrap_or(0.0));
        row.base_rss_kib = v["base_rss_kib"].as_u64().unwrap_or(0);
        row.peak_rss_kib = row
            .peak_rss_kib
            .max(v["peak_rss_kib"].as_u64().unwrap_or(0));
    }
    row
}
