//! `cargo bench --bench cycle`: what a Replan cycle adds to the user's wait (issues 9, 40).
//!
//! Runs the release `replan` binary as GitHub Actions would, against the fake GitHub on loopback
//! and a scripted LLM (zero latency, or a fixed latency for the critical path), the fan-out's
//! plan and join stages on a local bare remote, and the library's history replay and checklist
//! render. Prints markdown tables on stdout and the keys of BENCHMARKS.md as JSON
//! (`REPLAN_BENCH_JSON=FILE`). Not part of `.ci/run`.

#[path = "../../tests/all/support/mod.rs"]
mod support;

#[path = "../common/quiet.rs"]
mod quiet;

mod checked;
mod checklist;
mod critical_path;
mod demo;
mod fanout;
mod llm;
mod replay;
mod report;
mod scenario;
mod startup;
mod stats;
mod targets;
mod tokens;
mod wire;
mod world;

use std::path::Path;
use std::time::{Duration, Instant};

use replan::config::PlanningMode;
use replan::llm::scenario::{Scenario, ScenarioMode};

use llm::ScriptedLlm;
use report::Report;
use stats::Samples;
use tokens::{CycleTokens, analyse, from_wire};
use world::World;

// The product binary's allocator (src/main.rs), so that the replay child, which is this binary,
// allocates as the product does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub(crate) const E2E_SCENARIO: &str = include_str!("../../tests/scenarios/github_e2e_base.yaml");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == replay::CHILD_FLAG) {
        replay::child(Path::new(&args[i + 1]));
        return;
    }
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs bench targets without `--bench`: nothing to do there.
        println!("run it with `cargo bench --bench cycle`");
        return;
    }
    let quick = std::env::var("REPLAN_BENCH_QUICK").is_ok_and(|v| v == "1");
    let started = Instant::now();
    // `REPLAN_BENCH_ONLY=critical_path` or `=fanout`: that part alone, its keys on stderr.
    if let Ok(only) = std::env::var("REPLAN_BENCH_ONLY") {
        let mut report = Report::default();
        match only.as_str() {
            "critical_path" => critical_path(quick, &mut report),
            "fanout" => fanout::report(&mut report),
            other => panic!("REPLAN_BENCH_ONLY={other}: use critical_path or fanout"),
        }
        report.print();
        return;
    }
    machine();

    let mut template = String::new();
    let mut report = Report::default();
    let trips20 = cycles(quick, &mut template, &mut report);
    checked::report(quick, trips20, &mut report);
    instructions_prefix_share();
    critical_path(quick, &mut report);
    fanout::report(&mut report);
    if let Some(other) = std::env::var_os("REPLAN_BENCH_AB") {
        let zero = scenario::cycle_llm(20, Duration::ZERO);
        interleaved_cycle20(Path::new(&other), &zero, if quick { 8 } else { 20 });
        let slow = scenario::cycle_llm(20, MODEL_LATENCY);
        interleaved_cycle20(Path::new(&other), &slow, if quick { 3 } else { 8 });
    }
    model_latency_cycle20(quick);
    wire::check();
    planning_modes();
    replays(quick, &template, &mut report);
    checklist_render();
    start_up(quick, &mut report);
    report.write();
    eprintln!("bench finished in {:.1} s", started.elapsed().as_secs_f64());
}

fn sh(command: &str) -> String {
    std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn machine() {
    println!("## Machine\n");
    println!("| | |\n| --- | --- |");
    println!("| date | {} |", sh("date -u +%Y-%m-%dT%H:%MZ"));
    println!(
        "| CPU | {} |",
        sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
    );
    println!("| nproc | {} |", sh("nproc"));
    println!(
        "| memory | {} |",
        sh("grep MemTotal /proc/meminfo | awk '{printf \"%.1f GiB\", $2/1048576}'")
    );
    println!("| kernel | {} |", sh("uname -sr"));
    println!("| rustc | {} |", sh("rustc --version"));
    println!("| binary | `{}` (bench profile = release) |", world::REPLAN);
    println!();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Whole `replan run` cycles for 5, 20 and 100 subtasks, without checks (the repository has no
/// `verify` and no manifest to detect one from); returns the 20-subtask cycle's round trips.
fn cycles(quick: bool, template: &mut String, report: &mut Report) -> usize {
    println!("## Whole cycle (`replan run` on an `issues.opened` event)\n");
    println!(
        "Wall = spawn to exit of the release binary; \"minus LLM\" subtracts the time the scripted \
         server spent answering (its handler, not the loopback round trip). CPU = user + system \
         time of `replan` and the `git` processes it ran. Median (min) of the repetitions.\n"
    );
    println!(
        "| subtasks | reps | LLM round trips | forge requests | wall ms | wall minus LLM ms | CPU ms | peak RSS MiB |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut tokens20, mut trips20) = (None, 0);
    // Each size's files are removed after the last size is measured, not before the next one
    // starts (see `World::fresh_checkout`).
    let mut finished = Vec::new();
    for (n, reps) in [(5usize, 7usize), (20, 7), (100, 3)] {
        let reps = if quick { 2 } else { reps };
        let llm = scenario::cycle_llm(n, Duration::ZERO);
        let mut world = World::new();
        let (mut wall, mut net, mut rss) = (Samples::default(), Samples::default(), 0i64);
        let mut cpu = Samples::default();
        let (mut trips, mut forge_requests) = (0, 0);
        for rep in 0..reps {
            let CycleRun {
                number,
                result,
                requests,
                model_ms,
            } = run_cycle(&mut world, &llm, Path::new(world::REPLAN), n);
            assert!(
                rep == 0 || requests.len() == trips,
                "every repetition makes the same LLM requests ({} then {})",
                trips,
                requests.len()
            );
            wall.push(ms(result.wall));
            cpu.push(ms(result.cpu));
            net.push(ms(result.wall) - model_ms);
            rss = rss.max(result.max_rss_kib);
            trips = requests.len();
            forge_requests = world.fake.requests().len();
            if rep == 0 && n == 20 {
                *template = world.history(number);
                tokens20 = Some(analyse(&from_wire(&requests)));
            }
        }
        if n == 20 {
            trips20 = trips;
            // What the zero-latency cycle takes, against what its calls take at 1 s each.
            report.set("overhead_share_1s", wall.median() / (trips as f64 * 1000.0));
        }
        if n == 100 {
            report.set("cycle100_peak_rss_mib", rss as f64 / 1024.0);
        }
        println!(
            "| {n} | {reps} | {trips} | {forge_requests} | {:.1} ({:.1}) | {:.1} ({:.1}) | {:.1} | {:.1} |",
            wall.median(),
            wall.min(),
            net.median(),
            net.min(),
            cpu.median(),
            rss as f64 / 1024.0
        );
        finished.push(world);
    }
    println!();
    drop(finished);
    if let Some(t) = tokens20 {
        println!("Tokens of the 20-subtask cycle (single-call planning):\n");
        token_table_header();
        token_row("synthetic, 20 subtasks", "single call", &t);
        println!();
        by_kind("20 subtasks", &t);
    }
    trips20
}

/// The checked 20-subtask cycle in a repository with a 4 KiB `AGENTS.md` (issue 38): the
/// instructions head every request's system prompt, so the cacheable prefix share stays at 0.8 or
/// more.
fn instructions_prefix_share() {
    let llm = scenario::checked_cycle_llm(20, checked::CHECK, Duration::ZERO);
    let mut world = checked::world().agents_md(4096);
    let run = run_cycle(&mut world, &llm, Path::new(world::REPLAN), 20);
    assert!(
        run.requests
            .iter()
            .all(|r| r.body.to_string().contains("Keep each change small")),
        "the AGENTS.md is in every request"
    );
    let t = analyse(&from_wire(&run.requests));
    println!("Tokens of the checked 20-subtask cycle with a 4 KiB `AGENTS.md`:\n");
    token_table_header();
    token_row(
        "synthetic, 20 subtasks, `notes` check, 4 KiB AGENTS.md",
        "single call",
        &t,
    );
    println!();
    assert!(
        t.previous_prefix_share >= 0.8,
        "with a 4 KiB AGENTS.md the cacheable prefix share fell to {:.3} (issue 38 wants >= 0.8)",
        t.previous_prefix_share
    );
}

/// `critical_path_efficiency`: 4 chains of 5 subtasks at the model's latency (median of runs).
fn critical_path(quick: bool, report: &mut Report) {
    let latency = critical_path::latency();
    let runs = if quick { 1 } else { 3 };
    println!(
        "## Critical path: {} chains of {} subtasks, max_parallel {}, model latency {} ms\n",
        critical_path::CHAINS,
        critical_path::SUBTASKS / critical_path::CHAINS,
        critical_path::CHAINS,
        latency.as_millis()
    );
    println!("| run | round trips | on the longest chain | wall ms | efficiency |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let mut world = World::new();
    let mut efficiency = Samples::default();
    for run in 1..=runs {
        let r = critical_path::measure(&mut world, latency);
        println!(
            "| {run} | {} | {} | {:.0} | {:.3} |",
            r.round_trips, r.critical_trips, r.wall_ms, r.efficiency
        );
        efficiency.push(r.efficiency);
    }
    println!();
    report.set("critical_path_efficiency", efficiency.median());
}

/// `REPLAN_BENCH_AB=<another replan binary>`: the 20-subtask cycle with this build and that one
/// in turn, run after run, so both see the same machine (a shared VM's speed drifts by half
/// within minutes, and separate bench runs do not compare); with the zero-latency model and
/// with one that answers in [`MODEL_LATENCY`] (where the work beside the model's calls drops out).
fn interleaved_cycle20(other: &Path, llm: &ScriptedLlm, pairs: usize) {
    println!(
        "## The 20-subtask cycle, interleaved with `{}`, model latency {} ms\n",
        other.display(),
        llm.latency().as_millis()
    );
    println!("| binary | runs | wall minus LLM ms, median (min) | CPU ms, median |");
    println!("| --- | ---: | ---: | ---: |");
    let mut world = World::new();
    let binaries = [Path::new(world::REPLAN), other];
    let mut net = [Samples::default(), Samples::default()];
    let mut cpu = [Samples::default(), Samples::default()];
    for _ in 0..pairs {
        for (i, binary) in binaries.iter().enumerate() {
            let run = run_cycle(&mut world, llm, binary, 20);
            net[i].push(ms(run.result.wall) - run.model_ms);
            cpu[i].push(ms(run.result.cpu));
        }
    }
    for (i, binary) in binaries.iter().enumerate() {
        println!(
            "| `{}` | {pairs} | {:.1} ({:.1}) | {:.1} |",
            binary.display(),
            net[i].median(),
            net[i].min(),
            cpu[i].median()
        );
    }
    println!();
}

/// The 20-subtask cycle with a model that takes `MODEL_LATENCY` per answer. With the
/// zero-latency model every part of the cycle is on the path; here the work that runs beside the
/// model's calls (the last save of the work branch beside the final review and the completion
/// summary, history commits beside the next call) drops out of "wall minus LLM", which is then
/// what a user waits for beyond the model. Not a key of the bench JSON: the key keeps the
/// zero-latency model.
/// The model latency of the rows that show what the model's time hides.
const MODEL_LATENCY: Duration = Duration::from_millis(25);

fn model_latency_cycle20(quick: bool) {
    let runs = if quick { 2 } else { 5 };
    println!(
        "## The 20-subtask cycle with a model that answers in {} ms\n",
        MODEL_LATENCY.as_millis()
    );
    println!(
        "| runs | LLM round trips | wall ms, median | model ms | wall minus LLM ms, median (min) |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let llm = scenario::cycle_llm(20, MODEL_LATENCY);
    let mut world = World::new();
    let (mut wall, mut net, mut model, mut trips) =
        (Samples::default(), Samples::default(), 0.0, 0);
    for _ in 0..runs {
        let run = run_cycle(&mut world, &llm, Path::new(world::REPLAN), 20);
        wall.push(ms(run.result.wall));
        net.push(ms(run.result.wall) - run.model_ms);
        (model, trips) = (run.model_ms, run.requests.len());
    }
    println!(
        "| {runs} | {trips} | {:.1} | {model:.1} | {:.1} ({:.1}) |",
        wall.median(),
        net.median(),
        net.min()
    );
    println!();
}

/// One run of the synthetic cycle, as the cycle rows, the A/B and the latency row make it.
struct CycleRun {
    number: u64,
    result: world::RunResult,
    requests: Vec<llm::Recorded>,
    /// The time the model's server spent answering (subtracted for "wall minus LLM").
    model_ms: f64,
}

/// `binary` runs the `n`-subtask cycle on a new issue, from the initial commit, with the forge's
/// request log cleared first; the run must complete.
fn run_cycle(world: &mut World, llm: &ScriptedLlm, binary: &Path, n: usize) -> CycleRun {
    world.fresh_checkout();
    let (number, payload) = world.new_issue("Write the notes", "One notes file per step.");
    let env = world.env(llm, &payload);
    world.fake.clear_requests();
    let result = world.run_binary(binary, &env);
    let (requests, unmatched, handler) = llm.take();
    check_completed(&result, n, &unmatched);
    CycleRun {
        number,
        result,
        requests,
        model_ms: ms(handler),
    }
}

pub(crate) fn check_completed(result: &world::RunResult, n: usize, unmatched: &[String]) {
    let done = result
        .outputs
        .get("tasks_done")
        .cloned()
        .unwrap_or_default();
    let status = result.outputs.get("status").cloned().unwrap_or_default();
    if result.exit_code != 0 || status != "completed" || done != n.to_string() {
        panic!(
            "the {n}-subtask cycle did not complete: exit {}, status `{status}`, tasks_done `{done}`\n\
             unmatched prompts: {}\n--- stderr\n{}",
            result.exit_code,
            unmatched.len(),
            result.stderr
        );
    }
}

fn token_table_header() {
    println!(
        "| scenario | planning mode | round trips | to a validated plan | prompt tokens | completion tokens | planning prompt tokens | reflection prompt tokens | cacheable prefix share | prefix common to all |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
}

fn list(v: &[usize]) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let max = v.iter().max().copied().unwrap_or(0);
    let min = v.iter().min().copied().unwrap_or(0);
    if v.len() == 1 || min == max {
        format!("{max}")
    } else {
        format!("{min}–{max} ({} calls)", v.len())
    }
}

fn token_row(name: &str, mode: &str, t: &CycleTokens) {
    println!(
        "| {name} | {mode} | {} | {} | {} | {} | {} | {} | {:.0} % | {:.0} % |",
        t.round_trips,
        t.to_validated_plan,
        t.prompt_tokens,
        t.completion_tokens,
        list(&t.planning_prompt_tokens),
        list(&t.reflection_prompt_tokens),
        t.cacheable_share * 100.0,
        t.common_prefix_share * 100.0
    );
}

fn by_kind(name: &str, t: &CycleTokens) {
    let parts: Vec<String> = t
        .by_kind
        .iter()
        .map(|(k, calls, tokens)| format!("{k} {calls}× / {tokens} tok"))
        .collect();
    println!("Requests by kind ({name}): {}\n", parts.join(", "));
}

/// Round trips and tokens of the bundled scenarios in both planning modes.
fn planning_modes() {
    println!("## LLM round trips and tokens per cycle\n");
    println!(
        "Tokens are estimated at 4 characters a token (the scripted model reports no real usage) \
         and include the tool and response-schema definitions sent with each request. \
         \"Cacheable prefix share\": for each request, the longest prefix of its system prompt + \
         messages that an earlier request of the same cycle already sent, summed over the cycle \
         and divided by all prompt text. \"Common to all\": the prefix every request of the cycle \
         shares, over the mean prompt.\n"
    );
    token_table_header();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut kinds = Vec::new();
    let mut anatomy = Vec::new();
    for (mode, label) in [
        (PlanningMode::SingleCall, "single call"),
        (PlanningMode::PerPhase, "per phase"),
    ] {
        let (prompts, status) = runtime.block_on(demo::run(mode));
        assert_eq!(
            status,
            replan::history::entry::RunStatus::Completed,
            "the demo cycle completes"
        );
        let t = analyse(&prompts);
        token_row("sample issue (`replan demo`, in-process)", label, &t);
        for kind in ["planning", "reflection"] {
            if let Some(line) = tokens::anatomy(&prompts, kind) {
                anatomy.push(format!("sample issue, {label}, {line}"));
            }
        }
        kinds.push((format!("sample issue, {label}"), t));
    }
    let mut e2e = Scenario::from_yaml(E2E_SCENARIO).expect("e2e scenario");
    e2e.mode = ScenarioMode::Matched;
    for (mode, label) in [("single_call", "single call"), ("per_phase", "per phase")] {
        let llm = ScriptedLlm::start(e2e.clone(), None);
        let mut world = World::new();
        let (number, payload) = world.new_issue("Add a hello file", "Please add hello.md.");
        world.prepare_pull_request_branch(number);
        let mut env = world.env(&llm, &payload);
        env.insert("REPLAN_PLANNING__MODE".into(), mode.into());
        let result = world.run(&env);
        let (requests, unmatched, _) = llm.take();
        check_completed(&result, 2, &unmatched);
        let t = analyse(&from_wire(&requests));
        token_row("hello file (GitHub e2e, wire)", label, &t);
        kinds.push((format!("hello file, {label}"), t));
    }
    let n = 20;
    let llm = scenario::cycle_llm(n, Duration::ZERO);
    let mut world = World::new();
    let (_, payload) = world.new_issue("Write the notes", "One notes file per step.");
    let mut env = world.env(&llm, &payload);
    env.insert("REPLAN_PLANNING__MODE".into(), "per_phase".into());
    let result = world.run(&env);
    let (requests, unmatched, _) = llm.take();
    check_completed(&result, n, &unmatched);
    let prompts = from_wire(&requests);
    let t = analyse(&prompts);
    token_row("synthetic, 20 subtasks (wire)", "per phase", &t);
    if let Some(line) = tokens::anatomy(&prompts, "reflection") {
        anatomy.push(format!("synthetic 20 subtasks, {line}"));
    }
    println!();
    for line in &anatomy {
        println!("- {line}");
    }
    println!();
    for (name, t) in &kinds {
        by_kind(name, t);
    }
}

fn replays(quick: bool, template: &str, report: &mut Report) {
    println!(
        "## History replay (read, then parse and replay entry by entry as the product loads a \
         thread, one child process per size)\n"
    );
    println!(
        "The history of the 20-subtask cycle ({} entries) repeated as successive runs on one \
         thread. Peak RSS is the child's VmHWM (its baseline before reading: the bench binary \
         itself). Median (min) of 3 children.\n",
        replan::history::jsonl::parse(template).entries.len()
    );
    println!(
        "| entries | file MB | total ms | parse + replay ms | µs/entry | peak RSS MiB | over baseline MiB |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    // `REPLAN_BENCH_HISTORY_DIR` keeps the generated files, to profile the replay child on them.
    let temp = tempfile::TempDir::new().expect("temp dir");
    let dir = std::env::var_os("REPLAN_BENCH_HISTORY_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    for count in [1_000usize, 10_000, 100_000] {
        let row = replay::measure(&dir, template, count, if quick { 1 } else { 3 });
        if count == 100_000 {
            report.set("replay100k_ms", row.total_ms.median());
        }
        println!(
            "| {} | {:.1} | {:.1} ({:.1}) | {:.1} | {:.2} | {:.1} | {:.1} |",
            row.entries,
            row.megabytes,
            row.total_ms.median(),
            row.total_ms.min(),
            row.parse_ms.median(),
            row.total_ms.median() * 1e3 / count as f64,
            row.peak_rss_kib as f64 / 1024.0,
            (row.peak_rss_kib.saturating_sub(row.base_rss_kib)) as f64 / 1024.0
        );
    }
    println!();
}

fn checklist_render() {
    println!("## Checklist render\n");
    let row = checklist::measure(100, 10, 300);
    println!("| subtasks | revisions | body KB | iterations | median µs | min µs | max µs |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| 100 | {} | {:.1} | {} | {:.0} | {:.0} | {:.0} |",
        row.revision_count,
        row.bytes as f64 / 1e3,
        row.micros.len(),
        row.micros.median(),
        row.micros.min(),
        row.micros.max()
    );
    println!();
}

fn start_up(quick: bool, report: &mut Report) {
    println!("## Start-up (spawn → first LLM request, local run)\n");
    let llm = scenario::cycle_llm(5, Duration::ZERO);
    let samples = startup::measure(&llm, if quick { 5 } else { 25 });
    report.set("startup_ms", samples.median());
    println!("| runs | median ms | min ms | max ms |");
    println!("| ---: | ---: | ---: | ---: |");
    println!(
        "| {} | {:.1} | {:.1} | {:.1} |",
        samples.len(),
        samples.median(),
        samples.min(),
        samples.max()
    );
    println!();
}
