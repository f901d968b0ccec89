//! Secret redaction for everything Replan posts or logs (SPEC F2).
//!
//! Two sources of secrets: values we know (config keys, tokens from the environment) and token
//! shapes we recognise (GitHub, GitLab, OpenAI, Anthropic, bearer and `Authorization` headers).
//! All matches are collected on the original text, overlapping ones merged, and each merged
//! span replaced by `***` at once, so no fragment of a secret survives next to a mask.

pub use super::forms::MIN_SECRET_LEN;
use super::forms::{FormName, forms};
use super::named_secret::{SecretInput, UNNAMED};
use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;
use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, RwLock};
use tracing_subscriber::fmt::MakeWriter;

pub const MASK: &str = "***";

/// Token shapes, each with the literals one of its matches must contain (compared ignoring
/// ASCII case). When a pattern has a group named `s`, only that group is the secret (the header
/// name around it stays readable).
const SHAPES: [(&[&str], &str); 9] = [
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh; fine-grained PATs.
    (
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        r"gh[pousr]_[A-Za-z0-9_]{20,}",
    ),
    (&["github_pat_"], r"github_pat_[A-Za-z0-9_]{20,}"),
    // GitLab: personal/deploy/runner/CI-build/trigger/OAuth/... tokens, runner registration.
    (
        &[
            "glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "gloas-", "glimt-", "glft-", "glsoat-",
            "glagent-", "glffct-", "glwt-",
        ],
        r"(?:glpat|gldt|glrt|glcbt|glptt|gloas|glimt|glft|glsoat|glagent|glffct|glwt)-[A-Za-z0-9_.\-]{16,}",
    ),
    (&["GR1348941"], r"GR1348941[A-Za-z0-9_\-]{16,}"),
    // Anthropic and OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-); `\b` keeps `task-...`
    // and `risk-...` words out.
    (&["sk-ant-"], r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    (&["sk-"], r"\bsk-[A-Za-z0-9_\-]{16,}"),
    (
        &["bearer"],
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)",
    ),
    (
        &["authorization"],
        r#"(?i)\b(?:proxy-)?authorization"?\s*[:=]\s*"?(?P<s>[^"\r\n]+)"#,
    ),
    (
        &["private-token", "job-token", "api-key"],
        r#"(?i)\b(?:private-token|job-token|x-api-key|api-key|x-goog-api-key)"?\s*[:=]\s*"?(?P<s>[^"\s,;]+)"#,
    ),
];

/// Every shape's literals in one automaton, each mapped to its shape: one pass over a text says
/// which shapes can occur at all, so a shape's regex is compiled (once per process) and run only
/// when its literal is there — for most texts, and most runs, never.
static SHAPE_LITERALS: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let (literals, shapes): (Vec<&str>, Vec<usize>) = SHAPES
        .iter()
        .enumerate()
        .flat_map(|(i, (literals, _))| literals.iter().map(move |l| (*l, i)))
        .unzip();
    let searcher = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(literals)
        .expect("shape literals fit an automaton");
    (searcher, shapes)
});

static SHAPE_REGEXES: [OnceLock<Regex>; SHAPES.len()] = [const { OnceLock::new() }; SHAPES.len()];

fn shape_regex(i: usize) -> &'static Regex {
    SHAPE_REGEXES[i].get_or_init(|| Regex::new(SHAPES[i].1).expect("valid redaction pattern"))
}

/// The shapes whose literals occur in `text`, in order.
fn shapes_present(text: &str) -> Vec<usize> {
    let (searcher, shapes) = &*SHAPE_LITERALS;
    let mut present: Vec<usize> = searcher
        .find_overlapping_iter(text)
        .map(|m| shapes[m.pattern().as_usize()])
        .collect();
    present.sort_unstable();
    present.dedup();
    present
}

/// Redacts known secret values and recognised token shapes.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, each line of a multi-line value included separately, each with its
    /// forms (see [`super::forms`]).
    known: Arc<[String]>,
    /// For each of `known`, the secret (index in `originals`) and the form it is.
    origins: Arc<[(usize, FormName)]>,
    /// `known` in one automaton, built once: every text leaving the process is searched for
    /// all of them in a single pass (None when there are none).
    searcher: Option<Arc<AhoCorasick>>,
    /// The values as given, with their names, for [`Redactor::with_more`] and the push scan
    /// (shared: every text sent out takes a snapshot of the redactor).
    originals: Arc<[Original]>,
    /// Long texts this redactor found nothing to mask in. Shared by its clones (same values);
    /// a redactor with more values starts a memo of its own.
    clean: Arc<Mutex<CleanTexts>>,
}

/// Names and counts only: a redactor printed with `{:?}` shows no value.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.originals)
            .field("forms", &self.known.len())
            .finish()
    }
}

/// Texts at least this long are remembered once found clean: the system prompt, the plan and a
/// task's prompt go out again with every model call of a thread, and are searched only once.
const REMEMBERED_MIN_BYTES: usize = 512;

/// What the memo may hold before it starts over.
const REMEMBERED_MAX_BYTES: usize = 4 << 20;

/// Texts found clean, with and without the token shapes searched; compared whole, never by a
/// hash alone, so a text is only skipped when it is byte for byte one already searched.
#[derive(Default)]
struct CleanTexts {
    with_shapes: std::collections::HashSet<Box<str>>,
    known_only: std::collections::HashSet<Box<str>>,
    bytes: usize,
    /// The last serialised document found clean (see [`Redactor::holds_nothing_in_document`]).
    last_document: Vec<u8>,
}

impl CleanTexts {
    fn set(&mut self, shapes: bool) -> &mut std::collections::HashSet<Box<str>> {
        if shapes {
            &mut self.with_shapes
        } else {
            &mut self.known_only
        }
    }

    fn remember(&mut self, text: &str, shapes: bool) {
        if self.bytes + text.len() > REMEMBERED_MAX_BYTES {
            *self = CleanTexts::default();
        }
        if self.set(shapes).insert(text.into()) {
            self.bytes += text.len();
        }
    }
}

impl std::fmt::Debug for CleanTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} clean texts",
            self.with_shapes.len() + self.known_only.len()
        )
    }
}

/// Up to this many bytes of forms in all, the known values are searched with a DFA (about 600
/// bytes of table per byte of pattern, measured); beyond, with the NFA aho-corasick builds by
/// default.
const DFA_MAX_PATTERN_BYTES: usize = 32 << 10;

/// One automaton for every form of every value.
///
/// Each value has a few dozen forms ([`super::forms`]), so a run with a handful of secrets has
/// over a hundred patterns, where aho-corasick's default is an NFA (measured 2.5 times slower
/// than the DFA on a prompt-sized text with 4 secrets). Its prefilter is off: it looks for the
/// patterns' first bytes, and hex forms start with digits, which JSON and history lines (digests,
/// timestamps) are full of — measured 3.5 times slower than none on such text.
fn automaton(known: &[String]) -> AhoCorasick {
    let bytes: usize = known.iter().map(String::len).sum();
    let kind = (bytes <= DFA_MAX_PATTERN_BYTES).then_some(AhoCorasickKind::DFA);
    // Standard semantics for overlapping search: every occurrence of every value, also those
    // inside or across another (`aaaa` twice in `aaaaa`).
    let build = |kind| {
        AhoCorasick::builder()
            .kind(kind)
            .prefilter(false)
            .build(known)
    };
    build(kind)
        .or_else(|_| build(None))
        .expect("known secret values fit an automaton")
}

/// A value as given, and its name when it came with one.
#[derive(Clone)]
struct Original {
    name: Option<String>,
    value: String,
}

impl std::fmt::Debug for Original {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name.as_deref().unwrap_or(UNNAMED))
    }
}

/// Adds `secret` to `originals` (blank values are skipped), or its name to the same value known
/// unnamed; whether anything changed.
fn merge(originals: &mut Vec<Original>, secret: &impl SecretInput) -> bool {
    let value = secret.value();
    if value.trim().is_empty() {
        return false;
    }
    match originals.iter_mut().find(|o| o.value == value) {
        Some(known) => match (&known.name, secret.name()) {
            (None, Some(name)) => {
                known.name = Some(name.to_owned());
                true
            }
            _ => false,
        },
        None => {
            originals.push(Original {
                name: secret.name().map(str::to_owned),
                value: value.to_owned(),
            });
            true
        }
    }
}

impl Redactor {
    /// Builds a redactor from known secret values (bare or named, see [`SecretInput`]). Empty
    /// and short values are skipped (see [`MIN_SECRET_LEN`]); multi-line values are also masked
    /// line by line. A value given twice keeps the first name it was given.
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: SecretInput,
    {
        let mut originals: Vec<Original> = Vec::new();
        for secret in secrets {
            merge(&mut originals, &secret);
        }
        Redactor::from_originals(originals)
    }

    fn from_originals(originals: Vec<Original>) -> Self {
        let mut known: Vec<(String, (usize, FormName))> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, original) in originals.iter().enumerate() {
            let secret = original.value.as_str();
            let candidates = std::iter::once(secret).chain(secret.lines().map(str::trim));
            for value in candidates {
                if value.trim().chars().count() < MIN_SECRET_LEN {
                    continue;
                }
                for (form_name, form) in forms(value) {
                    if seen.insert(form.clone()) {
                        known.push((form, (i, form_name)));
                    }
                }
            }
        }
        known.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
        let (known, origins): (Vec<String>, Vec<(usize, FormName)>) = known.into_iter().unzip();
        let searcher = (!known.is_empty()).then(|| Arc::new(automaton(&known)));
        Redactor {
            known: known.into(),
            origins: origins.into(),
            searcher,
            originals: originals.into(),
            clean: Arc::default(),
        }
    }

    /// The known values (for tests and `--explain`-style output, never for logs).
    pub fn known_values(&self) -> &[String] {
        &self.known
    }

    /// This redactor plus more known values (e.g. keys learned once the config is loaded), and
    /// names for values it knew unnamed.
    pub fn with_more<I, S>(&self, secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: SecretInput,
    {
        let mut originals = self.originals.to_vec();
        let mut changed = false;
        for secret in secrets {
            changed |= merge(&mut originals, &secret);
        }
        // Every LLM client adds its key again: no new value, no new automaton.
        if !changed {
            return self.clone();
        }
        Redactor::from_originals(originals)
    }

    /// The first known value, in any of its forms, in `bytes` (file contents, any encoding):
    /// the secret's name and the form, never the value (see `secret_scan::find`).
    pub fn find_known(&self, bytes: &[u8]) -> Option<(&str, FormName)> {
        let found = self.searcher.as_ref()?.find(bytes)?;
        let (secret, form) = self.origins[found.pattern().as_usize()];
        let name = self.originals[secret].name.as_deref().unwrap_or(UNNAMED);
        Some((name, form))
    }

    /// Replaces every secret in `text` by `***`. Borrowed when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_with(text, true)
    }

    /// Only the known values (and their encodings), not the token shapes: for text that becomes
    /// file content, where `Authorization: token` is code, not a leak.
    pub fn redact_known<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_with(text, false)
    }

    fn redact_with<'a>(&self, text: &'a str, shapes: bool) -> Cow<'a, str> {
        // Every known value and every shape is longer than this.
        if text.len() < MIN_SECRET_LEN {
            return Cow::Borrowed(text);
        }
        let remembered = text.len() >= REMEMBERED_MIN_BYTES;
        if remembered && self.clean_texts().set(shapes).contains(text) {
            return Cow::Borrowed(text);
        }
        let redacted = if self.may_hold_a_secret(text.as_bytes(), shapes) {
            self.search_and_mask(text, shapes)
        } else {
            Cow::Borrowed(text)
        };
        if remembered && matches!(redacted, Cow::Borrowed(_)) {
            self.clean_texts().remember(text, shapes);
        }
        redacted
    }

    /// Whether a known value or a shape's literal occurs in `text` at all: one search each that
    /// stops at the first match, where collecting every (overlapping) match takes longer and
    /// allocates. Nearly every text that leaves the process holds neither.
    fn may_hold_a_secret(&self, text: &[u8], shapes: bool) -> bool {
        self.searcher.as_ref().is_some_and(|s| s.is_match(text))
            || (shapes && SHAPE_LITERALS.0.is_match(text))
    }

    /// Neither a known value nor a token shape's literal occurs in `text`: redacting it, or any
    /// part of it, changes nothing.
    pub fn holds_nothing_in(&self, text: &str) -> bool {
        !self.may_hold_a_secret(text.as_bytes(), true)
    }

    /// [`Redactor::holds_nothing_in`] for documents sent one after another that mostly repeat
    /// the one before (LLM requests: system prompt, tools, plan, then the conversation so far).
    /// Only the bytes after the part shared with the last clean document are searched, from as
    /// far before it as the longest value or literal reaches, so no match across the seam is
    /// missed.
    pub fn holds_nothing_in_document(&self, text: &[u8]) -> bool {
        let shared = {
            let memo = self.clean_texts();
            let last = &memo.last_document;
            let same = last.iter().zip(text).take_while(|(a, b)| a == b).count();
            same.saturating_sub(self.longest_pattern().saturating_sub(1))
        };
        let clean = !self.may_hold_a_secret(&text[shared..], true);
        if clean {
            let mut memo = self.clean_texts();
            memo.last_document.clear();
            memo.last_document.extend_from_slice(text);
        }
        clean
    }

    /// The longest known value or shape literal, in bytes.
    fn longest_pattern(&self) -> usize {
        let known = self.searcher.as_ref().map_or(0, |s| s.max_pattern_len());
        known.max(SHAPE_LITERALS.0.max_pattern_len())
    }

    fn clean_texts(&self) -> std::sync::MutexGuard<'_, CleanTexts> {
        self.clean.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn search_and_mask<'a>(&self, text: &'a str, shapes: bool) -> Cow<'a, str> {
        let mut current = Cow::Borrowed(text);
        // A mask can join the text around it into a secret again (a secret containing `***`);
        // repeating until nothing changes rules that out. Passes shorten the text; the cap is
        // a guard, never reached in practice.
        for _ in 0..16 {
            let spans = self.secret_spans(&current, shapes);
            if spans.is_empty() {
                return current;
            }
            let mut out = String::with_capacity(current.len());
            let mut last = 0;
            for (start, end) in spans {
                out.push_str(&current[last..start]);
                out.push_str(MASK);
                last = end;
            }
            out.push_str(&current[last..]);
            if out == *current {
                return current;
            }
            current = Cow::Owned(out);
        }
        current
    }

    /// Byte ranges of secrets, sorted and merged.
    fn secret_spans(&self, text: &str, shapes: bool) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        if let Some(searcher) = &self.searcher {
            // Values are UTF-8 like the text, so a match always starts and ends on a character
            // boundary.
            spans.extend(
                searcher
                    .find_overlapping_iter(text)
                    .map(|m| (m.start(), m.end())),
            );
        }
        let present = if shapes {
            shapes_present(text)
        } else {
            Vec::new()
        };
        for i in present {
            for caps in shape_regex(i).captures_iter(text) {
                let m = caps
                    .name("s")
                    .unwrap_or_else(|| caps.get(0).expect("group 0"));
                let trimmed = m.as_str().trim_end();
                if !trimmed.is_empty() && trimmed != MASK {
                    spans.push((m.start(), m.start() + trimmed.len()));
                }
            }
        }
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// `::add-mask::VALUE` workflow commands for GitHub Actions, one per known value and line
    /// (not their encoded forms), with the workflow-command escaping (`%`, CR, LF) the runner
    /// undoes.
    pub fn mask_commands(&self) -> Vec<String> {
        let mut values: Vec<&str> = Vec::new();
        for original in self.originals.iter() {
            let original = &original.value;
            for value in std::iter::once(original.as_str()).chain(original.lines().map(str::trim)) {
                if value.chars().count() >= MIN_SECRET_LEN
                    && !value.contains(['\n', '\r'])
                    && !values.contains(&value)
                {
                    values.push(value);
                }
            }
        }
        values
            .into_iter()
            .map(|value| {
                let escaped = value
                    .replace('%', "%25")
                    .replace('\r', "%0D")
                    .replace('\n', "%0A");
                format!("::add-mask::{escaped}")
            })
            .collect()
    }
}

/// A redactor shared between the log writer and the code that learns secrets later: logging
/// starts before the config (and its keys) is loaded, so the set can grow.
#[derive(Debug, Clone, Default)]
pub struct SharedRedactor(Arc<RwLock<Redactor>>);

impl SharedRedactor {
    pub fn new(redactor: Redactor) -> Self {
        SharedRedactor(Arc::new(RwLock::new(redactor)))
    }

    /// Adds known secret values; every log line written afterwards masks them.
    pub fn add_secrets<I, S>(&self, secrets: I)
    where
        I: IntoIterator<Item = S>,
        S: SecretInput,
    {
        let mut guard = self.0.write().unwrap_or_else(PoisonError::into_inner);
        *guard = guard.with_more(secrets);
    }

    /// A snapshot, for redacting text that is posted rather than logged.
    pub fn current(&self) -> Redactor {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn redact(&self, text: &str) -> String {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .redact(text)
            .into_owned()
    }
}

impl From<Redactor> for SharedRedactor {
    fn from(redactor: Redactor) -> Self {
        SharedRedactor::new(redactor)
    }
}

/// A `tracing_subscriber` [`MakeWriter`] that redacts every log line before it reaches the
/// wrapped writer. Install it first thing in `main`:
///
/// ```text
/// let secrets = SharedRedactor::new(Redactor::new(env_tokens));
/// tracing_subscriber::fmt().with_writer(RedactingWriter::new(std::io::stderr, secrets.clone())).init();
/// // later, once the config is loaded:
/// secrets.add_secrets(config_keys);
/// ```
#[derive(Debug, Clone)]
pub struct RedactingWriter<M> {
    inner: M,
    redactor: SharedRedactor,
}

impl<M> RedactingWriter<M> {
    pub fn new(inner: M, redactor: impl Into<SharedRedactor>) -> Self {
        RedactingWriter {
            inner,
            redactor: redactor.into(),
        }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for RedactingWriter<M> {
    type Writer = RedactingLineWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingLineWriter::new(self.inner.make_writer(), self.redactor.clone())
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        RedactingLineWriter::new(self.inner.make_writer_for(meta), self.redactor.clone())
    }
}

/// The longest unfinished line held back before it is written anyway.
const MAX_PENDING: usize = 64 * 1024;

/// Buffers bytes until a line is complete (or the writer is flushed or dropped), so a secret
/// split across two `write` calls is still seen whole.
pub struct RedactingLineWriter<W: Write> {
    inner: W,
    redactor: SharedRedactor,
    pending: Vec<u8>,
}

impl<W: Write> RedactingLineWriter<W> {
    pub fn new(inner: W, redactor: impl Into<SharedRedactor>) -> Self {
        RedactingLineWriter {
            inner,
            redactor: redactor.into(),
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(bytes);
        let redacted = self.redactor.redact(&text);
        self.inner.write_all(redacted.as_bytes())
    }

    fn emit_complete_lines(&mut self) -> io::Result<()> {
        if let Some(last_newline) = self.pending.iter().rposition(|&b| b == b'\n') {
            let rest = self.pending.split_off(last_newline + 1);
            let complete = std::mem::replace(&mut self.pending, rest);
            self.emit(&complete)?;
        }
        Ok(())
    }

    fn emit_everything(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let all = std::mem::take(&mut self.pending);
            self.emit(&all)?;
        }
        Ok(())
    }
}

impl<W: Write> Write for RedactingLineWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.emit_complete_lines()?;
        // A line without end (a progress bar, binary output) must not be held forever.
        if self.pending.len() > MAX_PENDING {
            self.emit_everything()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit_everything()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingLineWriter<W> {
    fn drop(&mut self) {
        // Nowhere to report a failed log write from a destructor; losing the tail of a log
        // line is better than panicking.
        let _ = self.emit_everything();
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::NamedSecret;
    use std::sync::Mutex;

    fn redact(text: &str) -> String {
        Redactor::default().redact(text).into_owned()
    }

    /// The memo of clean long texts never lets a secret through: a text found clean is masked
    /// by a redactor that learned the value later (and by its clones), the same text with one
    /// byte changed is searched again, and a shape is still found when only known values were
    /// searched before.
    #[test]
    fn long_texts_found_clean_are_searched_again_once_they_could_hold_a_secret() {
        let prompt = "Write notes/task_1.md with the findings of step 1. ".repeat(20);
        let before = Redactor::new(["canary-before-1"]);
        assert!(matches!(before.redact(&prompt), Cow::Borrowed(_)));
        assert!(matches!(before.clone().redact(&prompt), Cow::Borrowed(_)));

        let secret = "canary-after-4f2a9c";
        let leaking = format!("{prompt}{secret}");
        assert!(matches!(before.redact(&leaking), Cow::Borrowed(_)));
        let after = before.with_more([secret]);
        assert!(after.redact(&leaking).ends_with(MASK));
        assert!(after.clone().redact(&leaking).ends_with(MASK));

        let token = format!("{prompt}ghp_{}", "a".repeat(36));
        assert!(matches!(before.redact_known(&token), Cow::Borrowed(_)));
        assert!(before.redact(&token).ends_with(MASK));

        let known = "canary-before-1";
        let changed = format!("{}{known}", &prompt[..prompt.len() - known.len()]);
        assert_eq!(changed.len(), prompt.len());
        assert!(before.redact(&changed).ends_with(MASK));
    }

    /// A shape's regex runs only where one of its literals is found: the literals must be found
    /// in every case the regex accepts.
    #[test]
    fn shapes_are_found_through_their_literals_in_any_case() {
        let r = Redactor::default();
        for (text, masked) in [
            ("AUTHORIZATION=abc123456", "AUTHORIZATION=***"),
            ("X-Goog-Api-Key: AIzaSyABCDEF", "X-Goog-Api-Key: ***"),
            ("BEARER abcdefgh1234", "BEARER ***"),
            ("Job-Token=abcdef1234", "Job-Token=***"),
        ] {
            assert_eq!(r.redact(text), masked, "{text}");
        }
        for (i, (literals, _)) in SHAPES.iter().enumerate() {
            for literal in *literals {
                assert!(
                    shapes_present(&literal.to_uppercase()).contains(&i),
                    "{literal}"
                );
            }
        }
        assert!(shapes_present("no token here, only plain words").is_empty());
    }

    #[test]
    fn token_shapes_are_masked() {
        let cases = [
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 end",
                "token *** end",
            ),
            (
                "GH_TOKEN=ghs_16C7e42F292c6912E7710c838347Ae178B4a",
                "GH_TOKEN=***",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "***",
            ),
            ("glpat-xxxxxxxxxxxxxxxxxxxx.01.0y1234567", "***"),
            (
                "CI_JOB_TOKEN=glcbt-64_abcdefghijklmnopqrstu",
                "CI_JOB_TOKEN=***",
            ),
            ("GR1348941abcdefghijklmnopqrst", "***"),
            ("key sk-proj-abcdefghijklmnopqrstuvwxyzABCD", "key ***"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz-AA", "***"),
            (
                "Authorization: Bearer abc.def.ghi-jkl",
                "Authorization: ***",
            ),
            (
                "curl -H 'authorization: token xyz123456'",
                "curl -H 'authorization: ***",
            ),
            (
                "sent Bearer eyJhbGciOiJIUzI1NiJ9.payload",
                "sent Bearer ***",
            ),
            (
                "PRIVATE-TOKEN: glpat-abc PRIVATE-TOKEN: abcdef123",
                "PRIVATE-TOKEN: *** PRIVATE-TOKEN: ***",
            ),
            (
                r#"{"x-api-key": "sk-ant-zzzzzzzzzzzzzzzzzzzz"}"#,
                r#"{"x-api-key": "***"}"#,
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(input), expected, "{input}");
        }
    }

    #[test]
    fn ordinary_words_are_left_alone() {
        let text = "the task-decomposition-and-planning step has a bearer of news; risk-assessment-document";
        assert!(matches!(Redactor::default().redact(text), Cow::Borrowed(_)));
    }

    #[test]
    fn known_values_are_masked_even_when_overlapping() {
        let r = Redactor::new(["abc123secret", "secret999xyz", "", "tiny"]);
        assert_eq!(r.redact("x abc123secret999xyz y").as_ref(), "x *** y");
        assert_eq!(r.redact("tiny is fine").as_ref(), "tiny is fine");
    }

    #[test]
    fn encoded_forms_are_masked_at_every_base64_alignment() {
        use base64::Engine as _;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let secret = "canary+/s3cret value?&=";
        let r = Redactor::new([secret]);
        for prefix in ["", "a", "ab", "abc", "user:"] {
            for engine in [STANDARD, URL_SAFE] {
                let blob = engine.encode(format!("{prefix}{secret} and more"));
                let out = r.redact(&blob).into_owned();
                assert!(out.contains(MASK), "{prefix:?}: {out}");
                let leftover = engine.decode(out.replace(MASK, "").as_bytes());
                assert!(
                    leftover.map_or(true, |bytes| !String::from_utf8_lossy(&bytes)
                        .contains("s3cret")),
                    "{prefix:?}: {out}"
                );
            }
        }
        let url = percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        assert_eq!(r.redact(&format!("?q={url}")).as_ref(), "?q=***");
        let json = serde_json::to_string(&json_value(secret)).unwrap();
        assert!(!r.redact(&json).contains("s3cret"));
    }

    #[test]
    fn a_redactor_printed_for_debugging_shows_names_not_values() {
        let r = Redactor::new([NamedSecret::new("DEPLOY_TOKEN", "deploy-value-123456")])
            .with_more(["bare-value-654321"]);
        let shown = format!("{r:?} {:?}", SharedRedactor::new(r.clone()));
        assert!(shown.contains("DEPLOY_TOKEN"), "{shown}");
        for value in ["deploy-value", "bare-value", "646570"] {
            assert!(!shown.contains(value), "{shown}");
        }
    }

    /// The disguises a hostile model used (issue 36) are masked whole, inside other text.
    #[test]
    fn hex_reversed_and_split_forms_are_masked() {
        let secret = "ghs_Canary7d41e0b9";
        let r = Redactor::new([secret]);
        let reversed: String = secret.chars().rev().collect();
        let bytes: Vec<String> = secret.bytes().map(|b| format!("{b:02X}")).collect();
        let chars: Vec<String> = secret.chars().map(String::from).collect();
        let fours: Vec<&str> = (0..secret.len())
            .step_by(4)
            .map(|i| &secret[i..(i + 4).min(secret.len())])
            .collect();
        for disguise in [
            hex::encode(secret),
            hex::encode_upper(secret),
            bytes.join(":"),
            bytes.join(" ").to_lowercase(),
            reversed.clone(),
            hex::encode(&reversed),
            hex::encode(secret).chars().rev().collect(),
            chars.join("-"),
            chars.join(","),
            chars.join("."),
            fours.join("_"),
            fours.join(" "),
        ] {
            let text = format!("posted: {disguise}!");
            assert_eq!(r.redact(&text), "posted: ***!", "{disguise}");
        }
    }

    /// The forms of a secret holding characters JSON escapes are found in a serialised document
    /// too (see `outbound::serialized_json_is_clean`).
    #[test]
    fn reversed_and_split_forms_of_a_quoted_secret_are_seen_serialised() {
        let secret = "pa\"ss\\word-0123";
        let redactor = Redactor::new([secret]);
        let reversed: String = secret.chars().rev().collect();
        let split: Vec<String> = secret.chars().map(String::from).collect();
        for form in [reversed, split.join(" ")] {
            let document = serde_json::json!({ "text": format!("x {form} y") });
            let text = serde_json::to_string(&document).unwrap();
            assert!(!redactor.holds_nothing_in(&text), "{text}");
            let masked = super::super::redact_json_with(&redactor, &document);
            assert_eq!(*masked, serde_json::json!({ "text": "x *** y" }));
        }
    }

    fn json_value(text: &str) -> serde_json::Value {
        serde_json::json!({ "v": format!("say \"{text}\"") })
    }

    #[test]
    fn a_mask_cannot_reassemble_a_secret() {
        let r = Redactor::new(["ab***cd"]);
        let out = r.redact("aab***cdd");
        assert!(!out.contains("ab***cd"), "{out}");
    }

    #[test]
    fn multi_line_values_are_masked_per_line() {
        let pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----";
        let r = Redactor::new([pem]);
        assert_eq!(
            r.redact("line MIIEvQIBADANBgkqhkiG9w0BAQEFAASC").as_ref(),
            "line ***"
        );
        let commands = r.mask_commands();
        assert!(commands.contains(&"::add-mask::MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".to_owned()));
        assert!(commands.iter().all(|c| !c.contains('\n')));
    }

    #[test]
    fn mask_commands_escape_percent() {
        let r = Redactor::new(["p%40ssw0rd"]);
        assert_eq!(r.mask_commands(), ["::add-mask::p%2540ssw0rd"]);
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_secret_split_across_writes_is_still_masked() {
        let buffer = Buffer::default();
        let mut writer =
            RedactingLineWriter::new(buffer.clone(), Redactor::new(["hunter22secret"]));
        writer.write_all(b"pass=hunter2").unwrap();
        writer.write_all(b"2secret\nnext ").unwrap();
        drop(writer);
        assert_eq!(
            String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap(),
            "pass=***\nnext "
        );
    }

    #[test]
    fn a_real_tracing_subscriber_never_writes_the_secret() {
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let secrets = SharedRedactor::new(Redactor::new(["s3cr3t-config-key"]));
        let subscriber = tracing_subscriber::fmt()
            .with_writer(RedactingWriter::new(move || sink.clone(), secrets.clone()))
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(
                key = "s3cr3t-config-key",
                "calling the API with ghp_abcdefghijklmnopqrstuvwxyz0123456789"
            );
            tracing::warn!("header was Authorization: Bearer abcdefgh12345");
            secrets.add_secrets(["late-loaded-key-42"]);
            tracing::error!("config said late-loaded-key-42");
        });
        let logged = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(logged.contains("calling the API with ***"), "{logged}");
        assert!(
            logged.contains("key=***") || logged.contains("key=\"***\""),
            "{logged}"
        );
        assert!(logged.contains("WARN"), "{logged}");
        assert!(logged.contains("config said ***"), "{logged}");
        for secret in [
            "s3cr3t-config-key",
            "ghp_",
            "abcdefgh12345",
            "late-loaded-key-42",
        ] {
            assert!(!logged.contains(secret), "{secret} leaked: {logged}");
        }
    }

    #[test]
    fn a_serialised_document_is_clean_only_when_none_of_its_strings_would_be_masked() {
        // A secret JSON escapes (a quote, a backslash) inside a longer string and as
        // a key; a token shape; and a document with neither.
        let secret = "pa\"ss\\word-0123456789";
        let redactor = Redactor::new([secret]);
        let documents = [
            serde_json::json!({ "text": format!("before {secret} after") }),
            serde_json::json!({ format!("{secret}"): 1 }),
            serde_json::json!({ "list": ["x", "token ghp_abcdefghijklmnopqrstuvwxyz0123"] }),
            serde_json::json!({ "text": "nothing here", "n": [1, 2.5, null] }),
        ];
        for document in documents {
            let text = serde_json::to_string(&document).unwrap();
            let masks = super::super::redact_json_with(&redactor, &document);
            let masks = matches!(masks, std::borrow::Cow::Owned(_));
            assert_eq!(redactor.holds_nothing_in(&text), !masks, "{text}");
        }
    }

    #[test]
    fn no_shape_literal_holds_a_character_json_escapes() {
        for (literals, _) in SHAPES {
            for literal in literals {
                assert_eq!(
                    serde_json::to_string(literal).unwrap(),
                    format!("\"{literal}\"")
                );
            }
        }
    }

    #[test]
    fn a_document_repeating_a_clean_one_is_searched_from_before_the_seam() {
        let secret = "seam-secret-0123456789";
        let redactor = Redactor::new([secret]);
        let clean = format!("{{\"system\":\"{}\",\"messages\":[]}}", "x".repeat(4000));
        assert!(redactor.holds_nothing_in_document(clean.as_bytes()));
        // The secret starts inside the part both documents share and ends after it.
        let (head, tail) = secret.split_at(6);
        let before = format!("{{\"system\":\"{}{head}QQQQQQQQ\"}}", "x".repeat(4000));
        assert!(redactor.holds_nothing_in_document(before.as_bytes()));
        let straddling = format!("{{\"system\":\"{}{head}{tail}\"}}", "x".repeat(4000));
        assert!(!redactor.holds_nothing_in_document(straddling.as_bytes()));
        assert!(redactor.holds_nothing_in_document(clean.as_bytes()));
        // Wholly after it, or a token shape; and the clean one again.
        let after = format!("{}{secret}\"}}]}}", &clean[..clean.len() - 2]);
        assert!(!redactor.holds_nothing_in_document(after.as_bytes()));
        let shape = format!(
            "{}ghp_abcdefghijklmnopqrstuvwxyz0123\"}}]}}",
            &clean[..clean.len() - 2]
        );
        assert!(!redactor.holds_nothing_in_document(shape.as_bytes()));
        assert!(redactor.holds_nothing_in_document(clean.as_bytes()));
        // A redactor that knows one more value does not trust what this one found clean.
        let more = Redactor::new([secret, "x".repeat(30).as_str()]);
        assert!(!more.holds_nothing_in_document(clean.as_bytes()));
    }
}
