//! `replan thread show`: a local run's thread as a person reads it on the forge — the issue,
//! then every comment (the checklist, notices, and the comments given with `--comment`).

use super::args::ThreadCommand;
use super::history_cmd::DEFAULT_LOCAL_DIR;
use super::thread_arg::parse_thread;
use crate::app::exit::{CliError, Exit};
use crate::forge::ForgeError;
use crate::forge::local::{LocalForge, LocalThreadFile};
use std::fmt::Write;
use std::path::PathBuf;

pub async fn run(cmd: ThreadCommand) -> Result<Exit, CliError> {
    match cmd {
        ThreadCommand::Show { dir, thread } => {
            let thread = parse_thread(&thread)?;
            let dir = dir.unwrap_or_else(|| PathBuf::from(DEFAULT_LOCAL_DIR));
            let forge = LocalForge::new(&dir);
            let file = match forge.thread_file(&thread).await {
                Ok(file) => file,
                Err(ForgeError::NotFound { .. }) => {
                    return Err(CliError::usage(format!(
                        "there is no local {thread} in {}; pass --dir with the --local-dir of the run (default ./.replan)",
                        dir.display()
                    )));
                }
                Err(e) => return Err(CliError::failure(e.to_string())),
            };
            print!("{}", render(&file));
            Ok(Exit::Ok)
        }
    }
}

/// The thread as plain text: the issue, then each comment under a header line.
pub fn render(file: &LocalThreadFile) -> String {
    let t = &file.thread;
    let mut out = format!(
        "{} by @{}: {}\n\n{}\n",
        t.thread,
        t.author,
        t.title,
        t.body.trim_end()
    );
    for c in &file.comments {
        let who = if c.author_is_bot { " (bot)" } else { "" };
        let edited = if c.updated_at != c.created_at {
            format!(", edited {}", c.updated_at.format("%Y-%m-%d %H:%M:%S UTC"))
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "\n--- comment {} by @{}{who} at {}{edited}\n{}\n",
            c.id,
            c.author,
            c.created_at.format("%Y-%m-%d %H:%M:%S UTC"),
            c.body.trim_end()
        );
    }
    out
}
