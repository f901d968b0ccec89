//! History files on an orphan branch of a local repository, written with `git` plumbing only: the
//! work tree, the index and the checked-out branch are never touched.
//!
//! An append reads the branch tip, writes the new blob, builds a tree in a temporary index, makes a
//! commit and moves the branch with `git update-ref <ref> <new> <old>`: that `<old>` is the
//! compare-and-swap. When another writer moved the branch first, the append starts again from the
//! new tip ([`cas::commit`], bounded by time), renumbering its entries after the last `seq` there.

use super::backend::{AppendOutcome, BlockingBackend, HistoryError, HistoryResult, LoadedHistory};
use super::branch_write;
use super::cas::{self, BranchFile, Retry, Snapshot, Written};
use super::entry::Entry;
use super::jsonl;
use crate::trigger::{ThreadKind, ThreadRef};
use async_trait::async_trait;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

pub const DEFAULT_BRANCH: &str = "replan-history";

/// Called with the attempt number after a commit is made and before `update-ref` (tests use it to
/// move the branch underneath an append).
pub type BeforeUpdateRefHook = Arc<dyn Fn(u32) + Send + Sync>;

#[derive(Clone)]
pub struct GitBranchHistory {
    repo: PathBuf,
    branch: String,
    directory: String,
    /// Push the branch here after every change (e.g. `origin`).
    pub push_remote: Option<String>,
    /// How long an append keeps trying while other writers move the branch.
    pub retry: Retry,
    /// Identity for history commits when neither `GIT_AUTHOR_*` nor git config provides one.
    pub fallback_identity: (String, String),
    /// Extra environment for every `git` command (e.g. `GIT_SSH_COMMAND`, or config isolation).
    pub git_env: Vec<(String, String)>,
    #[doc(hidden)]
    pub before_update_ref: Option<BeforeUpdateRefHook>,
    /// Whether git knows who commits, asked once (two `git config` calls per commit otherwise).
    identity_known: Arc<OnceLock<bool>>,
}

impl std::fmt::Debug for GitBranchHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitBranchHistory")
            .field("repo", &self.repo)
            .field("branch", &self.branch)
            .field("directory", &self.directory)
            .field("push_remote", &self.push_remote)
            .finish()
    }
}

struct Output {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

impl GitBranchHistory {
    pub fn new(
        repo: impl Into<PathBuf>,
        branch: impl Into<String>,
        directory: impl Into<String>,
    ) -> Self {
        GitBranchHistory {
            repo: repo.into(),
            branch: branch.into(),
            directory: directory.into(),
            push_remote: None,
            retry: Retry::default(),
            fallback_identity: ("replan".into(), "replan@localhost".into()),
            git_env: Vec::new(),
            before_update_ref: None,
            identity_known: Arc::new(OnceLock::new()),
        }
    }

    fn full_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    fn git(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, &Path)],
    ) -> Result<Output, HistoryError> {
        let mut cmd =
            crate::git::command::command(&self.repo, &[]).map_err(|e| HistoryError::Io {
                what: "running git".into(),
                source: std::io::Error::other(e.message),
            })?;
        cmd.args(args);
        for (k, v) in &self.git_env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| HistoryError::Io {
            what: "running git (is it installed and on PATH?)".into(),
            source: e,
        })?;
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            pipe.write_all(input).map_err(|e| HistoryError::Io {
                what: format!("writing to git {}", args.join(" ")),
                source: e,
            })?;
        }
        let out = child.wait_with_output().map_err(|e| HistoryError::Io {
            what: format!("git {}", args.join(" ")),
            source: e,
        })?;
        Ok(Output {
            ok: out.status.success(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    fn git_ok(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, &Path)],
    ) -> Result<String, HistoryError> {
        let out = self.git(args, stdin, env)?;
        if out.ok {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(HistoryError::Backend(format!(
                "git {} failed in {}: {}",
                args.join(" "),
                self.repo.display(),
                out.stderr
            )))
        }
    }

    /// The branch tip, or None when the branch does not exist yet.
    fn tip(&self) -> Result<Option<String>, HistoryError> {
        let spec = format!("{}^{{commit}}", self.full_ref());
        let out = self.git(&["rev-parse", "--verify", "--quiet", &spec], None, &[])?;
        Ok(out
            .ok
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }

    /// The file's bytes exactly as stored: lines that are not valid UTF-8 must survive appends.
    fn read_at(&self, commit: &str, path: &str) -> Result<Vec<u8>, HistoryError> {
        let spec = format!("{commit}:{path}");
        let out = self.git(&["cat-file", "blob", &spec], None, &[])?;
        if out.ok {
            return Ok(out.stdout);
        }
        // Only now ask whether the file is simply not there yet (one process less per append).
        let listed = self.git_ok(&["ls-tree", "--name-only", commit, "--", path], None, &[])?;
        if listed.is_empty() {
            return Ok(Vec::new());
        }
        Err(HistoryError::Backend(format!(
            "cannot read {spec} in {}: {}",
            self.repo.display(),
            out.stderr
        )))
    }

    /// The compare-and-swap store of one append or rewrite (this runs on a blocking thread
    /// already, so the shared loop runs through [`cas::run_ready`]).
    fn attempts(&self) -> HistoryResult<Attempts<'_>> {
        self.fetch()?;
        Ok(Attempts {
            history: self,
            count: AtomicU32::new(0),
        })
    }

    fn make_commit(
        &self,
        parent: Option<&str>,
        path: &str,
        text: Option<&[u8]>,
        message: &str,
    ) -> Result<String, HistoryError> {
        let temp_index = TempIndex::new();
        let env = [("GIT_INDEX_FILE", temp_index.0.as_path())];
        match parent {
            Some(p) => self.git_ok(&["read-tree", p], None, &env)?,
            None => self.git_ok(&["read-tree", "--empty"], None, &env)?,
        };
        match text {
            Some(t) => {
                let blob = self.git_ok(&["hash-object", "-w", "--stdin"], Some(t), &[])?;
                let info = format!("100644,{blob},{path}");
                self.git_ok(&["update-index", "--add", "--cacheinfo", &info], None, &env)?;
            }
            None => {
                self.git_ok(&["update-index", "--force-remove", "--", path], None, &env)?;
            }
        }
        let tree = self.git_ok(&["write-tree"], None, &env)?;
        let mut args: Vec<String> = Vec::new();
        if !self.has_identity()? {
            let (name, email) = &self.fallback_identity;
            args.extend([
                "-c".into(),
                format!("user.name={name}"),
                "-c".into(),
                format!("user.email={email}"),
            ]);
        }
        args.extend(["commit-tree".into(), tree]);
        if let Some(p) = parent {
            args.extend(["-p".into(), p.into()]);
        }
        args.extend(["-m".into(), message.into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.git_ok(&args, None, &[])
    }

    /// Whether git already knows who commits; the fallback identity must not override it.
    fn has_identity(&self) -> Result<bool, HistoryError> {
        if let Some(known) = self.identity_known.get() {
            return Ok(*known);
        }
        let known = self.ask_identity()?;
        Ok(*self.identity_known.get_or_init(|| known))
    }

    fn ask_identity(&self) -> Result<bool, HistoryError> {
        let env = |k: &str| {
            std::env::var_os(k).is_some() || self.git_env.iter().any(|(name, _)| name == k)
        };
        if env("GIT_AUTHOR_EMAIL") && env("GIT_COMMITTER_EMAIL") {
            return Ok(true);
        }
        Ok(self.git(&["config", "user.email"], None, &[])?.ok
            && self.git(&["config", "user.name"], None, &[])?.ok)
    }

    fn fetch(&self) -> Result<(), HistoryError> {
        let Some(remote) = &self.push_remote else {
            return Ok(());
        };
        let spec = format!("+{r}:{r}", r = self.full_ref());
        let out = self.git(&["fetch", "--quiet", remote, &spec], None, &[])?;
        if !out.ok && !out.stderr.contains("couldn't find remote ref") {
            return Err(HistoryError::Backend(format!(
                "git fetch {remote} {} failed: {}",
                self.branch, out.stderr
            )));
        }
        Ok(())
    }

    /// Push the branch; false when the remote rejected it because it moved.
    fn push(&self) -> Result<bool, HistoryError> {
        let Some(remote) = &self.push_remote else {
            return Ok(true);
        };
        let spec = format!("{r}:{r}", r = self.full_ref());
        let out = self.git(&["push", "--quiet", remote, &spec], None, &[])?;
        if out.ok {
            return Ok(true);
        }
        if out.stderr.contains("rejected") || out.stderr.contains("fetch first") {
            return Ok(false);
        }
        Err(HistoryError::Backend(format!(
            "git push {remote} {} failed: {}",
            self.branch, out.stderr
        )))
    }
}

impl BlockingBackend for GitBranchHistory {
    fn load_blocking(&self, thread: &ThreadRef) -> HistoryResult<LoadedHistory> {
        self.fetch()?;
        let Some(tip) = self.tip()? else {
            return Ok(LoadedHistory::default());
        };
        let bytes = self.read_at(&tip, &thread.history_path(&self.directory))?;
        Ok(LoadedHistory {
            text: jsonl::text_of(bytes),
            version: Some(tip),
        })
    }

    fn append_blocking(
        &self,
        thread: &ThreadRef,
        entries: &[Entry],
    ) -> HistoryResult<AppendOutcome> {
        let path = thread.history_path(&self.directory);
        cas::run_ready(branch_write::append(
            &self.attempts()?,
            &path,
            entries,
            self.retry,
        ))
    }

    fn rewrite_blocking(&self, thread: &ThreadRef, text: &str) -> HistoryResult<AppendOutcome> {
        let path = thread.history_path(&self.directory);
        cas::run_ready(branch_write::rewrite(
            &self.attempts()?,
            &path,
            text,
            self.retry,
        ))
    }

    fn threads_blocking(&self) -> HistoryResult<Vec<ThreadRef>> {
        self.fetch()?;
        let Some(tip) = self.tip()? else {
            return Ok(Vec::new());
        };
        let dir = self.directory.trim_end_matches('/');
        let listed = self.git_ok(
            &["ls-tree", "-r", "--name-only", &tip, "--", dir],
            None,
            &[],
        )?;
        let mut out: Vec<ThreadRef> = listed
            .lines()
            .filter_map(|p| {
                let rest = p.strip_prefix(dir)?.strip_prefix('/')?;
                let (kind, file) = rest.split_once('/')?;
                let number = file.strip_suffix(".jsonl")?.parse().ok()?;
                Some(ThreadRef {
                    kind: ThreadKind::from_dir_name(kind)?,
                    number,
                })
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

/// One append's attempts on the branch (the count feeds the test hook).
struct Attempts<'a> {
    history: &'a GitBranchHistory,
    count: AtomicU32,
}

#[async_trait]
impl BranchFile for Attempts<'_> {
    type Base = Option<String>;

    async fn read(&self, path: &str) -> Result<Snapshot<Option<String>>, HistoryError> {
        let tip = self.history.tip()?;
        let bytes = match &tip {
            Some(commit) => self.history.read_at(commit, path)?,
            None => Vec::new(),
        };
        Ok(Snapshot { bytes, base: tip })
    }

    async fn write(
        &self,
        path: &str,
        old: &Option<String>,
        bytes: Option<&[u8]>,
        message: &str,
    ) -> Result<Written, HistoryError> {
        let me = self.history;
        let commit = me.make_commit(old.as_deref(), path, bytes, message)?;
        if let Some(hook) = &me.before_update_ref {
            hook(self.count.fetch_add(1, Ordering::Relaxed));
        }
        let expected = old.clone().unwrap_or_default();
        let out = me.git(
            &["update-ref", &me.full_ref(), &commit, &expected],
            None,
            &[],
        )?;
        if !out.ok {
            if is_ref_conflict(&out.stderr) {
                return Ok(Written::Moved(out.stderr));
            }
            return Err(HistoryError::Backend(format!(
                "git update-ref {} failed in {}: {}",
                me.full_ref(),
                me.repo.display(),
                out.stderr
            )));
        }
        if me.push()? {
            return Ok(Written::Committed(Some(commit)));
        }
        // The remote moved: take its branch and apply our change again on top of it.
        me.fetch()?;
        Ok(Written::Moved("the remote history branch moved".into()))
    }

    async fn pause(&self, duration: std::time::Duration) {
        std::thread::sleep(duration);
    }
}

/// A temporary index file, removed on drop (git creates it; we only pick the name).
struct TempIndex(PathBuf);

impl TempIndex {
    fn new() -> Self {
        TempIndex(std::env::temp_dir().join(format!(
            "replan-index-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        )))
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

fn is_ref_conflict(stderr: &str) -> bool {
    stderr.contains("but expected")
        || stderr.contains("already exists")
        || stderr.contains("cannot lock ref")
        || stderr.contains("reference already exists")
}
