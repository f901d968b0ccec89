//! `REPLAN_BENCH_JSON=FILE`: the bench's headline numbers as one JSON object (issue 15), so CI
//! and people compare runs without reading the markdown tables.

use serde_json::{Map, Value};

/// Every key is written, in this order; every run measures all of them, so a missing one is a
/// bench bug and panics at the end.
pub const KEYS: [&str; 18] = [
    "critical_path_efficiency",
    "overhead_share_1s",
    "fanout_300_matrices",
    "fanout_300_largest_matrix",
    "fanout_300_join_ms",
    "cycle20_llm_round_trips",
    "cycle20_prompt_tokens",
    "cycle20_forge_requests",
    "cycle20_checks_run",
    "cycle20_check_ms",
    "cycle20_check_share",
    "cycle20_checks_added_ms",
    "plan_round_trips",
    "reflection_prompt_tokens",
    "cacheable_prefix_share",
    "replay100k_ms",
    "cycle100_peak_rss_mib",
    "startup_ms",
];

#[derive(Default)]
pub struct Report(Map<String, Value>);

impl Report {
    pub fn set(&mut self, key: &'static str, value: f64) {
        assert!(KEYS.contains(&key), "unknown bench key {key}");
        // Round to keep the file readable; integers stay integers.
        let value = if value.fract() == 0.0 && value.abs() < 1e15 {
            Value::from(value as i64)
        } else {
            Value::from((value * 1000.0).round() / 1000.0)
        };
        self.0.insert(key.to_owned(), value);
    }

    /// The keys measured so far, on stderr (a partial run: `REPLAN_BENCH_ONLY`).
    pub fn print(&self) {
        eprintln!("bench keys: {}", Value::Object(self.0.clone()));
    }

    /// Writes the object to `REPLAN_BENCH_JSON` when set; prints it on stderr either way.
    pub fn write(&self) {
        let mut ordered = Map::new();
        for key in KEYS {
            let value = self
                .0
                .get(key)
                .unwrap_or_else(|| panic!("the bench did not measure {key}"));
            ordered.insert(key.to_owned(), value.clone());
        }
        let text = Value::Object(ordered).to_string();
        eprintln!("bench JSON: {text}");
        if let Some(path) = std::env::var_os("REPLAN_BENCH_JSON") {
            std::fs::write(&path, format!("{text}\n"))
                .unwrap_or_else(|e| panic!("error: cannot write REPLAN_BENCH_JSON file: {e}"));
        }
    }
}
