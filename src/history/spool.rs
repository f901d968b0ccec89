//! The write-ahead spool of a run's batched history entries. With `history.commit_every` the
//! sink holds entries in memory between commits; a SIGKILL would lose them. So every entry the
//! sink accepts is first appended to a spool file on local disk (one file per run, held under an
//! exclusive lock while the run lives), the file is emptied after each successful commit, and
//! the next run on the same machine commits what a killed run left there before it reads the
//! thread's history.
//!
//! The lines are written with `write(2)`, not `fsync`ed: they survive the process being killed
//! (the kernel holds them), not the machine losing power. A fresh machine (a new CI runner) has
//! no spool: there only the last commit's entries exist.

use super::backend::{HistoryBackend, HistoryError};
use super::entry::Entry;
use super::jsonl;
use crate::trigger::ThreadRef;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The spool directory of one thread under `root` (`<root>/issues/7`).
pub fn thread_dir(root: &Path, thread: &ThreadRef) -> PathBuf {
    root.join(
        thread
            .history_path("")
            .trim_start_matches('/')
            .trim_end_matches(".jsonl"),
    )
}

/// One run's spool file, locked while the run holds it.
pub struct Spool {
    path: PathBuf,
    file: File,
    /// Bytes in the file: nothing to truncate when 0.
    len: u64,
}

impl Spool {
    /// Create (or take over) `<dir>/<run_id>.jsonl`.
    pub fn create(dir: &Path, run_id: &str) -> std::io::Result<Spool> {
        std::fs::create_dir_all(dir)?;
        let name: String = run_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{name}.jsonl"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        file.try_lock().map_err(|e| {
            std::io::Error::other(format!("{} is in use by another run: {e}", path.display()))
        })?;
        let len = file.metadata()?.len();
        Ok(Spool { path, file, len })
    }

    /// Append the entries as JSONL in one write.
    pub fn write(&mut self, entries: &[Entry]) -> std::io::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let lines = jsonl::to_lines(entries);
        self.file.write_all(lines.as_bytes())?;
        self.len += lines.len() as u64;
        Ok(())
    }

    /// Everything spooled is committed: empty the file.
    pub fn clear(&mut self) -> std::io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        self.file.set_len(0)?;
        self.len = 0;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if self.len == 0 {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `dir` holds a spool file (of a killed run, or of a live one) that [`replay`] would look
/// at: a run reads the thread only after committing those.
pub fn has_spool_files(dir: &Path) -> bool {
    spool_files(dir).next().is_some()
}

/// The spool files in `dir` (none when it cannot be read).
fn spool_files(dir: &Path) -> impl Iterator<Item = std::path::PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|item| item.path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
}

/// Commit the entries that runs killed on this machine left in `dir`, before anything else reads
/// the thread: lines already on the history (a commit that landed just before the kill) are not
/// written again. Returns how many entries were committed. A spool another live run holds is
/// left alone.
pub async fn replay(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
    dir: &Path,
) -> Result<usize, HistoryError> {
    let io = |what: &Path, source| HistoryError::Io {
        what: what.display().to_string(),
        source,
    };
    let mut committed = 0;
    for path in spool_files(dir) {
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_err() {
            continue; // a live run's spool
        }
        let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let parsed = jsonl::parse(&jsonl::text_of(bytes));
        for corrupt in &parsed.corrupt {
            // Only the line a kill cut short can be damaged; the rest is committed.
            tracing::warn!(
                "{}: line {} skipped ({})",
                path.display(),
                corrupt.line_no,
                corrupt.error
            );
        }
        let fresh = not_yet_committed(backend, thread, parsed.entries).await?;
        if !fresh.is_empty() {
            backend.append(thread, &fresh).await?;
            committed += fresh.len();
            tracing::info!(
                "history: committed {} entries of {thread} that an earlier run left in {}",
                fresh.len(),
                path.display()
            );
        }
        std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
    }
    Ok(committed)
}

/// The entries whose lines (without `seq`: run id, time and content) the thread's file does not
/// hold yet; an earlier attempt (a retried append, a re-run publish) committed the others.
pub async fn not_yet_committed(
    backend: &dyn HistoryBackend,
    thread: &ThreadRef,
    entries: Vec<Entry>,
) -> Result<Vec<Entry>, HistoryError> {
    if entries.is_empty() {
        return Ok(entries);
    }
    let loaded = backend.load(thread).await?;
    let present: HashSet<String> = loaded
        .text
        .lines()
        .filter_map(jsonl::idempotency_key)
        .collect();
    Ok(entries
        .into_iter()
        .filter(|e| {
            jsonl::idempotency_key(&jsonl::to_line(e)).is_none_or(|key| !present.contains(&key))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::EntryBody;
    use crate::history::local::LocalHistory;
    use chrono::{TimeZone, Utc};

    fn answer(text: &str) -> Entry {
        Entry {
            v: 1,
            seq: 0,
            ts: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
            run_id: "run-1".into(),
            body: EntryBody::Answer {
                author: "a".into(),
                text: text.into(),
                assumed: false,
            },
        }
    }

    #[tokio::test]
    async fn a_killed_runs_spool_is_committed_once_by_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalHistory::new(dir.path(), "planning_history");
        let thread = ThreadRef::issue(7);
        let spool_dir = thread_dir(&dir.path().join("spool"), &thread);
        assert!(
            spool_dir.ends_with("spool/issues/7"),
            "{}",
            spool_dir.display()
        );
        // The first entry was committed just before the kill, the spool not yet emptied.
        backend.append(&thread, &[answer("one")]).await.unwrap();
        let mut spool = Spool::create(&spool_dir, "run-1").unwrap();
        spool.write(&[answer("one"), answer("two")]).unwrap();
        // While the run lives, its spool is not touched.
        assert_eq!(replay(&backend, &thread, &spool_dir).await.unwrap(), 0);
        // SIGKILL: the file stays (it is not empty) and the lock goes with the process.
        let path = spool.path().to_owned();
        drop(spool);
        assert_eq!(replay(&backend, &thread, &spool_dir).await.unwrap(), 1);
        assert!(!path.exists());
        let text = backend.load(&thread).await.unwrap().text;
        let texts: Vec<String> = jsonl::parse(&text)
            .entries
            .iter()
            .map(|e| match &e.body {
                EntryBody::Answer { text, .. } => text.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(texts, ["one", "two"]);
    }

    #[test]
    fn an_emptied_spool_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::create(dir.path(), "local-1/2").unwrap();
        let path = spool.path().to_owned();
        assert!(path.ends_with("local-1_2.jsonl"));
        spool.write(&[answer("x")]).unwrap();
        spool.clear().unwrap();
        drop(spool);
        assert!(!path.exists());
    }
}
