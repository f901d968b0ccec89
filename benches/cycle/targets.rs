//! The LLM-economy targets the checked 20-subtask cycle must meet: the bench fails on a miss, and
//! `tests/all/benchmarks_doc.rs` checks that BENCHMARKS.md's "target" column says the same.

pub const MAX_ROUND_TRIPS: usize = 45;
pub const MAX_PROMPT_TOKENS: usize = 60_000;
pub const MAX_FORGE_REQUESTS: usize = 60;
pub const MAX_PLAN_ROUND_TRIPS: usize = 2;
/// Exclusive: the largest reflection prompt stays under it.
pub const MAX_REFLECTION_TOKENS: usize = 500;
pub const MIN_PREFIX_SHARE: f64 = 0.8;

/// Each key with its target as the page writes it.
pub fn on_the_page() -> [(&'static str, String); 6] {
    [
        ("cycle20_llm_round_trips", format!("≤ {MAX_ROUND_TRIPS}")),
        (
            "cycle20_prompt_tokens",
            format!("≤ {}", grouped(MAX_PROMPT_TOKENS)),
        ),
        ("cycle20_forge_requests", format!("≤ {MAX_FORGE_REQUESTS}")),
        ("plan_round_trips", format!("≤ {MAX_PLAN_ROUND_TRIPS}")),
        (
            "reflection_prompt_tokens",
            format!("< {MAX_REFLECTION_TOKENS}"),
        ),
        ("cacheable_prefix_share", format!("≥ {MIN_PREFIX_SHARE}")),
    ]
}

/// `60000` → `60,000`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
