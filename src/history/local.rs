//! History files in a local directory: `<root>/<directory>/<issues|pulls|merge_requests>/<n>.jsonl`.
//!
//! Appends hold an exclusive lock on the file (`flock` through `File::lock`), so concurrent
//! processes serialise and each renumbers its entries after the last `seq` it finds. Rewrites
//! (prune only) go through a temporary file and a rename; an appender that was waiting on the old
//! file notices the swap and appends to the new one.

use super::backend::{AppendOutcome, BlockingBackend, HistoryError, HistoryResult, LoadedHistory};
use super::entry::Entry;
use super::jsonl;
use super::rebase::PendingAppend;
use crate::trigger::{ThreadKind, ThreadRef};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct LocalHistory {
    root: PathBuf,
    directory: String,
}

impl LocalHistory {
    /// `directory` is `history.directory` (default `planning_history`).
    pub fn new(root: impl Into<PathBuf>, directory: impl Into<String>) -> Self {
        LocalHistory {
            root: root.into(),
            directory: directory.into(),
        }
    }

    pub fn path(&self, thread: &ThreadRef) -> PathBuf {
        self.root.join(thread.history_path(&self.directory))
    }
}

impl BlockingBackend for LocalHistory {
    fn load_blocking(&self, thread: &ThreadRef) -> HistoryResult<LoadedHistory> {
        let path = self.path(thread);
        match fs::read(&path) {
            Ok(bytes) => Ok(LoadedHistory {
                version: Some(bytes.len().to_string()),
                text: jsonl::text_of(bytes),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LoadedHistory::default()),
            Err(e) => Err(io(&path, e)),
        }
    }

    fn append_blocking(
        &self,
        thread: &ThreadRef,
        entries: &[Entry],
    ) -> HistoryResult<AppendOutcome> {
        let path = self.path(thread);
        let mut file = open_locked(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| io(&path, e))?;
        let old_len = bytes.len();
        let mut pending = PendingAppend::new(path.display().to_string(), entries);
        let (new, first_seq) = pending.append_to(&bytes)?;
        // The file is opened for appending under the lock: only the new tail is written.
        file.write_all(&new[old_len..]).map_err(|e| io(&path, e))?;
        file.sync_data().map_err(|e| io(&path, e))?;
        Ok(AppendOutcome {
            commit: None,
            conflicts: 0,
            first_seq,
        })
    }

    /// Replace the file atomically; an empty `text` deletes it.
    fn rewrite_blocking(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome> {
        let path = self.path(thread);
        let _lock = open_locked(&path)?;
        if text.is_empty() {
            fs::remove_file(&path).map_err(|e| io(&path, e))?;
        } else {
            let tmp = path.with_extension(format!("jsonl.tmp-{}", std::process::id()));
            let write = || -> std::io::Result<()> {
                let mut f = File::create(&tmp)?;
                f.write_all(text.as_bytes())?;
                f.sync_all()?;
                fs::rename(&tmp, &path)
            };
            if let Err(e) = write() {
                let _ = fs::remove_file(&tmp);
                return Err(io(&path, e));
            }
        }
        Ok(AppendOutcome {
            commit: None,
            conflicts: 0,
            first_seq: jsonl::max_seq(text),
        })
    }

    fn threads_blocking(&self) -> HistoryResult<Vec<ThreadRef>> {
        let base = self.root.join(&self.directory);
        let mut out = Vec::new();
        for kind in [
            ThreadKind::Issue,
            ThreadKind::PullRequest,
            ThreadKind::MergeRequest,
        ] {
            let dir = base.join(kind.dir_name());
            let read = match fs::read_dir(&dir) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&dir, e)),
            };
            for item in read {
                let item = item.map_err(|e| io(&dir, e))?;
                let name = item.file_name();
                let Some(number) = name
                    .to_str()
                    .and_then(|n| n.strip_suffix(".jsonl"))
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                out.push(ThreadRef { kind, number });
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Open (creating) the file and lock it exclusively. If a rewrite replaced the file while we
/// waited, the lock is on a file that is no longer at `path`: open the new one and lock again.
fn open_locked(path: &Path) -> Result<File, HistoryError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    loop {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| io(path, e))?;
        file.lock().map_err(|e| io(path, e))?;
        if same_file(&file, path) {
            return Ok(file);
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

fn io(path: &Path, source: std::io::Error) -> HistoryError {
    HistoryError::Io {
        what: path.display().to_string(),
        source,
    }
}
