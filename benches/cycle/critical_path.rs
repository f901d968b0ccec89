//! `critical_path_efficiency` (issue 40): what Replan adds to the wait a user cannot avoid.
//!
//! The release binary runs a plan of 4 independent chains of 5 subtasks (`max_parallel` 4)
//! against a model that answers every call after a fixed latency (`REPLAN_BENCH_LATENCY_MS`,
//! default 500), calls made together waiting together. The longest chain's calls cannot overlap:
//! the planning call, that chain's subtask calls, and the calls after the subtasks (review,
//! completion). Efficiency = those calls × latency / wall time: 1.0 means Replan adds nothing,
//! and a scheduler that ran the chains in waves would fall far below it.

use std::path::Path;
use std::time::Duration;

use crate::llm::Recorded;
use crate::world::World;

pub const SUBTASKS: usize = 20;
pub const CHAINS: usize = 4;

/// The model's latency: `REPLAN_BENCH_LATENCY_MS`, default 500 ms.
pub fn latency() -> Duration {
    let ms = std::env::var("REPLAN_BENCH_LATENCY_MS")
        .ok()
        .map(|v| {
            v.parse::<u64>().unwrap_or_else(|_| {
                panic!("REPLAN_BENCH_LATENCY_MS={v} is not a number of milliseconds, e.g. 500")
            })
        })
        .unwrap_or(500);
    Duration::from_millis(ms)
}

pub struct Run {
    pub wall_ms: f64,
    pub round_trips: usize,
    /// Calls on the longest chain: those of no subtask, plus the busiest chain's.
    pub critical_trips: usize,
    pub efficiency: f64,
}

/// The subtask a request works on (its execute or judge turn names it), if any.
fn subtask_of(request: &Recorded) -> Option<usize> {
    let texts = crate::llm::prompt_texts(&request.body);
    texts.iter().find_map(|t| {
        ["Execute subtask `task_", "Judge whether subtask `task_"]
            .iter()
            .find_map(|mark| {
                let rest = &t[t.find(mark)? + mark.len()..];
                rest[..rest.find('`')?].parse().ok()
            })
    })
}

/// The calls on the longest dependency chain of `requests`.
pub fn critical_trips(requests: &[Recorded]) -> usize {
    let mut per_chain = [0usize; CHAINS];
    let mut shared = 0;
    for request in requests {
        match subtask_of(request) {
            Some(k) => per_chain[(k - 1) % CHAINS] += 1,
            None => shared += 1,
        }
    }
    shared + per_chain.iter().max().copied().unwrap_or(0)
}

pub fn measure(world: &mut World, latency: Duration) -> Run {
    let llm = crate::scenario::chains_llm(SUBTASKS, CHAINS, latency);
    world.fresh_checkout();
    let (_, payload) = world.new_issue("Write the notes", "Four independent chains of notes.");
    let mut env = world.env(&llm, &payload);
    env.insert("REPLAN_EXECUTION__MAX_PARALLEL".into(), CHAINS.to_string());
    let result = world.run_binary(Path::new(crate::world::REPLAN), &env);
    let (requests, unmatched, _) = llm.take();
    crate::check_completed(&result, SUBTASKS, &unmatched);
    let wall_ms = result.wall.as_secs_f64() * 1e3;
    let critical = critical_trips(&requests);
    Run {
        wall_ms,
        round_trips: requests.len(),
        critical_trips: critical,
        efficiency: critical as f64 * latency.as_secs_f64() * 1e3 / wall_ms,
    }
}
