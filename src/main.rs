use clap::Parser;
use replan::cli::{self, Cli};
use std::process::ExitCode;

// musl's allocator (the release binary is static musl) takes one lock for every allocation, and
// glibc's contends when one thread frees what another allocated, as history replay does (its
// parsing threads hand entries to the thread that applies them). mimalloc keeps per-thread free
// lists: `history show` of a 100k-entry thread took 0.38-0.47 s with musl's, 0.13-0.21 s with
// it. Built without transparent huge pages (`no_thp`): with them, every fresh page of the
// replay's heap was a 2 MiB page the kernel zeroed, slower and half again the memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The secret set is read from the environment before anything else runs, and no other
    // process of this user may read our memory or environment from /proc.
    replan::outbound::init();
    replan::sandbox::make_process_non_dumpable();
    replan::sandbox::environ::hide_environment();
    // Only ring is compiled in, but installing it explicitly keeps rustls from ever having to guess.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let stdio = match replan::outbound::stdio::interpose() {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("error: could not set up the redaction of stdout and stderr: {e}");
            return ExitCode::from(1);
        }
    };
    let code = run(cli);
    drop(stdio);
    ExitCode::from(code)
}

fn run(cli: Cli) -> u8 {
    cli::logging::init(cli.verbose);
    // One thread: a run waits on the network and on child processes, not on the CPU, and every
    // hand-off between a runtime's threads costs wake-ups (issue 15's cycle overhead: about a
    // tenth less CPU per cycle). Blocking work still goes to tokio's blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(cli::dispatch(cli)) {
        Ok(exit) => exit.code(),
        Err(err) => {
            eprintln!("error: {err}");
            err.exit.code()
        }
    }
}
