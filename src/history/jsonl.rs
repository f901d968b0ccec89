//! The JSONL encoding of a thread's history: one entry per line.
//!
//! Reading never fails: a line that cannot be used (bad JSON, unknown type, a schema version newer
//! than this binary, a truncated last line) is reported as a [`CorruptLine`] and skipped. Writers
//! never remove such lines; they only append after them.

use super::entry::{Entry, SCHEMA_VERSION};
use serde::Deserialize;
use std::sync::mpsc;

/// A line that could not be read as an entry. The line stays in the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CorruptLine {
    /// 1-based line number in the file.
    pub line_no: usize,
    pub error: String,
    /// The start of the line (at most [`RAW_PREFIX_CHARS`] characters), to find it again.
    pub raw_prefix: String,
}

pub const RAW_PREFIX_CHARS: usize = 80;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedHistory {
    pub entries: Vec<Entry>,
    pub corrupt: Vec<CorruptLine>,
    /// The highest `seq` in the file, including lines written by a newer schema version, so that
    /// appended entries never reuse a number.
    pub max_seq: u64,
}

/// One entry as a JSON line, without the newline.
pub fn to_line(entry: &Entry) -> String {
    // Nearly every line holds nothing to mask, which one search over the serialised line tells
    // (see `outbound::serialized_json_is_clean`); building the value tree to redact each string
    // was most of a line's cost, and every line is written twice (spool, commit).
    let line = serde_json::to_string(entry).expect("history entries always serialise");
    let clean = crate::outbound::serialized_json_is_clean(&line);
    if clean && !cfg!(debug_assertions) {
        return line;
    }
    let value = serde_json::to_value(entry).expect("history entries always serialise");
    let redacted = serde_json::to_string(&crate::outbound::redact_owned_json(value))
        .expect("history entries always serialise");
    // Every test run checks the shortcut on every line it writes.
    debug_assert!(!clean || redacted == line, "{line}\n{redacted}");
    redacted
}

/// Entries as JSONL text, each line ending in a newline.
pub fn to_lines(entries: &[Entry]) -> String {
    let mut out = String::with_capacity(entries.len() * 256);
    for e in entries {
        out.push_str(&to_line(e));
        out.push('\n');
    }
    out
}

/// The non-blank lines of `text` with their 1-based numbers, and whether each is the last line and
/// has no terminating newline (a write that was cut off).
///
/// Lines end as [`str::lines`] ends them (`\n` or `\r\n`); the newlines are found with `memchr`'s
/// vector search, which a 100k-entry history scans in a fraction of the scalar search's time.
pub fn lines(text: &str) -> Lines<'_> {
    Lines {
        text,
        newlines: memchr::memchr_iter(b'\n', text.as_bytes()),
        start: 0,
        line_no: 0,
    }
}

/// The iterator of [`lines`].
pub struct Lines<'a> {
    text: &'a str,
    newlines: memchr::Memchr<'a>,
    start: usize,
    line_no: usize,
}

impl Lines<'_> {
    /// How many lines were numbered so far, blank ones included: all of them once the iterator
    /// is done, which is what a chunk's successor adds to its numbers.
    fn numbered(&self) -> usize {
        self.line_no
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str, bool);

    fn next(&mut self) -> Option<Self::Item> {
        while self.start < self.text.len() {
            self.line_no += 1;
            let (line, cut_off) = match self.newlines.next() {
                Some(end) => {
                    let line = &self.text[self.start..end];
                    self.start = end + 1;
                    (line.strip_suffix('\r').unwrap_or(line), false)
                }
                // The last line, cut off before its newline (a write that did not finish).
                None => {
                    let line = &self.text[self.start..];
                    self.start = self.text.len();
                    (line, true)
                }
            };
            if !line.trim().is_empty() {
                return Some((self.line_no, line, cut_off));
            }
        }
        None
    }
}

/// Marks a line that was not valid UTF-8 in the text [`text_of`] makes for the parser.
const NOT_UTF8: char = '\u{FFFF}';

/// The file's bytes as text for [`parse`]: a line that is not valid UTF-8 is kept (lossily, with a
/// mark) so the parser reports it as corrupt instead of reading a repaired copy. Writers append to
/// the bytes, never to this text. Takes the bytes so that valid UTF-8, the usual case, becomes the
/// text without a copy (34 MB at 100k entries).
pub fn text_of(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let bytes = e.into_bytes();
            let mut out = String::with_capacity(bytes.len() + 16);
            for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                match std::str::from_utf8(line) {
                    Ok(line) => out.push_str(line),
                    Err(_) => {
                        out.push(NOT_UTF8);
                        out.push_str(&String::from_utf8_lossy(line));
                    }
                }
            }
            out
        }
    }
}

/// Parse a whole file. Never fails; see the module documentation.
pub fn parse(text: &str) -> ParsedHistory {
    let mut entries = Vec::with_capacity(text.len() / 400 + 1);
    let scan = for_each_entry(text, |e| entries.push(e));
    ParsedHistory {
        entries,
        corrupt: scan.corrupt,
        max_seq: scan.max_seq,
    }
}

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
/// are in the returned [`Scan`] with their line numbers (see the module documentation).
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
    // Asked only for a big file: `available_parallelism` reads the cgroup files each time
    // (50–90 µs), and every replay of a thread's history passes here.
    let threads = if text.len() < PARALLEL_PARSE_BYTES {
        1
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get().min(8))
            .unwrap_or(1)
    };
    if threads < 2 {
        let (part, lines) = parse_run(text);
        take(part, lines);
        return scan;
    }
    // Entries are independent lines: thread `t` parses chunks t, t + threads, ... and the calling
    // thread takes them back in file order. Each chunk numbers its own lines; the numbers are
    // shifted here.
    let chunks: Vec<&str> = line_runs(text, text.len().div_ceil(CHUNK_BYTES)).collect();
    std::thread::scope(|scope| {
        let parsed: Vec<mpsc::Receiver<(ParsedHistory, usize)>> = (0..threads)
            .map(|t| {
                let (tx, rx) = mpsc::sync_channel(CHUNKS_AHEAD);
                let mine = chunks.iter().skip(t).step_by(threads);
                scope.spawn(move || {
                    for chunk in mine {
                        if tx.send(parse_run(chunk)).is_err() {
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

/// Parse a run of whole lines, numbering them from 1; and how many lines it has, blank ones
/// included (counted by the same pass).
fn parse_run(run: &str) -> (ParsedHistory, usize) {
    let mut lines = lines(run);
    let parsed = parse_lines(&mut lines, run.len());
    (parsed, lines.numbered())
}

/// `text` cut into about `n` runs of whole lines (each but the last ends with a newline).
fn line_runs(text: &str, n: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    let size = text.len().div_ceil(n).max(1);
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // A newline byte is never inside a multi-byte character: cutting after it is safe.
        let newline = |tail: &[u8]| tail.iter().position(|b| *b == b'\n');
        let cut = match rest.as_bytes().get(size..).and_then(newline) {
            Some(i) => size + i + 1,
            None => rest.len(),
        };
        let (run, tail) = rest.split_at(cut);
        rest = tail;
        Some(run)
    })
}

fn parse_lines<'a>(
    lines: impl Iterator<Item = (usize, &'a str, bool)>,
    bytes: usize,
) -> ParsedHistory {
    let mut out = ParsedHistory {
        entries: Vec::with_capacity(bytes / 400 + 1),
        ..Default::default()
    };
    for (line_no, line, truncated) in lines {
        match parse_line(line) {
            Ok(entry) => {
                out.max_seq = out.max_seq.max(entry.seq);
                out.entries.push(entry);
            }
            Err(LineError { error, seq }) => {
                if let Some(seq) = seq {
                    out.max_seq = out.max_seq.max(seq);
                }
                let error = if truncated {
                    format!("truncated last line (no newline at the end): {error}")
                } else {
                    error
                };
                out.corrupt.push(CorruptLine {
                    line_no,
                    error,
                    raw_prefix: prefix(line),
                });
            }
        }
    }
    out
}

struct LineError {
    error: String,
    /// The line's `seq`, when it could still be read (e.g. a newer schema version).
    seq: Option<u64>,
}

/// Only read on the error path, to explain why a line failed.
#[derive(Deserialize)]
struct Envelope {
    v: Option<u32>,
    seq: Option<u64>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// Every entry type this binary reads (`EntryBody`'s variants; a test holds the two together).
const KNOWN_TYPES: &[&str] = &[
    "run_started",
    "draft",
    "plan",
    "revision",
    "reflection",
    "replan_decision",
    "refinement",
    "judge",
    "action",
    "question",
    "answer",
    "approval",
    "task_state",
    "task_split",
    "effect",
    "checklist",
    "usage",
    "completion",
    "run_finished",
    "budget",
    "ci_result",
    "review",
    "check",
    "verification",
];

fn parse_line(line: &str) -> Result<Entry, LineError> {
    if line.starts_with(NOT_UTF8) {
        return Err(LineError {
            error: "not valid UTF-8".into(),
            seq: None,
        });
    }
    match serde_json::from_str::<Entry>(line) {
        Ok(e) if e.v > SCHEMA_VERSION => Err(LineError {
            error: newer(e.v),
            seq: Some(e.seq),
        }),
        Ok(e) => Ok(e),
        Err(err) => {
            let Ok(env) = serde_json::from_str::<Envelope>(line) else {
                return Err(LineError {
                    error: format!("not valid JSON: {err}"),
                    seq: None,
                });
            };
            let error = match (env.v, env.kind.as_deref()) {
                (Some(v), _) if v > SCHEMA_VERSION => newer(v),
                (_, Some(kind)) if !KNOWN_TYPES.contains(&kind) => {
                    format!("unknown entry type \"{kind}\"")
                }
                (_, None) => "no \"type\" field".to_string(),
                // The error again with its field path (only on this path: tracking costs time).
                _ => match crate::plan::shape::from_str::<Entry>(line) {
                    Err(shape) => format!("entry does not match the schema (wrong shape): {shape}"),
                    Ok(_) => format!("entry does not match the schema: {err}"),
                },
            };
            Err(LineError {
                error,
                seq: env.seq,
            })
        }
    }
}

fn newer(v: u32) -> String {
    format!(
        "written by a newer replan (schema version {v}, this binary reads up to {SCHEMA_VERSION}); upgrade replan to read it"
    )
}

fn prefix(line: &str) -> String {
    match line.char_indices().nth(RAW_PREFIX_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

pub fn renumber(entries: &mut [Entry], after_seq: u64) {
    for (i, e) in entries.iter_mut().enumerate() {
        // Callers check that the numbers fit (see `rebase`); saturate rather than wrap.
        e.seq = after_seq.saturating_add(1).saturating_add(i as u64);
    }
}

/// The highest `seq` in a file without building the entries (for appenders).
pub fn max_seq(text: &str) -> u64 {
    max_seq_bytes(text.as_bytes())
}

/// [`max_seq`] over the file's bytes as stored (lines that are not UTF-8 included).
pub fn max_seq_bytes(bytes: &[u8]) -> u64 {
    #[derive(Deserialize)]
    struct Seq {
        seq: Option<u64>,
    }
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| {
            // A damaged byte elsewhere in a line must not hide its `seq`.
            let l = String::from_utf8_lossy(l);
            let l = l.as_ref();
            if l.trim().is_empty() {
                return None;
            }
            canonical_seq(l).or_else(|| serde_json::from_str::<Seq>(l).ok().and_then(|s| s.seq))
        })
        .max()
        .unwrap_or(0)
}

/// Fast path for lines as this crate writes them: `{"v":<n>,"seq":<m>,...`. The `seq` right after
/// the leading `v` is the top-level one, so no JSON parse is needed.
fn canonical_seq(line: &str) -> Option<u64> {
    let (_, digits, _) = split_seq(line)?;
    digits.parse().ok()
}

/// A line as this crate writes it, cut around its `seq` digits: (`{"v":<n>,"seq":`, digits, rest).
fn split_seq(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.strip_prefix("{\"v\":")?;
    let v_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let head = "{\"v\":".len() + v_digits + ",\"seq\":".len();
    rest[v_digits..].strip_prefix(",\"seq\":")?;
    let tail = &line[head..];
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !matches!(tail.as_bytes().get(digits), Some(b',' | b'}')) {
        return None;
    }
    Some((&line[..head], &tail[..digits], &tail[digits..]))
}

/// What identifies a line across retries: the line without its `seq` (run id, timestamp and
/// content stay the same when an append is re-sent; only `seq` may change).
pub fn idempotency_key(line: &str) -> Option<String> {
    let (head, _, rest) = split_seq(line)?;
    Some(format!("{head}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EntryBody;
    use crate::history::entry::{RunRequest, UsageTotals};
    use chrono::{TimeZone, Utc};

    fn entry(seq: u64) -> Entry {
        Entry {
            v: SCHEMA_VERSION,
            seq,
            ts: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
            run_id: "run-1".into(),
            body: EntryBody::Usage {
                model: None,
                usage: UsageTotals {
                    calls: 1,
                    ..Default::default()
                },
            },
        }
    }

    #[test]
    fn a_line_round_trips() {
        let e = Entry {
            body: EntryBody::RunStarted {
                request: RunRequest {
                    event: "issues".into(),
                    actor: "alice".into(),
                    request: "start".into(),
                    ..Default::default()
                },
            },
            ..entry(1)
        };
        let line = to_line(&e);
        assert!(line.starts_with(r#"{"v":1,"seq":1,"ts":"2026-01-02T03:04:05Z","run_id":"run-1","type":"run_started""#), "{line}");
        assert_eq!(parse(&line).entries, [e]);
    }

    #[test]
    fn a_line_in_another_field_order_reads_as_the_canonical_one() {
        let e = entry(3);
        let canonical = to_line(&e);
        let type_first = r#"{"type":"usage","usage":{"calls":1,"prompt_tokens":0,"completion_tokens":0},"run_id":"run-1","seq":3,"ts":"2026-01-02T03:04:05Z","v":1}"#;
        let type_between = r#"{"v":1,"seq":3,"type":"usage","ts":"2026-01-02T03:04:05Z","usage":{"calls":1,"prompt_tokens":0,"completion_tokens":0},"run_id":"run-1"}"#;
        let escaped_key = canonical.replacen("\"type\"", "\"typ\\u0065\"", 1);
        let p = parse(&format!(
            "{canonical}\n{type_first}\n{type_between}\n{escaped_key}\n"
        ));
        assert_eq!(p.corrupt, []);
        assert_eq!(p.entries, [e.clone(), e.clone(), e.clone(), e]);
        let missing_ts = r#"{"type":"usage","usage":{"calls":1,"prompt_tokens":0,"completion_tokens":0},"run_id":"run-1","seq":3,"v":1}"#;
        let p = parse(missing_ts);
        assert!(p.corrupt[0].error.contains("`ts`"), "{:?}", p.corrupt);
    }

    #[test]
    fn each_kind_of_corrupt_line_is_reported_and_skipped() {
        let good = |s| to_line(&entry(s));
        let future = to_line(&entry(7)).replacen("\"v\":1", "\"v\":2", 1);
        let unknown =
            r#"{"v":1,"seq":8,"ts":"2026-01-02T03:04:05Z","run_id":"r","type":"teleport"}"#;
        let text = format!(
            "{}\nnot json at all\n{future}\n\n{unknown}\n{}\n{}",
            good(1),
            good(2),
            &good(3)[..20]
        );
        let p = parse(&text);
        assert_eq!(p.entries.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(p.max_seq, 8);
        let lines: Vec<usize> = p.corrupt.iter().map(|c| c.line_no).collect();
        assert_eq!(lines, [2, 3, 5, 7]);
        assert!(p.corrupt[0].error.starts_with("not valid JSON"));
        assert!(p.corrupt[1].error.contains("schema version 2"));
        assert_eq!(p.corrupt[2].error, "unknown entry type \"teleport\"");
        assert!(p.corrupt[3].error.starts_with("truncated last line"));
        assert_eq!(p.corrupt[3].raw_prefix, &good(3)[..20]);
    }

    #[test]
    fn a_line_of_the_wrong_shape_names_the_field() {
        let wrong_ts = to_line(&entry(1)).replacen("\"2026-01-02T03:04:05Z\"", "5", 1);
        let no_text = r#"{"v":1,"seq":2,"ts":"2026-01-02T03:04:05Z","run_id":"r","type":"answer","author":"a"}"#;
        let p = parse(&format!("{wrong_ts}\n{no_text}\n"));
        assert_eq!(p.corrupt.len(), 2, "{:?}", p.corrupt);
        assert!(
            p.corrupt[0]
                .error
                .contains("wrong shape): `ts`: invalid type"),
            "{}",
            p.corrupt[0].error
        );
        assert!(
            p.corrupt[1].error.ends_with("`text`: missing"),
            "{}",
            p.corrupt[1].error
        );
    }

    #[test]
    fn appending_after_a_cut_off_line_keeps_it_on_its_own_line() {
        let mut pending = crate::history::rebase::PendingAppend::new("f", &[entry(1), entry(1)]);
        let (bytes, first) = pending.append_to(b"{\"v\":1,\"seq\":4,\"x").unwrap();
        assert_eq!(first, 5);
        let text = String::from_utf8(bytes).unwrap();
        let p = parse(&text);
        assert_eq!(p.corrupt.len(), 1);
        assert_eq!(p.corrupt[0].line_no, 1);
        assert_eq!(p.entries.len(), 2);
        assert_eq!(max_seq(&text), 6);
    }

    #[test]
    fn the_known_types_are_the_entry_bodys_variants() {
        // serde names every variant it expects when it meets one it does not know.
        let err = serde_json::from_str::<EntryBody>(r#"{"type":"no_such_type"}"#).unwrap_err();
        let err = err.to_string();
        let mut expected: Vec<&str> = err
            .split_once("expected one of ")
            .and_then(|(_, list)| list.split_once(" at line "))
            .map(|(list, _)| list.split(", ").map(|v| v.trim_matches('`')).collect())
            .unwrap_or_else(|| panic!("{err}"));
        expected.sort_unstable();
        let mut known = KNOWN_TYPES.to_vec();
        known.sort_unstable();
        assert_eq!(known, expected);
    }

    #[test]
    fn a_draft_of_the_wrong_shape_is_named_as_such_not_as_an_unknown_type() {
        let line = r#"{"v":1,"seq":3,"ts":"2026-01-02T03:04:05Z","run_id":"r","type":"draft","source":"planning","problems":"none"}"#;
        let p = parse(&format!("{line}\n"));
        assert_eq!(p.corrupt.len(), 1);
        assert!(
            p.corrupt[0].error.contains("wrong shape): `problems`"),
            "{}",
            p.corrupt[0].error
        );
    }

    #[test]
    fn text_of_keeps_valid_bytes_and_marks_a_line_that_is_not_utf8() {
        let good = to_line(&entry(1));
        assert_eq!(
            text_of(format!("{good}\n").into_bytes()),
            format!("{good}\n")
        );
        let mut bytes = format!("{good}\n").into_bytes();
        bytes.extend_from_slice(b"{\"v\":1,\"x\":\"\xff\"}\n");
        bytes.extend_from_slice(format!("{good}\n").as_bytes());
        let p = parse(&text_of(bytes));
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.corrupt.len(), 1);
        assert_eq!(
            (p.corrupt[0].line_no, p.corrupt[0].error.as_str()),
            (2, "not valid UTF-8")
        );
    }

    #[test]
    fn lines_split_and_number_as_str_lines_does() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\r\n",
            "a\r",
            "a\n\nb",
            "a\r\n \r\nb\r",
            "\n\na\n  \n",
            "é\nb\n\r\n\n",
        ] {
            let expected: Vec<(usize, &str, bool)> = text
                .lines()
                .enumerate()
                .map(|(i, l)| (i + 1, l))
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(n, l)| {
                    let last = n == text.lines().count() && !text.ends_with('\n');
                    (n, l, last)
                })
                .collect();
            let mut numbered = lines(text);
            assert_eq!(numbered.by_ref().collect::<Vec<_>>(), expected, "{text:?}");
            assert_eq!(numbered.numbered(), text.lines().count(), "{text:?}");
        }
    }

    #[test]
    fn max_seq_reads_canonical_and_other_lines() {
        let text = "{\"v\":1,\"seq\":7,\"x\":1}\n{\"seq\":9,\"v\":1}\n{\"v\":1,\"seq\":99999999999999999999999}\nbroken\n";
        assert_eq!(max_seq(text), 9);
        assert_eq!(canonical_seq("{\"v\":1,\"seq\":12}"), Some(12));
        assert_eq!(canonical_seq("{\"v\":1,\"seq\":12.5}"), None);
    }

    #[test]
    fn a_large_file_parsed_in_runs_numbers_its_lines_as_one_pass_does() {
        let mut text = String::new();
        let mut seq = 0;
        while text.len() < (3 << 20) / 2 {
            seq += 1;
            let line = if seq % 997 == 0 {
                "broken é line".to_owned()
            } else {
                to_line(&entry(seq)).replacen("run-1", "run-é", 1)
            };
            text.push_str(&line);
            text.push_str(if seq % 5 == 0 { "\r\n" } else { "\n" });
            if seq % 1001 == 0 {
                text.push('\n');
            }
        }
        text.push_str(&to_line(&entry(seq + 1))[..30]);
        let runs: Vec<&str> = line_runs(&text, 3).collect();
        assert_eq!(runs.concat(), text);
        assert!(runs.len() > 1 && runs[..runs.len() - 1].iter().all(|r| r.ends_with('\n')));
        let parsed = parse(&text);
        assert_eq!(parsed, parse_lines(lines(&text), text.len()));
        assert!(parsed.corrupt.len() > 2, "{:?}", parsed.corrupt.len());
        let last = parsed.corrupt.last().unwrap();
        assert!(
            last.error.starts_with("truncated last line"),
            "{}",
            last.error
        );
        assert_eq!(last.line_no, text.lines().count());
        assert_eq!(parsed.max_seq, seq);
    }

    #[test]
    fn raw_prefix_is_cut_on_a_character_boundary() {
        let line = "é".repeat(200);
        let p = parse(&line);
        assert_eq!(
            p.corrupt[0].raw_prefix.chars().count(),
            RAW_PREFIX_CHARS + 1
        );
    }
}
