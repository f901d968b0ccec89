//! `replan history prune`: retire threads nobody has touched for `retention_days` (default 90,
//! seed 001 §11.1).
//!
//! Decision: pruning works on whole threads only. A thread whose newest entry is older than the
//! cutoff is copied verbatim (corrupt lines included) to `<archive>/<kind>-<n>.jsonl` when an
//! archive directory is given, and then its file is removed from the history. A thread with any
//! newer entry is kept whole: lines are never dropped from a live thread, because replay of a
//! partial file would produce a different state. A thread whose age cannot be told (no readable
//! entry) is kept and reported.

use super::backend::{HistoryBackend, HistoryError};
use super::jsonl;
use crate::trigger::ThreadRef;
use chrono::{DateTime, Duration, Utc};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct PruneOptions {
    /// Threads whose newest entry is older than `now - older_than` are retired.
    pub older_than: Duration,
    pub now: DateTime<Utc>,
    /// Copy retired threads here first; None removes them without a copy.
    pub archive_dir: Option<PathBuf>,
    /// Report what would happen without changing anything.
    pub dry_run: bool,
}

impl PruneOptions {
    pub fn retention_days(days: u32, now: DateTime<Utc>) -> Self {
        PruneOptions {
            older_than: Duration::days(i64::from(days)),
            now,
            archive_dir: None,
            dry_run: false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneReport {
    pub kept: Vec<ThreadRef>,
    /// Retired threads and where their archive copy is (None: removed without a copy).
    pub retired: Vec<(ThreadRef, Option<PathBuf>)>,
    /// Threads left alone and why.
    pub skipped: Vec<(ThreadRef, String)>,
}

impl std::fmt::Display for PruneReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (t, archive) in &self.retired {
            match archive {
                Some(p) => writeln!(f, "retired {t}: archived to {}", p.display())?,
                None => writeln!(f, "retired {t}: removed")?,
            }
        }
        for (t, why) in &self.skipped {
            writeln!(f, "kept {t}: {why}")?;
        }
        writeln!(
            f,
            "{} retired, {} kept, {} skipped",
            self.retired.len(),
            self.kept.len(),
            self.skipped.len()
        )
    }
}

pub fn archive_name(thread: &ThreadRef) -> String {
    format!("{}-{}.jsonl", thread.kind.dir_name(), thread.number)
}

pub async fn prune(
    backend: &dyn HistoryBackend,
    options: &PruneOptions,
) -> Result<PruneReport, HistoryError> {
    let cutoff = options.now - options.older_than;
    let mut report = PruneReport::default();
    for thread in backend.threads().await? {
        let loaded = backend.load(&thread).await?;
        let parsed = jsonl::parse(&loaded.text);
        let Some(newest) = parsed.entries.iter().map(|e| e.ts).max() else {
            report.skipped.push((
                thread,
                "no readable entry, so its age is unknown".to_string(),
            ));
            continue;
        };
        if newest >= cutoff {
            report.kept.push(thread);
            continue;
        }
        let archive = options
            .archive_dir
            .as_ref()
            .map(|d| d.join(archive_name(&thread)));
        if !options.dry_run {
            if let Some(path) = &archive {
                write_archive(path, &loaded.text)?;
            }
            // A run may have appended since we read: then the thread is live again.
            let again = backend.load(&thread).await?;
            if again.text != loaded.text {
                report
                    .skipped
                    .push((thread, "it changed while pruning".to_string()));
                continue;
            }
            backend.rewrite(&thread, "").await?;
        }
        report.retired.push((thread, archive));
    }
    Ok(report)
}

/// Append to an existing archive rather than replace it, so pruning twice loses nothing.
fn write_archive(path: &Path, text: &str) -> Result<(), HistoryError> {
    let io = |source| HistoryError::Io {
        what: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    let existing = f.metadata().map_err(io)?.len();
    if existing > 0 {
        // The previous archive may end without a newline if its last line was cut off.
        f.write_all(b"\n").map_err(io)?;
    }
    f.write_all(text.as_bytes()).map_err(io)?;
    if !text.ends_with('\n') {
        f.write_all(b"\n").map_err(io)?;
    }
    f.sync_all().map_err(io)
}
