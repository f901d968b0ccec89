//! `replan history show|export|stats|prune`: read a thread's history from a local directory or a
//! git branch.

use super::args::{HistoryCommand, ThreadArgs};
use super::thread_arg::parse_thread;
use super::workspace::load_config;
use crate::app::exit::{CliError, Exit};
use crate::config::HistoryConfig;
use crate::history::export::{self, ExportFormat as Format};
use crate::history::git_branch::GitBranchHistory;
use crate::history::local::LocalHistory;
use crate::history::prune::{PruneOptions, prune};
use crate::history::{HistoryBackend, store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where local runs keep their forge and history unless told otherwise.
pub const DEFAULT_LOCAL_DIR: &str = ".replan";

fn backend(dir: Option<&Path>, branch: Option<&str>) -> Result<Arc<dyn HistoryBackend>, CliError> {
    let directory = HistoryConfig::default().directory;
    if let Some(branch) = branch {
        let repo = std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
        return Ok(Arc::new(GitBranchHistory::new(repo, branch, directory)));
    }
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LOCAL_DIR));
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "history directory `{}` does not exist; pass --dir DIR (the directory that holds planning_history/) \
             or --branch BRANCH to read a git branch",
            dir.display()
        )));
    }
    Ok(Arc::new(LocalHistory::new(dir, directory)))
}

async fn print_export(args: &ThreadArgs, f: Format) -> Result<Exit, CliError> {
    let thread = parse_thread(&args.thread)?;
    let backend = backend(args.dir.as_deref(), args.branch.as_deref())?;
    let loaded = backend
        .load(&thread)
        .await
        .map_err(|e| CliError::failure(e.to_string()))?;
    if loaded.version.is_none() && loaded.text.is_empty() {
        return Err(CliError::usage(format!(
            "no history for {} in this location",
            export::thread_label(&thread)
        )));
    }
    let out = export::export(&thread, &loaded.text, f);
    for line in &out.corrupt {
        eprintln!(
            "warning: skipped corrupt history line {}: {}",
            line.line_no, line.error
        );
    }
    print!("{}", out.body);
    Ok(Exit::Ok)
}

pub async fn run(cmd: HistoryCommand) -> Result<Exit, CliError> {
    match cmd {
        HistoryCommand::Show(args) => {
            let thread = parse_thread(&args.thread)?;
            let backend = backend(args.dir.as_deref(), args.branch.as_deref())?;
            let loaded = store::load(backend.as_ref(), &thread)
                .await
                .map_err(|e| CliError::failure(e.to_string()))?;
            if loaded.entries == 0 && loaded.corrupt.is_empty() {
                return Err(CliError::usage(format!(
                    "no history for {} in this location",
                    export::thread_label(&thread)
                )));
            }
            print!(
                "{}",
                export::summary(&thread, &loaded.state, loaded.entries, &loaded.corrupt)
            );
            Ok(Exit::Ok)
        }
        HistoryCommand::Export { thread, format: f } => print_export(&thread, f).await,
        HistoryCommand::Stats { thread, json } => {
            print_export(
                &thread,
                if json {
                    Format::StatsJson
                } else {
                    Format::Stats
                },
            )
            .await
        }
        HistoryCommand::Prune {
            dir,
            branch,
            dry_run,
            older_than,
            archive,
            workspace,
        } => {
            let days = match older_than {
                Some(days) => days,
                None => u64::from(
                    load_config(&workspace, None)
                        .await?
                        .1
                        .config
                        .history
                        .retention_days,
                ),
            };
            let days = u32::try_from(days).ok().filter(|d| *d > 0).ok_or_else(|| {
                CliError::usage(format!(
                    "--older-than {days} must be between 1 and {}",
                    u32::MAX
                ))
            })?;
            let backend = backend(dir.as_deref(), branch.as_deref())?;
            let mut options = PruneOptions::retention_days(days, chrono::Utc::now());
            options.dry_run = dry_run;
            options.archive_dir = Some(archive.unwrap_or_else(|| {
                dir.clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_LOCAL_DIR))
                    .join("archive")
            }));
            let report = prune(backend.as_ref(), &options)
                .await
                .map_err(|e| CliError::failure(e.to_string()))?;
            print!("{report}");
            Ok(Exit::Ok)
        }
    }
}
