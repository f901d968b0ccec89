//! `replan demo [--dir DIR]`: the main job on the embedded default.

use super::args::DemoArgs;
use crate::app::exit::{CliError, Exit};
use crate::history::entry::RunStatus;

pub async fn run(args: DemoArgs) -> Result<Exit, CliError> {
    let report = crate::engine::demo::run_demo(args.dir)
        .await
        .map_err(|e| CliError::failure(e.to_string()))?;
    println!("{report}");
    match report.status {
        RunStatus::Failed => Err(CliError::failure(
            "the demo cycle failed; see the notices above",
        )),
        _ => Ok(Exit::Ok),
    }
}
