//! `replan plan validate FILE`.

use super::args::PlanCommand;
use crate::app::exit::{CliError, Exit};
use crate::plan::file::validate_file;
use crate::plan::validate::ValidationRules;

/// Exit 0 when the plan is valid, 1 when it has problems (like a linter), 2 when the file cannot be read.
pub fn run(cmd: PlanCommand) -> Result<Exit, CliError> {
    match cmd {
        PlanCommand::Validate { file, max_subtasks } => {
            let rules = ValidationRules {
                max_subtasks,
                known_tools: None,
            };
            let report =
                validate_file(&file, &rules).map_err(|e| CliError::usage(e.to_string()))?;
            print!("{report}");
            Ok(if report.is_valid() {
                Exit::Ok
            } else {
                Exit::Failure
            })
        }
    }
}
