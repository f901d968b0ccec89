//! A whole history file read entry by entry, in file order, without holding the entries: the lines
//! are parsed in chunks (side by side on several threads for a large file) and each entry is
//! handed over by value. Replaying a file this way keeps only the state in memory, not the file's
//! entries as well (at 100k entries those were 130 MiB, and most of the time went into touching
//! that memory).

use super::entry::Entry;
use super::jsonl::{self, CorruptLine, ParsedHistory};
use super::state::{SessionState, apply_owned};
use std::sync::mpsc;

/// What reading a file found besides its entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scan {
    /// Entries handed over.
    pub entries: usize,
    pub corrupt: Vec<CorruptLine>,
    /// The highest `seq` in the file, lines of newer schema versions included.
    pub max_seq: u64,
}

/// Files above this size are parsed on several threads.
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// The unit of work of a parsing thread: small enough that the chunks in flight stay a few MiB.
const CHUNK_BYTES: usize = 256 << 10;

/// Chunks a parsing thread may have ready before the reader takes them.
const CHUNKS_AHEAD: usize = 2;

/// Hands every entry of `text` to `each`, in file order. Never fails: lines that cannot be read
/// are in the returned [`Scan`] with their line numbers (see [`jsonl`]).
pub fn for_each_entry(text: &str, mut each: impl FnMut(Entry)) -> Scan {
    let mut scan = Scan::default();
    let mut lines_before = 0;
    let mut take = |part: ParsedHistory, lines: usize| {
        scan.entries += part.entries.len();
        scan.max_seq = scan.max_seq.max(part.max_seq);
        scan.corrupt.extend(part.corrupt.into_iter().map(|mut c| {
            c.line_no += lines_before;
            c
        }));
        lines_before += lines;
        part.entries.into_iter().for_each(&mut each);
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get().min(8))
        .unwrap_or(1);
    if text.len() < PARALLEL_PARSE_BYTES || threads < 2 {
        take(jsonl::parse_run(text), 0);
        return scan;
    }
    // Entries are independent lines: thread `t` parses chunks t, t + threads, ... and the calling
    // thread takes them back in file order. Each chunk numbers its own lines; the numbers are
    // shifted here.
    let chunks: Vec<&str> = jsonl::line_runs(text, text.len().div_ceil(CHUNK_BYTES)).collect();
    std::thread::scope(|scope| {
        let parsed: Vec<mpsc::Receiver<(ParsedHistory, usize)>> = (0..threads)
            .map(|t| {
                let (tx, rx) = mpsc::sync_channel(CHUNKS_AHEAD);
                let mine = chunks.iter().skip(t).step_by(threads);
                scope.spawn(move || {
                    for chunk in mine {
                        let part = (jsonl::parse_run(chunk), chunk.lines().count());
                        if tx.send(part).is_err() {
                            return;
                        }
                    }
                });
                rx
            })
            .collect();
        for i in 0..chunks.len() {
            let (part, lines) = parsed[i % threads]
                .recv()
                .expect("parsing a line never panics");
            take(part, lines);
        }
    });
    scan
}

/// The session state a history file replays to, with what reading it found. The same state as
/// [`super::replay`] over [`jsonl::parse`]'s entries, without holding them.
pub fn replay_text(text: &str) -> (SessionState, Scan) {
    let mut state = SessionState::default();
    let scan = for_each_entry(text, |e| apply_owned(&mut state, e));
    (state, scan)
}
