//! The `replan` command line: argument parsing, dispatch and exit codes; nothing else.

pub(crate) mod args;
pub(crate) mod config_cmd;
pub(crate) mod demo_cmd;
pub(crate) mod history_cmd;
pub mod logging;
pub(crate) mod plan_cmd;
pub(crate) mod thread_arg;
pub(crate) mod thread_cmd;
pub(crate) mod workspace;

pub use crate::app::exit::{CliError, Exit};
pub use args::Cli;

use args::Command;

/// Run a parsed command line; errors carry their exit code.
pub async fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    match cli.command {
        Command::Run(args) => {
            let options = crate::app::RunOptions {
                workspace: args.workspace.workspace,
                config: args.workspace.config,
                set: args.workspace.set,
                issue: args.issue,
                title: args.title,
                body: args.body,
                comments: args.comment,
                local_dir: args.local_dir,
                bundle: args.bundle,
                stage: crate::app::stage::StageOptions {
                    stage: args.stage.map(args::StageArg::name),
                    subtask: args.subtask,
                    matrix_out: args.matrix_out,
                    pipeline_out: args.pipeline_out,
                },
            };
            crate::app::run(options, std::env::vars().collect()).await
        }
        Command::Demo(args) => demo_cmd::run(args).await,
        Command::History(cmd) => history_cmd::run(cmd).await,
        Command::Config(args) => config_cmd::run(args).await,
        Command::Plan(cmd) => plan_cmd::run(cmd),
        Command::Publish(args) => {
            let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
            let options = crate::app::bundle::PublishOptions {
                dir: args.dir.clone(),
                issue: args.issue,
                digest: args.digest,
            };
            let exit = crate::app::bundle::publish(options, env.clone()).await?;
            if let Some(path) = &args.pipeline_out {
                crate::app::stage::write_next_wave(&args.dir, &env, path)?;
            }
            Ok(exit)
        }
        Command::Thread(cmd) => thread_cmd::run(cmd).await,
    }
}
