//! Command-line arguments (clap derive). Parsing only: the handlers live beside this file.

use crate::history::export::ExportFormat;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "replan",
    version,
    about = "A planning agent that lives in CI: plans an issue, executes the plan with tools, \
             replans when needed, and keeps one checklist comment up to date.",
    long_about = None,
    after_help = "Exit codes: 0 done or waiting for a person, 1 Replan failed, 2 usage or configuration error.\n\
                  Logging: RUST_LOG=replan=debug or --verbose. Docs: README.md."
)]
pub struct Cli {
    /// More log output (repeat for trace). RUST_LOG overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one planning cycle for the issue or comment that triggered the job.
    Run(RunArgs),
    /// Run the main job on an embedded sample issue: scripted LLM, local forge, no keys, no network.
    Demo(DemoArgs),
    /// Show, export, summarise or prune a thread's planning history.
    #[command(subcommand)]
    History(HistoryCommand),
    /// Show the merged configuration and where each value came from.
    Config(ConfigArgs),
    /// Check plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Perform the writes a `replan run --bundle DIR` recorded (split-trust mode; no LLM call).
    Publish(PublishArgs),
    /// Read a local run's thread: the issue and its comments.
    #[command(subcommand)]
    Thread(ThreadCommand),
}

#[derive(Debug, Subcommand)]
pub enum ThreadCommand {
    /// Print a local thread's title, body and comments, oldest first.
    Show {
        /// The local forge directory of the runs [default: ./.replan].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Thread as `issues/12`, `pulls/7`, `merge_requests/3`, or a bare issue number.
        #[arg(value_name = "THREAD")]
        thread: String,
    },
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The directory `replan run --bundle DIR` wrote. Run from the workspace.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// The thread to publish for when this job's own event names none (a local publish); every
    /// write addressed elsewhere is refused. In CI the event names it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub issue: Option<u64>,

    /// The agent job's `bundle_digest` step output; a bundle whose digest differs is refused
    /// [env: REPLAN_BUNDLE_DIGEST].
    #[arg(long, value_name = "HEX")]
    pub digest: Option<String>,

    /// GitLab fan-out: after publishing a `--stage plan|join` bundle, write the next wave's child
    /// pipeline (a subtask agent/publish pair per id of the bundle's matrix, then the join's) to
    /// FILE, for the trigger job to start.
    #[arg(long, value_name = "FILE")]
    pub pipeline_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WorkspaceArgs {
    /// The checked-out repository [default: $GITHUB_WORKSPACE, $CI_PROJECT_DIR, or the current directory].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Configuration file [default: .github/replan.yml or .replan.yml in the workspace].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Set a configuration key, e.g. `--set planning.max_subtasks=20` (repeatable; highest precedence).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,

    /// Issue number for a local run (in CI the event payload names it); 1 or more.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub issue: Option<u64>,

    /// Issue title for a local run.
    #[arg(long)]
    pub title: Option<String>,

    /// Issue body for a local run (`@FILE` reads it from a file).
    #[arg(long)]
    pub body: Option<String>,

    /// Add this comment to the local thread as its writer and run the cycle on it, as the forge
    /// would (`/replan tasks`, `/resume`, an answer); repeatable, in order.
    #[arg(long, value_name = "TEXT")]
    pub comment: Vec<String>,

    /// Directory holding the local forge and history for a local run [default: <workspace>/.replan].
    #[arg(long, value_name = "DIR")]
    pub local_dir: Option<PathBuf>,

    /// Split-trust mode: make no forge writes; record them (comments, checklist, history, the
    /// pull request's branch as a git bundle, step outputs) in DIR for `replan publish DIR`.
    #[arg(long, value_name = "DIR")]
    pub bundle: Option<PathBuf>,

    /// Run one part of the cycle, for a fan-out over CI jobs: `plan` (plan, write the matrix of
    /// ready subtasks), `subtask` (run `--subtask ID`, push its branch), `join` (merge the
    /// subtasks' branches, go on: the next matrix or completion) [default: the whole cycle].
    #[arg(long, value_enum, value_name = "STAGE")]
    pub stage: Option<StageArg>,

    /// The subtask a `--stage subtask` job runs (an id of the matrix).
    #[arg(long, value_name = "ID")]
    pub subtask: Option<String>,

    /// Also write the matrix `{"subtask": [ids...]}` of `--stage plan`/`join` to FILE (on GitHub
    /// it always goes to the `matrix` step output).
    #[arg(long, value_name = "FILE")]
    pub matrix_out: Option<PathBuf>,

    /// Write a GitLab child pipeline with one job per ready subtask and the join to FILE.
    #[arg(long, value_name = "FILE")]
    pub pipeline_out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum StageArg {
    Plan,
    Subtask,
    Join,
}

impl StageArg {
    pub fn name(self) -> crate::app::stage::StageName {
        use crate::app::stage::StageName;
        match self {
            StageArg::Plan => StageName::Plan,
            StageArg::Subtask => StageName::Subtask,
            StageArg::Join => StageName::Join,
        }
    }
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to write the sample repository, local forge and history [default: a new temporary directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ThreadArgs {
    /// Directory that holds `planning_history/` for local runs [default: ./.replan].
    #[arg(long, value_name = "DIR", conflicts_with = "branch")]
    pub dir: Option<PathBuf>,

    /// Read the history from this branch of the git repository in the current directory
    /// (e.g. `replan-history` after `git fetch origin replan-history:replan-history`).
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,

    /// Thread as `issues/12`, `pulls/7`, `merge_requests/3`, or a bare issue number.
    #[arg(value_name = "THREAD")]
    pub thread: String,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Print the replayed state of a thread: plan, task states, pending question, counters.
    Show(ThreadArgs),
    /// Export a thread's history.
    Export {
        #[command(flatten)]
        thread: ThreadArgs,
        #[arg(long, value_enum, default_value = "md")]
        format: ExportFormat,
    },
    /// Replans by phase and type, overrides, success rate, tokens.
    Stats {
        #[command(flatten)]
        thread: ThreadArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Archive and remove threads whose newest entry is older than the retention period.
    Prune {
        /// Directory that holds `planning_history/` [default: ./.replan].
        #[arg(long, value_name = "DIR", conflicts_with = "branch")]
        dir: Option<PathBuf>,
        /// Prune the history on this branch of the git repository in the current directory.
        #[arg(long, value_name = "BRANCH")]
        branch: Option<String>,
        /// Show what would be archived without changing anything.
        #[arg(long)]
        dry_run: bool,
        /// Age in days [default: `history.retention_days` of the workspace's configuration, 90].
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u64>,
        /// Where archived files go [default: <dir>/archive].
        #[arg(long, value_name = "DIR")]
        archive: Option<PathBuf>,
        /// The configuration that sets `history.retention_days`.
        #[command(flatten)]
        workspace: WorkspaceArgs,
    },
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,

    /// Print every value with the source that set it.
    #[arg(long)]
    pub explain: bool,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Validate a plan file (a plan, or a seed "planning" response): ids, dependencies, cycles, order.
    Validate {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Maximum number of subtasks.
        #[arg(long, default_value_t = 100)]
        max_subtasks: usize,
    },
}
