//! The 20-subtask cycle with one `each_task` check per subtask (issue 37): the LLM-economy keys
//! are measured on it, and what the checks cost is reported beside them, not inside them.
//!
//! The repository's `.replan.yml` has one check, `notes`, run after every subtask that changed
//! files (each subtask writes `notes/task_k.md`, so it runs once per subtask) and on the final
//! tree (where the last subtask's passing run on that same tree is reused, not run again). It
//! proves the subtasks' changes: it fails, naming the file, when a notes file lacks its `done`
//! line, and when there is no notes file at all.

use std::path::Path;
use std::time::Duration;

use replan::history::check::CheckRecord;
use replan::history::entry::EntryBody;

use crate::report::Report;
use crate::scenario;
use crate::stats::Samples;
use crate::targets::*;
use crate::tokens::{CycleTokens, analyse, from_wire};
use crate::world::{self, World};
use crate::{ms, run_cycle, token_row, token_table_header};

pub const CHECK: &str = "notes";

/// The repository configuration: the `notes` check, an exact argv run without a shell of
/// Replan's (the `sh` here is the check's own program), in `run_command`'s sandbox.
pub const REPLAN_YML: &str = "verify:\n  - name: notes\n    argv: [sh, -c, 'set -- notes/*.md; \
     test -f \"$1\" || { echo no notes file; exit 1; }; ! grep -Lx done \"$@\" | grep .']\n    \
     when: each_task\n";

/// A world whose repository has the `notes` check.
pub fn world() -> World {
    World::new().committed(".replan.yml", REPLAN_YML, "verify the notes")
}

/// What the checks of one run cost, from its history.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckCost {
    /// Check processes run (a final record that reuses a subtask's passing run on the same
    /// tree is not a run).
    pub runs: usize,
    /// Of those, the runs after a subtask's attempt.
    pub each_task_runs: usize,
    /// Their summed durations as recorded (the check process, spawn to exit).
    pub ms: u64,
    /// Every recorded check passed.
    pub all_passed: bool,
}

pub fn cost(history: &str) -> CheckCost {
    let records: Vec<CheckRecord> = replan::history::jsonl::parse(history)
        .entries
        .into_iter()
        .filter_map(|e| match e.body {
            EntryBody::Check(c) => Some(*c),
            _ => None,
        })
        .collect();
    let (tasks, finals): (Vec<&CheckRecord>, Vec<&CheckRecord>) =
        records.iter().partition(|r| r.task_id.is_some());
    // The final verification's rule (engine::evidence::final_state): a passing subtask run of the
    // same check on the same tree is the final evidence, copied into a new entry.
    let reused = |f: &&CheckRecord| {
        tasks
            .iter()
            .any(|t| t.name == f.name && t.passed() && t.tree.is_some() && t.tree == f.tree)
    };
    let ran: Vec<&CheckRecord> = tasks
        .iter()
        .copied()
        .chain(finals.iter().copied().filter(|f| !reused(f)))
        .collect();
    CheckCost {
        runs: ran.len(),
        each_task_runs: tasks.len(),
        ms: ran.iter().map(|r| r.duration_ms).sum(),
        all_passed: records.iter().all(CheckRecord::passed),
    }
}

/// The checked 20-subtask cycle, interleaved with the same cycle without checks (a shared
/// machine's speed drifts within minutes): sets the LLM-economy keys from the checked cycle and
/// the check keys, and panics when a target is missed or a passing check cost a model call.
pub fn report(quick: bool, unchecked_trips: usize, report: &mut Report) {
    let n = 20;
    let reps = if quick { 2 } else { 7 };
    let checked_llm = scenario::checked_cycle_llm(n, CHECK, Duration::ZERO);
    let unchecked_llm = scenario::cycle_llm(n, Duration::ZERO);
    let (mut checked_world, mut unchecked_world) = (world(), World::new());
    let binary = Path::new(world::REPLAN);
    let (mut wall, mut bare_wall) = (Samples::default(), Samples::default());
    let (mut check_ms, mut share) = (Samples::default(), Samples::default());
    let mut first: Option<(CheckCost, CycleTokens, usize)> = None;
    for _ in 0..reps {
        let bare = run_cycle(&mut unchecked_world, &unchecked_llm, binary, n);
        bare_wall.push(ms(bare.result.wall));
        let run = run_cycle(&mut checked_world, &checked_llm, binary, n);
        let cost = cost(&checked_world.history(run.number));
        assert!(
            cost.all_passed && cost.each_task_runs == n,
            "the `{CHECK}` check ran {} times after a subtask (want {n}, every run passing): \
             {cost:?}",
            cost.each_task_runs
        );
        let wall_ms = ms(run.result.wall);
        wall.push(wall_ms);
        check_ms.push(cost.ms as f64);
        share.push(cost.ms as f64 / wall_ms);
        let forge_requests = checked_world.fake.requests().len();
        match &first {
            None => first = Some((cost, analyse(&from_wire(&run.requests)), forge_requests)),
            Some((c, t, _)) => assert!(
                c.runs == cost.runs && t.round_trips == run.requests.len(),
                "every repetition runs the same checks and makes the same model calls"
            ),
        }
    }
    let (cost, t, forge_requests) = first.expect("at least one repetition");
    println!("## The 20-subtask cycle with one `each_task` check per subtask\n");
    println!(
        "`.replan.yml`: the check `{CHECK}` (`sh -c` over `notes/*.md`: every notes file has its \
         `done` line), after each subtask that changed files and on the final tree. Check ms: the \
         check processes as the history records them. Added wall: median wall with the check \
         minus median wall without it, interleaved run by run (the check processes, the tree ids \
         taken before and after each attempt, the `check` entries). Median (min) of {reps}.\n"
    );
    println!(
        "| check runs | of them after a subtask | LLM round trips (without checks) | wall ms | without checks ms | added wall ms | check ms | check share of wall |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {} | {} | {} ({unchecked_trips}) | {:.1} ({:.1}) | {:.1} ({:.1}) | {:.1} | {:.1} ({:.1}) | {:.3} |",
        cost.runs,
        cost.each_task_runs,
        t.round_trips,
        wall.median(),
        wall.min(),
        bare_wall.median(),
        bare_wall.min(),
        wall.median() - bare_wall.median(),
        check_ms.median(),
        check_ms.min(),
        share.median()
    );
    println!();
    println!("Tokens of the checked 20-subtask cycle:\n");
    token_table_header();
    token_row("synthetic, 20 subtasks, `notes` check", "single call", &t);
    println!();
    assert_eq!(
        t.round_trips, unchecked_trips,
        "passing checks changed the model's round trips ({} with, {unchecked_trips} without)",
        t.round_trips
    );
    economy_targets(&t, forge_requests);
    report.set("cycle20_llm_round_trips", t.round_trips as f64);
    report.set("cycle20_prompt_tokens", t.prompt_tokens as f64);
    report.set("cycle20_forge_requests", forge_requests as f64);
    report.set("plan_round_trips", t.to_validated_plan as f64);
    report.set("reflection_prompt_tokens", max_reflection(&t) as f64);
    report.set("cacheable_prefix_share", t.previous_prefix_share);
    report.set("cycle20_checks_run", cost.runs as f64);
    report.set("cycle20_check_ms", check_ms.median());
    report.set("cycle20_check_share", share.median());
    report.set(
        "cycle20_checks_added_ms",
        wall.median() - bare_wall.median(),
    );
}

fn max_reflection(t: &CycleTokens) -> usize {
    t.reflection_prompt_tokens
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
}

/// Panics naming every LLM-economy target the cycle missed.
pub fn economy_targets(t: &CycleTokens, forge_requests: usize) {
    let reflection = max_reflection(t);
    // In the order of `on_the_page`.
    let measured = [
        (t.round_trips <= MAX_ROUND_TRIPS, t.round_trips.to_string()),
        (
            t.prompt_tokens <= MAX_PROMPT_TOKENS,
            t.prompt_tokens.to_string(),
        ),
        (
            forge_requests <= MAX_FORGE_REQUESTS,
            forge_requests.to_string(),
        ),
        (
            t.to_validated_plan <= MAX_PLAN_ROUND_TRIPS,
            t.to_validated_plan.to_string(),
        ),
        (reflection < MAX_REFLECTION_TOKENS, reflection.to_string()),
        (
            t.previous_prefix_share >= MIN_PREFIX_SHARE,
            format!("{:.3}", t.previous_prefix_share),
        ),
    ];
    let missed: Vec<String> = on_the_page()
        .into_iter()
        .zip(measured)
        .filter(|(_, (met, _))| !met)
        .map(|((key, target), (_, value))| format!("`{key}` {value} (target {target})"))
        .collect();
    assert!(
        missed.is_empty(),
        "the checked 20-subtask cycle missed its LLM-economy targets: {}",
        missed.join("; ")
    );
}
