//! `git add -A -- .` into the work-branch snapshots' temporary index, without git: the save
//! after the last task waits for it, and on a small checkout most of its time is the `git`
//! process itself (issue 15's cycle overhead). Files whose stat data the index vouches for are
//! not read; the others are hashed and stored as loose blobs, and the index is written again
//! (version 2) with a cache tree for every directory, so the tree that follows is read from it.
//!
//! Only where git would stage exactly the same: no attributes anywhere (they can convert line
//! endings or run filters), no line-ending or case settings, no nested repository or submodule,
//! no sparse or assume-unchanged entries, a SHA-1 repository. Anything else is left to git
//! (`false`), which then writes the index as it always did.

use super::index_tree::{self, Cached, Entry, HASH, STAT};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The settings that change what `git add` stages, as `git config -z --get-regexp` reads them.
pub const KEYS: &str = r"^core\.(autocrlf|filemode|symlinks|ignorecase|precomposeunicode|excludesfile|attributesfile|worktree|sparsecheckout)$";

/// Files larger than this are left to git, which streams them.
const LARGEST_FILE: u64 = 64 * 1024 * 1024;

/// What of the configuration an in-process add follows, and the state of the configuration it
/// was read from (a run may change it; then git decides again).
#[derive(Debug)]
pub struct AddSettings {
    excludes_file: Option<PathBuf>,
    config: PathBuf,
    config_modified: Option<SystemTime>,
}

impl AddSettings {
    /// From the `KEYS` found in the configuration of the repository whose (common) git directory
    /// is `git_dir`; `None` when git would stage differently than we do.
    pub fn new(
        entries: &[(String, String)],
        git_dir: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<AddSettings> {
        let is = |value: &str, words: &[&str]| words.contains(&value.to_ascii_lowercase().as_str());
        let truthy = |v: &str| is(v, &["true", "yes", "on", "1"]);
        let falsy = |v: &str| is(v, &["false", "no", "off", "0"]);
        let mut excludes_file = None;
        // The last value of a key is the one git uses.
        for (key, value) in entries {
            let follows = match key.as_str() {
                "core.filemode" | "core.symlinks" => truthy(value),
                "core.autocrlf"
                | "core.ignorecase"
                | "core.precomposeunicode"
                | "core.sparsecheckout" => falsy(value),
                "core.excludesfile" => {
                    excludes_file = Some(expand_home(value, &env)?);
                    true
                }
                _ => false,
            };
            if !follows {
                return None;
            }
        }
        let excludes_file = excludes_file.or_else(|| xdg_git_file("ignore", &env));
        let attributes = [
            xdg_git_file("attributes", &env),
            Some(git_dir.join("info/attributes")),
            env("GIT_ATTR_NOSYSTEM")
                .is_none()
                .then(|| PathBuf::from("/etc/gitattributes")),
        ];
        if attributes.iter().flatten().any(|p| p.exists()) {
            return None;
        }
        let config = git_dir.join("config");
        let config_modified = modified(&config);
        Some(AddSettings {
            excludes_file,
            config,
            config_modified,
        })
    }

    /// The configuration is as it was read.
    fn current(&self) -> bool {
        modified(&self.config) == self.config_modified
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// `~/x` as git expands a path setting; other values as they are.
fn expand_home(value: &str, env: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match value.strip_prefix("~/") {
        Some(rest) => Some(PathBuf::from(env("HOME")?).join(rest)),
        None if value.starts_with('~') => None,
        None => Some(PathBuf::from(value)),
    }
}

/// `$XDG_CONFIG_HOME/git/<name>`, else `~/.config/git/<name>`: git's default global file.
fn xdg_git_file(name: &str, env: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = match env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env("HOME")?).join(".config"),
    };
    Some(base.join("git").join(name))
}

/// Stage the working tree of `repo` in the index file `index` as `git add -A -- .` would,
/// storing new blobs and trees in `objects`; `false` (the index untouched) when git should.
/// `git_dir` is the repository's (common) git directory.
pub fn add_all(
    repo: &Path,
    git_dir: &Path,
    index: &Path,
    objects: &Path,
    settings: &AddSettings,
) -> bool {
    let started = std::time::Instant::now();
    let added = (|| {
        if !settings.current() {
            return None;
        }
        let bytes = std::fs::read(index).ok()?;
        // Entries as new as the index may have changed after it was written within the same
        // tick of the file system's clock ("racily clean"): their files are read again.
        let stamp = std::fs::metadata(index).ok()?.modified().ok()?;
        let (entries, cached) = index_tree::parse(&bytes)?;
        if entries.iter().any(|e| e.flagged || e.mode == 0o160000) {
            return None;
        }
        let globals = [
            Some(git_dir.join("info/exclude")),
            settings.excludes_file.as_ref().map(|file| repo.join(file)),
        ];
        let mut walk = Walk {
            stack: Vec::new(),
            globals: globals
                .iter()
                .flatten()
                .map(|file| matcher(repo, file))
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect(),
            found: Vec::new(),
        };
        walk.dir(repo, &[])?;
        let staged = stage(repo, objects, entries, walk.found, stamp)?;
        let mut cached = cached;
        if let Some(cached) = &mut cached {
            for path in &staged.changed {
                cached.invalidate(path);
            }
        }
        let (_, cached) = index_tree::write_trees(&staged.entries, cached.as_ref(), objects)
            .map_or((None, cached), |(root, node)| (Some(root), Some(node)));
        write_index(index, &staged.entries, cached.as_ref()).ok()
    })()
    .is_some();
    tracing::debug!(
        "snapshot: in-process add {} after {} µs",
        if added { "staged" } else { "left it to git" },
        started.elapsed().as_micros()
    );
    added
}

/// The matcher of a `.gitignore`-style file, rooted at `root`: `Some(None)` when there is no
/// such file, `None` when git may read it differently (not a regular file, a bad pattern).
fn matcher(root: &Path, file: &Path) -> Option<Option<Gitignore>> {
    match std::fs::symlink_metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
        Err(_) => return None,
        Ok(meta) if !meta.is_file() => return None,
        Ok(_) => {}
    }
    let mut builder = GitignoreBuilder::new(root);
    if builder.add(file).is_some() {
        return None;
    }
    builder.build().ok().map(Some)
}

/// The files `git add -A` would look at: every regular file and symlink that no ignore rule
/// excludes, in directories no rule excludes, `.git` left out.
struct Walk {
    /// The `.gitignore` matchers from the root down to the directory being read.
    stack: Vec<Gitignore>,
    /// `info/exclude` and the global excludes file, after every `.gitignore`.
    globals: Vec<Gitignore>,
    found: Vec<(Vec<u8>, std::fs::Metadata)>,
}

impl Walk {
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for matcher in self.stack.iter().rev().chain(&self.globals) {
            match matcher.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }

    fn dir(&mut self, dir: &Path, rel: &[u8]) -> Option<()> {
        if std::fs::symlink_metadata(dir.join(".gitattributes")).is_ok() {
            return None;
        }
        let pushed = match matcher(dir, &dir.join(".gitignore"))? {
            Some(matcher) => {
                self.stack.push(matcher);
                true
            }
            None => false,
        };
        for entry in std::fs::read_dir(dir).ok()? {
            let entry = entry.ok()?;
            let name = entry.file_name();
            if name.as_bytes() == b".git" {
                continue;
            }
            let mut path_rel = rel.to_vec();
            if !path_rel.is_empty() {
                path_rel.push(b'/');
            }
            path_rel.extend_from_slice(name.as_bytes());
            let kind = entry.file_type().ok()?;
            let path = entry.path();
            if kind.is_dir() {
                if self.ignored(&path, true) {
                    continue;
                }
                // A nested repository: git adds it as a submodule entry.
                if std::fs::symlink_metadata(path.join(".git")).is_ok() {
                    return None;
                }
                self.dir(&path, &path_rel)?;
            } else if (kind.is_file() || kind.is_symlink()) && !self.ignored(&path, false) {
                // Ignored files that are tracked come back through the index (see `stage`).
                self.found.push((path_rel, entry.metadata().ok()?));
            }
        }
        if pushed {
            self.stack.pop();
        }
        Some(())
    }
}

/// The index after the add, and the paths whose entries it added, changed or removed.
struct Staged {
    entries: Vec<Entry>,
    changed: Vec<Vec<u8>>,
}

/// Merge the walk's files with the index's entries (both by path) into the entries of the new
/// index, hashing and storing what the stat data do not vouch for.
fn stage(
    repo: &Path,
    objects: &Path,
    entries: Vec<Entry>,
    mut found: Vec<(Vec<u8>, std::fs::Metadata)>,
    stamp: SystemTime,
) -> Option<Staged> {
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut staged = Staged {
        entries: Vec::with_capacity(found.len().max(entries.len())),
        changed: Vec::new(),
    };
    let mut old = entries.into_iter().peekable();
    let mut new = found.into_iter().peekable();
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(o), Some((path, _))) => o.path.cmp(path),
        };
        match order {
            std::cmp::Ordering::Greater => {
                let (path, meta) = new.next()?;
                let entry = hashed(repo, objects, path, &meta)?;
                staged.changed.push(entry.path.clone());
                staged.entries.push(entry);
            }
            std::cmp::Ordering::Equal => {
                let (_, meta) = new.next()?;
                staged.keep_or_update(repo, objects, old.next()?, &meta, stamp)?;
            }
            std::cmp::Ordering::Less => {
                // Not seen by the walk: removed, or tracked and ignored (still staged).
                let entry = old.next()?;
                match tracked_file(repo, &entry.path)? {
                    Some(meta) => staged.keep_or_update(repo, objects, entry, &meta, stamp)?,
                    None => staged.changed.push(entry.path),
                }
            }
        }
    }
    Some(staged)
}

impl Staged {
    fn keep_or_update(
        &mut self,
        repo: &Path,
        objects: &Path,
        entry: Entry,
        meta: &std::fs::Metadata,
        stamp: SystemTime,
    ) -> Option<()> {
        if mode_of(meta)? == entry.mode && vouches(&entry.stat, meta, stamp) {
            self.entries.push(entry);
            return Some(());
        }
        let fresh = hashed(repo, objects, entry.path, meta)?;
        if fresh.id != entry.id || fresh.mode != entry.mode {
            self.changed.push(fresh.path.clone());
        }
        self.entries.push(fresh);
        Some(())
    }
}

/// The file or symlink at a tracked `path` the walk did not list, `None` inside when it is gone
/// (or is no longer a file, or lies beyond a symlink); `None` when it cannot be told.
fn tracked_file(repo: &Path, path: &[u8]) -> Option<Option<std::fs::Metadata>> {
    let mut at = repo.to_path_buf();
    let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(OsStr::from_bytes(part));
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
            Err(_) => return None,
        };
        let last = i + 1 == parts.len();
        if !last && !meta.is_dir() {
            return Some(None);
        }
        // An ignored directory the walk skipped: its attributes would apply to the file.
        if !last && std::fs::symlink_metadata(at.join(".gitattributes")).is_ok() {
            return None;
        }
        if last {
            let file = meta.is_file() || meta.file_type().is_symlink();
            return Some(file.then_some(meta));
        }
    }
    Some(None)
}

/// The mode git stages for the file (`core.filemode` and `core.symlinks` on).
fn mode_of(meta: &std::fs::Metadata) -> Option<u32> {
    if meta.file_type().is_symlink() {
        Some(0o120000)
    } else if meta.is_file() {
        Some(if meta.mode() & 0o100 != 0 {
            0o100755
        } else {
            0o100644
        })
    } else {
        None
    }
}

/// The index's stat data still describe the file, and the file is older than the index.
fn vouches(stat: &[u8; STAT], meta: &std::fs::Metadata, stamp: SystemTime) -> bool {
    let ours = stat_data(meta, 0);
    // Every field but dev (git does not compare it) and mode (compared as the staged mode).
    let same = |range: std::ops::Range<usize>| stat[range.clone()] == ours[range];
    let mtime = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::from(u32::from_be_bytes(
                stat[8..12].try_into().unwrap_or_default(),
            )),
            u32::from_be_bytes(stat[12..16].try_into().unwrap_or_default()),
        );
    same(0..16) && same(20..24) && same(28..40) && mtime < stamp
}

/// The index's stat data of `meta` (32-bit fields, as git truncates them), with `mode`.
fn stat_data(meta: &std::fs::Metadata, mode: u32) -> [u8; STAT] {
    let fields = [
        meta.ctime() as u32,
        meta.ctime_nsec() as u32,
        meta.mtime() as u32,
        meta.mtime_nsec() as u32,
        meta.dev() as u32,
        meta.ino() as u32,
        mode,
        meta.uid(),
        meta.gid(),
        meta.size() as u32,
    ];
    let mut stat = [0; STAT];
    for (i, field) in fields.iter().enumerate() {
        stat[i * 4..i * 4 + 4].copy_from_slice(&field.to_be_bytes());
    }
    stat
}

/// The entry of the file at `path` (`meta` taken before it is read), its blob stored.
fn hashed(repo: &Path, objects: &Path, path: Vec<u8>, meta: &std::fs::Metadata) -> Option<Entry> {
    let mode = mode_of(meta)?;
    if meta.size() > LARGEST_FILE {
        return None;
    }
    let full = repo.join(OsStr::from_bytes(&path));
    let body = if mode == 0o120000 {
        std::fs::read_link(&full).ok()?.into_os_string().into_vec()
    } else {
        std::fs::read(&full).ok()?
    };
    let id = super::git_objects::object_id("blob", &body);
    super::git_objects::store_loose(objects, "blob", &hex::encode(id), &body).ok()?;
    Some(Entry {
        stat: stat_data(meta, mode),
        path,
        mode,
        id,
        flagged: false,
    })
}

/// Write `entries` (sorted) and the cache tree as an index of version 2, replacing `index` at
/// once.
fn write_index(index: &Path, entries: &[Entry], cached: Option<&Cached>) -> std::io::Result<()> {
    use sha1::Digest as _;
    let mut out = Vec::with_capacity(12 + entries.len() * 80);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(entries.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    for entry in entries {
        let start = out.len();
        let mut stat = entry.stat;
        stat[24..28].copy_from_slice(&entry.mode.to_be_bytes());
        out.extend_from_slice(&stat);
        out.extend_from_slice(&entry.id);
        let length = u16::try_from(entry.path.len()).unwrap_or(0xfff).min(0xfff);
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&entry.path);
        // NUL-padded to a multiple of eight bytes, at least one NUL.
        let padded = (out.len() - start + 8) & !7;
        out.resize(start + padded, 0);
    }
    if let Some(cached) = cached {
        let mut data = Vec::new();
        cached.encode(&[], &mut data);
        out.extend_from_slice(b"TREE");
        out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&data);
    }
    let checksum: [u8; HASH] = sha1::Sha1::digest(&out).into();
    out.extend_from_slice(&checksum);
    let temp = index.with_extension("replan-new");
    std::fs::write(&temp, &out)?;
    std::fs::rename(&temp, index).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// A repository with its own home, so git and the add read the same global files.
    struct Repo {
        tmp: tempfile::TempDir,
    }

    impl Repo {
        fn new() -> Repo {
            let repo = Repo {
                tmp: tempfile::tempdir().unwrap(),
            };
            std::fs::create_dir_all(repo.home()).unwrap();
            std::fs::create_dir_all(repo.dir()).unwrap();
            repo.git(&["init", "-q", "-b", "main"], None);
            repo
        }

        fn home(&self) -> PathBuf {
            self.tmp.path().join("home")
        }

        fn dir(&self) -> PathBuf {
            self.tmp.path().join("work")
        }

        fn git_dir(&self) -> PathBuf {
            self.dir().join(".git")
        }

        fn env(&self, name: &str) -> Option<String> {
            (name == "HOME").then(|| self.home().display().to_string())
        }

        fn git(&self, args: &[&str], index: Option<&Path>) -> String {
            let mut command = super::super::git::isolated_git(&self.dir());
            command
                .args(args)
                .env("HOME", self.home())
                .env_remove("XDG_CONFIG_HOME");
            if let Some(index) = index {
                command.env("GIT_INDEX_FILE", index);
            }
            let out = command.output().unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        }

        fn write(&self, path: &str, text: &str) {
            let path = self.dir().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        fn settings(&self) -> Option<AddSettings> {
            let config = self.git(&["config", "-z", "--get-regexp", KEYS], None);
            let mut entries = Vec::new();
            for entry in config.split('\0').filter(|e| !e.is_empty()) {
                let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
                entries.push((key.to_owned(), value.to_owned()));
            }
            AddSettings::new(&entries, &self.git_dir(), |v| self.env(v))
        }

        /// Ours on one copy of the index, `git add -A` on another; both must stage the same
        /// entries and tree, and git must find our index's stat data true to the files.
        fn add_like_git(&self, ours: &Path) {
            let theirs = self.git_dir().join("theirs-index");
            std::fs::copy(ours, &theirs).unwrap();
            let settings = self.settings().expect("settings an add follows");
            let objects = self.git_dir().join("objects");
            assert!(
                add_all(&self.dir(), &self.git_dir(), ours, &objects, &settings),
                "the add was left to git"
            );
            self.git(&["add", "-A", "--", "."], Some(&theirs));
            let staged = |index: &Path| self.git(&["ls-files", "-s"], Some(index));
            assert_eq!(staged(ours), staged(&theirs));
            // `write-tree` answers from our cache tree; `ls-tree` reads every tree we stored.
            let tree = |index: &Path| self.git(&["write-tree"], Some(index));
            let (our_tree, their_tree) = (tree(ours), tree(&theirs));
            assert_eq!(our_tree, their_tree);
            let listing = |tree: &str| self.git(&["ls-tree", "-r", "-t", tree.trim()], None);
            assert_eq!(listing(&our_tree), listing(&their_tree));
            // No entry whose stat data git would find stale.
            assert_eq!(self.git(&["diff-files", "--name-only"], Some(ours)), "");
            std::fs::remove_file(theirs).unwrap();
        }

        /// A copy of the index as the snapshots start from it.
        fn copy_index(&self) -> PathBuf {
            let ours = self.git_dir().join("ours-index");
            std::fs::copy(self.git_dir().join("index"), &ours).unwrap();
            ours
        }
    }

    fn committed() -> Repo {
        let repo = Repo::new();
        for path in ["a-b", "a.b", "a/x", "a/y/z", "a0", "é.txt", "deep/er/f"] {
            repo.write(path, path);
        }
        repo.write("run.sh", "#!/bin/sh\n");
        std::os::unix::fs::symlink("a.b", repo.dir().join("link")).unwrap();
        repo.git(&["add", "-A"], None);
        repo.git(&["commit", "-q", "-m", "init"], None);
        repo
    }

    #[test]
    fn stages_new_changed_removed_and_retyped_files_as_git_does() {
        let repo = committed();
        let ours = repo.copy_index();
        repo.write("a/y/new", "new");
        repo.write("fresh/dir/file", "file");
        repo.write("a.b", "changed");
        std::fs::remove_file(repo.dir().join("a0")).unwrap();
        repo.write("a0/now-a-dir", "x");
        std::fs::remove_file(repo.dir().join("deep/er/f")).unwrap();
        let run = repo.dir().join("run.sh");
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(
            repo.dir().join("a-b"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::remove_file(repo.dir().join("link")).unwrap();
        std::os::unix::fs::symlink("a/x", repo.dir().join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", repo.dir().join("dangling")).unwrap();
        std::fs::create_dir_all(repo.dir().join("empty/dir")).unwrap();
        repo.add_like_git(&ours);
        // And again on the index we wrote, after more work.
        repo.write("a/y/new", "newer");
        repo.write("second", "2");
        repo.add_like_git(&ours);
    }

    #[test]
    fn follows_every_ignore_file_and_keeps_ignored_tracked_files() {
        let repo = committed();
        repo.write(".gitignore", "*.log\nbuild/\n!keep.log\n/rooted\n");
        repo.write("sub/.gitignore", "*.tmp\n!important.tmp\n");
        repo.write("tracked.log", "tracked");
        repo.git(
            &["add", "-f", "tracked.log", ".gitignore", "sub/.gitignore"],
            None,
        );
        repo.write("build/tracked", "t");
        repo.git(&["add", "-f", "build/tracked"], None);
        repo.git(&["commit", "-q", "-m", "ignores"], None);
        let ours = repo.copy_index();
        std::fs::create_dir_all(repo.git_dir().join("info")).unwrap();
        std::fs::write(repo.git_dir().join("info/exclude"), "secret.txt\n").unwrap();
        std::fs::create_dir_all(repo.home().join(".config/git")).unwrap();
        std::fs::write(repo.home().join(".config/git/ignore"), "*.global\n").unwrap();
        for path in [
            "new.log",
            "keep.log",
            "build/out",
            "sub/rooted",
            "rooted",
            "sub/a.tmp",
            "sub/important.tmp",
            "sub/deeper/b.tmp",
            "secret.txt",
            "sub/secret.txt",
            "x.global",
            "plain",
        ] {
            repo.write(path, path);
        }
        repo.write("tracked.log", "tracked, changed");
        repo.write("build/tracked", "changed too");
        repo.add_like_git(&ours);
        let staged = repo.git(&["ls-files"], Some(&ours));
        for (path, expected) in [
            ("new.log", false),
            ("keep.log", true),
            ("build/out", false),
            ("sub/rooted", true),
            ("rooted", false),
            ("sub/important.tmp", true),
            ("sub/deeper/b.tmp", false),
            ("sub/secret.txt", false),
            ("x.global", false),
            ("tracked.log", true),
            ("build/tracked", true),
        ] {
            assert_eq!(staged.lines().any(|l| l == path), expected, "{path}");
        }
    }

    #[test]
    fn an_excludes_file_set_in_the_configuration_is_read() {
        let repo = committed();
        std::fs::write(repo.home().join("excludes"), "*.mine\n").unwrap();
        repo.git(&["config", "core.excludesFile", "~/excludes"], None);
        let ours = repo.copy_index();
        repo.write("notes.mine", "mine");
        repo.write("notes.ours", "ours");
        repo.add_like_git(&ours);
        assert!(!repo.git(&["ls-files"], Some(&ours)).contains("notes.mine"));
    }

    #[test]
    fn what_git_stages_differently_is_left_to_it() {
        let objects = |repo: &Repo| repo.git_dir().join("objects");
        let untouched = |repo: &Repo, why: &str| {
            let ours = repo.copy_index();
            let before = std::fs::read(&ours).unwrap();
            let settings = repo.settings().expect("settings");
            assert!(
                !add_all(
                    &repo.dir(),
                    &repo.git_dir(),
                    &ours,
                    &objects(repo),
                    &settings
                ),
                "{why}"
            );
            assert_eq!(std::fs::read(&ours).unwrap(), before, "{why}");
        };
        let repo = committed();
        repo.write("a/.gitattributes", "*.txt text eol=crlf\n");
        untouched(&repo, "attributes in a directory");
        let repo = committed();
        repo.git(&["init", "-q", "nested"], None);
        untouched(&repo, "a nested repository");
        let repo = committed();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let info = format!("160000,{commit},sub");
        repo.git(&["update-index", "--add", "--cacheinfo", &info], None);
        untouched(&repo, "a submodule entry");
        let repo = committed();
        repo.git(&["update-index", "--skip-worktree", "a-b"], None);
        untouched(&repo, "a sparse entry");
        // Settings that change what is staged, or an attributes file outside the tree.
        let repo = committed();
        repo.git(&["config", "core.autocrlf", "input"], None);
        assert!(repo.settings().is_none(), "core.autocrlf");
        let repo = committed();
        repo.git(&["config", "core.fileMode", "false"], None);
        assert!(repo.settings().is_none(), "core.fileMode");
        let repo = committed();
        std::fs::create_dir_all(repo.git_dir().join("info")).unwrap();
        std::fs::write(repo.git_dir().join("info/attributes"), "* -text\n").unwrap();
        assert!(repo.settings().is_none(), "info/attributes");
        // The configuration changed after it was read.
        let repo = committed();
        let settings = repo.settings().expect("settings");
        std::thread::sleep(std::time::Duration::from_millis(20));
        repo.git(&["config", "core.autocrlf", "true"], None);
        let ours = repo.copy_index();
        assert!(!add_all(
            &repo.dir(),
            &repo.git_dir(),
            &ours,
            &objects(&repo),
            &settings
        ));
    }
}
