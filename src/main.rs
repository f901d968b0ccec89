use clap::Parser;
use replan::cli::{self, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Only ring is compiled in, but installing it explicitly keeps rustls from ever having to guess.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    cli::logging::init(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(cli::dispatch(cli)) {
        Ok(exit) => exit.into(),
        Err(err) => {
            eprintln!("error: {err}");
            err.exit.into()
        }
    }
}
