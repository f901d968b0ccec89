//! BENCHMARKS.md is one page of current facts (issue 40): at most 250 lines, and every key the
//! bench writes to `REPLAN_BENCH_JSON` has its row there.

#[path = "../../benches/cycle/report.rs"]
#[allow(dead_code)] // the bench's JSON writer; only its list of keys is read here
mod bench_report;

#[path = "../../benches/cycle/targets.rs"]
mod bench_targets;

const MAX_LINES: usize = 250;

fn page() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/BENCHMARKS.md")).unwrap()
}

#[test]
fn benchmarks_md_is_one_page() {
    let lines = page().lines().count();
    assert!(
        lines <= MAX_LINES,
        "BENCHMARKS.md has {lines} lines, more than {MAX_LINES}: keep today's numbers, the history is in git"
    );
}

#[test]
fn benchmarks_md_names_every_key_the_bench_writes() {
    let text = page();
    let missing: Vec<&str> = bench_report::KEYS
        .iter()
        .copied()
        .filter(|key| !text.contains(&format!("`{key}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "BENCHMARKS.md does not name the bench keys {missing:?}: add their rows (target, value, command)"
    );
}

/// The retired key is gone from the page and from the bench (issue 40 replaced it).
#[test]
fn the_retired_overhead_key_is_gone() {
    assert!(!bench_report::KEYS.contains(&"cycle20_overhead_ms"));
    assert!(!page().contains("cycle20_overhead_ms"));
}

/// The LLM-economy targets the bench fails on are the targets the page shows.
#[test]
fn benchmarks_md_shows_the_targets_the_bench_asserts() {
    let text = page();
    for (key, target) in bench_targets::on_the_page() {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("BENCHMARKS.md has no row for `{key}`"));
        let shown = row.split('|').nth(3).map(str::trim).unwrap_or_default();
        assert_eq!(
            shown, target,
            "BENCHMARKS.md shows the target of `{key}` as `{shown}`; the bench asserts `{target}`"
        );
    }
}
