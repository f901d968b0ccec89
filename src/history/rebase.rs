//! A run's new entries put on top of whatever the thread's file holds now: numbered after its
//! highest `seq`, every earlier byte kept as it is. Each retry re-sends the same lines (only `seq`
//! changes, never `ts` or content), and a line's idempotency key is the line without its `seq`:
//! when an attempt that looked failed did land, the next attempt finds its lines after the point
//! it had read and writes nothing again.

use super::backend::HistoryError;
use super::cas::Change;
use super::entry::Entry;
use super::jsonl;

pub struct PendingAppend {
    /// What the thread's file is called, for error messages.
    path: String,
    entries: Vec<Entry>,
    /// Length of the file the previous attempt was built on: lines of ours that landed can only
    /// be after it.
    read_before: Option<usize>,
}

impl PendingAppend {
    pub fn new(path: impl Into<String>, entries: &[Entry]) -> Self {
        PendingAppend {
            path: path.into(),
            entries: entries.to_vec(),
            read_before: None,
        }
    }

    /// The change that puts our entries after the lines of `old`.
    pub fn onto(&mut self, old: &[u8]) -> Result<Change, HistoryError> {
        if let Some(before) = self.read_before
            && self.landed(old, before)
        {
            let first_seq = self.entries.first().map_or(0, |e| e.seq);
            return Ok(Change::Nothing(first_seq));
        }
        self.read_before = Some(old.len());
        let (bytes, first_seq) = self.append_to(old)?;
        Ok(Change::Write(Some(bytes), first_seq))
    }

    /// `old` followed by our entries, numbered after its highest `seq`; and our first `seq`.
    pub fn append_to(&mut self, old: &[u8]) -> Result<(Vec<u8>, u64), HistoryError> {
        let after = jsonl::max_seq_bytes(old);
        let count = u64::try_from(self.entries.len()).unwrap_or(u64::MAX);
        if after.checked_add(count).is_none() {
            return Err(HistoryError::Invalid(format!(
                "{} has reached the largest sequence number ({}); no entry can be numbered after it. Archive the thread with `replan history prune` or repair the file",
                self.path,
                u64::MAX
            )));
        }
        jsonl::renumber(&mut self.entries, after);
        let mut bytes = Vec::with_capacity(old.len() + self.entries.len() * 256 + 1);
        bytes.extend_from_slice(old);
        if !old.is_empty() && !old.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(jsonl::to_lines(&self.entries).as_bytes());
        Ok((bytes, after + 1))
    }

    /// Whether every one of our lines is in `old` past byte `before` (an earlier attempt landed).
    fn landed(&self, old: &[u8], before: usize) -> bool {
        let start = if old.len() >= before { before } else { 0 };
        let mut wanted: Vec<Option<String>> = self
            .entries
            .iter()
            .map(|e| jsonl::idempotency_key(&jsonl::to_line(e)))
            .collect();
        for line in old[start..].split(|b| *b == b'\n') {
            let Some(key) = std::str::from_utf8(line)
                .ok()
                .and_then(jsonl::idempotency_key)
            else {
                continue;
            };
            if let Some(slot) = wanted.iter_mut().find(|w| w.as_ref() == Some(&key)) {
                *slot = None;
            }
        }
        wanted.iter().all(Option::is_none)
    }
}
