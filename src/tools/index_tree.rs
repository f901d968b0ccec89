//! The tree `git write-tree` would write for an index, written without git: the work-branch
//! save needs one after every `git add -A`, and a `git` process costs about 2 ms to start
//! (issue 15's cycle overhead). Only for an index read exactly as git reads it: SHA-1, version
//! 2, 3 or 4, every entry at stage 0 and of a mode a tree holds, no split index, no sparse
//! directories, no intent-to-add entries. Subtrees the index's cache tree (its `TREE`
//! extension) still vouches for are taken from it, as git takes them; the others are hashed
//! and written as loose objects. Anything else, or more new trees than a save makes, is left
//! to git (`None`), which also finds a tree already packed instead of writing it again.

use std::path::Path;

/// New trees beyond this many are left to `git write-tree`: it looks each up in the packs,
/// where we would write loose copies of the unchanged ones (a first `git add -A` on a fresh
/// checkout, whose entries are "racily clean", leaves no subtree of the cache valid). git then
/// writes the cache tree into the index, and the next saves find their subtrees there.
const MAX_NEW_TREES: usize = 16;

pub(super) const HASH: usize = 20;

/// The bytes of an entry's stat data: ctime, mtime (seconds and nanoseconds each), dev, ino,
/// mode, uid, gid and size, 32 bits each, big-endian.
pub(super) const STAT: usize = 40;

pub(super) struct Entry {
    pub path: Vec<u8>,
    pub mode: u32,
    pub id: [u8; HASH],
    /// As the index holds it (the mode field included).
    pub stat: [u8; STAT],
    /// An extended flag (skip-worktree) or the assume-valid bit is set.
    pub flagged: bool,
}

/// A node of the cache tree: how many index entries it covers and its tree, when still valid.
#[derive(Default, Clone)]
pub(super) struct Cached {
    pub entries: Option<usize>,
    pub id: Option<[u8; HASH]>,
    pub subtrees: Vec<(Vec<u8>, Cached)>,
}

impl Cached {
    /// The node's content changed under `path` (a file's path): it and every node on the way
    /// down to the file no longer vouch for their trees.
    pub fn invalidate(&mut self, path: &[u8]) {
        self.entries = None;
        self.id = None;
        if let Some(slash) = path.iter().position(|&b| b == b'/') {
            let (name, rest) = (&path[..slash], &path[slash + 1..]);
            if let Some((_, sub)) = self.subtrees.iter_mut().find(|(n, _)| n == name) {
                sub.invalidate(rest);
            }
        }
    }

    /// The `TREE` extension's data for this node as the root (its name is empty).
    pub fn encode(&self, name: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(name);
        out.push(0);
        let count = self.entries.filter(|_| self.id.is_some());
        let count = count.map_or_else(|| "-1".to_owned(), |n| n.to_string());
        out.extend_from_slice(format!("{count} {}\n", self.subtrees.len()).as_bytes());
        if let (Some(_), Some(id)) = (self.entries, self.id) {
            out.extend_from_slice(&id);
        }
        for (name, sub) in &self.subtrees {
            sub.encode(name, out);
        }
    }
}

/// Write the tree of the index `bytes` into `objects`; its id, or `None` when git should.
pub fn write_tree(bytes: &[u8], objects: &Path) -> Option<String> {
    let (entries, cached) = parse(bytes)?;
    let (root, _) = write_trees(&entries, cached.as_ref(), objects)?;
    Some(hex::encode(root))
}

/// The tree of `entries`, writing the trees `cached` does not vouch for, and the cache tree
/// that now vouches for every tree; `None` when git should write them (see [`MAX_NEW_TREES`]).
pub(super) fn write_trees(
    entries: &[Entry],
    cached: Option<&Cached>,
    objects: &Path,
) -> Option<([u8; HASH], Cached)> {
    let mut new = Vec::new();
    let (root, node) = build(entries, 0, cached, &mut new)?;
    if new.len() > MAX_NEW_TREES {
        return None;
    }
    for (id, body) in &new {
        super::git_objects::store_loose(objects, "tree", &hex::encode(id), body).ok()?;
    }
    Some((root, node))
}

/// Everything the tree of an index holds: the root's id, every tree (id and body, the cache
/// tree not consulted) and every blob's id (submodules' commits are not objects of this
/// repository). What a push must be able to send.
pub struct Contents {
    pub root: [u8; HASH],
    pub trees: Vec<([u8; HASH], Vec<u8>)>,
    pub blobs: Vec<[u8; HASH]>,
}

/// The [`Contents`] of the index `bytes`; `None` where [`write_tree`] would leave it to git.
pub fn contents(bytes: &[u8]) -> Option<Contents> {
    let (entries, _) = parse(bytes)?;
    let mut trees = Vec::new();
    let (root, _) = build(&entries, 0, None, &mut trees)?;
    let blobs = entries
        .iter()
        .filter(|e| e.mode != 0o160000)
        .map(|e| e.id)
        .collect();
    Some(Contents { root, trees, blobs })
}

/// The tree of `entries` (all under the same `base` bytes of path), appending the id and body
/// of each tree the cache does not vouch for to `new`; and the cache-tree node that vouches for
/// it (a vouched-for node as it was).
fn build(
    entries: &[Entry],
    base: usize,
    cached: Option<&Cached>,
    new: &mut Vec<([u8; HASH], Vec<u8>)>,
) -> Option<([u8; HASH], Cached)> {
    if let Some(
        node @ Cached {
            entries: Some(n),
            id: Some(id),
            ..
        },
    ) = cached
        && *n == entries.len()
    {
        return Some((*id, node.clone()));
    }
    let mut node = Cached {
        entries: Some(entries.len()),
        ..Cached::default()
    };
    let mut body = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = entries[i].path.get(base..)?;
        match rest.iter().position(|&b| b == b'/') {
            None => {
                push_entry(&mut body, entries[i].mode, rest, &entries[i].id);
                i += 1;
            }
            Some(len) => {
                // Sorted paths: everything under `name/` follows in one run.
                let name = &rest[..len];
                let end = i + entries[i..]
                    .iter()
                    .take_while(|e| {
                        e.path
                            .get(base..)
                            .is_some_and(|r| r.len() > len && r.starts_with(name) && r[len] == b'/')
                    })
                    .count();
                let sub = cached.and_then(|c| {
                    c.subtrees
                        .iter()
                        .find(|(n, _)| n.as_slice() == name)
                        .map(|(_, c)| c)
                });
                let (id, sub) = build(&entries[i..end], base + len + 1, sub, new)?;
                push_entry(&mut body, 0o40000, name, &id);
                node.subtrees.push((name.to_vec(), sub));
                i = end;
            }
        }
    }
    let id = super::git_objects::object_id("tree", &body);
    new.push((id, body));
    node.id = Some(id);
    Some((id, node))
}

fn push_entry(body: &mut Vec<u8>, mode: u32, name: &[u8], id: &[u8; HASH]) {
    body.extend_from_slice(format!("{mode:o} ").as_bytes());
    body.extend_from_slice(name);
    body.push(0);
    body.extend_from_slice(id);
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

/// The entries and the cache tree of an index file (see git's `Documentation/gitformat-index`).
pub(super) fn parse(bytes: &[u8]) -> Option<(Vec<Entry>, Option<Cached>)> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(bytes, 8)? as usize;
    let end = bytes.len().checked_sub(HASH)?;
    let mut entries: Vec<Entry> = Vec::with_capacity(count.min(end / 62));
    let mut at = 12;
    for _ in 0..count {
        let mode = be32(bytes, at + 24)?;
        let id: [u8; HASH] = bytes.get(at + 40..at + 40 + HASH)?.try_into().ok()?;
        let flags = be16(bytes, at + 60)?;
        let stage = (flags >> 12) & 3;
        let extended = flags & 0x4000 != 0;
        let stat: [u8; STAT] = bytes.get(at..at + STAT)?.try_into().ok()?;
        let flagged = extended || flags & 0x8000 != 0;
        let mut name_at = at + 62;
        if extended {
            let more = be16(bytes, name_at)?;
            // Intent-to-add entries are left out of git's trees; leave them to git.
            if version < 3 || more & 0x2000 != 0 {
                return None;
            }
            name_at += 2;
        }
        if stage != 0 || !matches!(mode, 0o100644 | 0o100755 | 0o120000 | 0o160000) {
            return None;
        }
        let path = if version == 4 {
            let (strip, suffix_at) = varint(bytes, name_at)?;
            let nul = suffix_at + bytes.get(suffix_at..end)?.iter().position(|&b| b == 0)?;
            let previous = entries.last().map_or(&[][..], |e| e.path.as_slice());
            let keep = previous.len().checked_sub(strip)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[suffix_at..nul]);
            at = nul + 1;
            path
        } else {
            let nul = name_at + bytes.get(name_at..end)?.iter().position(|&b| b == 0)?;
            let path = bytes[name_at..nul].to_vec();
            // Entries are padded with NULs to a multiple of eight bytes.
            at += (name_at - at + path.len() + 8) & !7;
            path
        };
        if at > end || path.is_empty() {
            return None;
        }
        entries.push(Entry {
            path,
            mode,
            id,
            stat,
            flagged,
        });
    }
    let mut cached = None;
    while at < end {
        let signature = bytes.get(at..at + 4)?;
        let size = be32(bytes, at + 4)? as usize;
        let data_end = (at + 8).checked_add(size).filter(|&e| e <= end)?;
        let data = bytes.get(at + 8..data_end)?;
        match signature {
            b"TREE" => cached = Some(cache_tree(data, &mut 0)?.1),
            // Optional extensions start with a capital letter; a split index (`link`), sparse
            // directories (`sdir`) or anything else git must understand is git's to read.
            s if s[0].is_ascii_uppercase() => {}
            _ => return None,
        }
        at += 8 + size;
    }
    Some((entries, cached))
}

/// git's offset varint (index v4 path prefixes).
fn varint(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut byte = *bytes.get(at)?;
    at += 1;
    let mut value = usize::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *bytes.get(at)?;
        at += 1;
        value = value.checked_add(1)?.checked_mul(128)? | usize::from(byte & 0x7f);
    }
    Some((value, at))
}

/// One cache-tree node (its name and the node) with its subtrees, in the `TREE` extension's
/// pre-order.
fn cache_tree(data: &[u8], at: &mut usize) -> Option<(Vec<u8>, Cached)> {
    let nul = *at + data.get(*at..)?.iter().position(|&b| b == 0)?;
    let name = data[*at..nul].to_vec();
    *at = nul + 1;
    let number = |at: &mut usize, until: u8| -> Option<i64> {
        let stop = *at + data.get(*at..)?.iter().position(|&b| b == until)?;
        let text = std::str::from_utf8(&data[*at..stop]).ok()?;
        *at = stop + 1;
        text.parse().ok()
    };
    let count = number(at, b' ')?;
    let subtree_count = number(at, b'\n')?;
    let mut node = Cached::default();
    if count >= 0 {
        node.entries = Some(usize::try_from(count).ok()?);
        node.id = Some(data.get(*at..*at + HASH)?.try_into().ok()?);
        *at += HASH;
    }
    for _ in 0..subtree_count.max(0) {
        node.subtrees.push(cache_tree(data, at)?);
    }
    Some((name, node))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str], index: Option<&Path>) -> String {
        let mut command = super::super::git::isolated_git(dir);
        command.args(args);
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "git {args:?}: {:?}", out);
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn write(dir: &Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Names that sort differently as paths and as tree entries, and a deep one.
    const FILES: [&str; 7] = [
        "a-b",
        "a.b",
        "a/x",
        "a/y/z",
        "a0",
        "é.txt",
        "deep/er/still/f",
    ];

    /// A committed repository of [`FILES`], an executable, a symlink and a submodule entry.
    fn repository() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"], None);
        for path in FILES {
            write(dir, path, path);
        }
        write(dir, "run.sh", "#!/bin/sh\n");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("a.b", dir.join("link")).unwrap();
        git(dir, &["add", "-A"], None);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        git(
            dir,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{commit},sub"),
            ],
            None,
        );
        git(dir, &["commit", "-q", "-m", "init"], None);
        tmp
    }

    /// The work a run leaves: a new file deep down, a changed one, a removed one.
    fn change(dir: &Path) {
        write(dir, "a/y/new", "new");
        write(dir, "a.b", "changed");
        std::fs::remove_file(dir.join("a0")).unwrap();
    }

    /// Our tree of a copy of `index` after `git add -A`, and git's of another copy.
    fn ours_and_gits(dir: &Path, index: &Path) -> (Option<String>, String) {
        git(dir, &["add", "-A"], Some(index));
        let bytes = std::fs::read(index).unwrap();
        let ours = write_tree(&bytes, &dir.join(".git/objects"));
        let theirs_index = dir.join(".git/theirs-index");
        std::fs::copy(index, &theirs_index).unwrap();
        (ours, git(dir, &["write-tree"], Some(&theirs_index)))
    }

    #[test]
    fn the_tree_is_the_one_git_write_tree_writes_for_each_index_version() {
        for version in ["2", "3", "4"] {
            let tmp = repository();
            let dir = tmp.path();
            let index = dir.join(".git/ours-index");
            std::fs::copy(dir.join(".git/index"), &index).unwrap();
            git(
                dir,
                &["update-index", "--index-version", version],
                Some(&index),
            );
            if version == "3" {
                // An extended flag that trees ignore.
                git(
                    dir,
                    &["update-index", "--skip-worktree", "a-b"],
                    Some(&index),
                );
            }
            change(dir);
            let (ours, theirs) = ours_and_gits(dir, &index);
            assert_eq!(ours.as_deref(), Some(theirs.as_str()), "index v{version}");
            git(dir, &["fsck", "--strict", "--no-dangling"], None);
        }
    }

    #[test]
    fn subtrees_the_cache_tree_vouches_for_are_not_written_again() {
        let tmp = repository();
        let dir = tmp.path();
        // Files older than the index, so `git add -A` keeps the cache tree of what it does not
        // change (an entry as new as its index is "racily clean" and re-added).
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for path in FILES.iter().chain(&["run.sh"]) {
            let file = std::fs::File::options()
                .append(true)
                .open(dir.join(path))
                .unwrap();
            file.set_modified(past).unwrap();
        }
        git(
            dir,
            &["update-index", "-q", "--ignore-submodules", "--refresh"],
            None,
        );
        git(dir, &["write-tree"], None);
        let index = dir.join(".git/ours-index");
        std::fs::copy(dir.join(".git/index"), &index).unwrap();
        change(dir);
        git(dir, &["add", "-A"], Some(&index));
        let (entries, cached) = parse(&std::fs::read(&index).unwrap()).unwrap();
        let mut new = Vec::new();
        build(&entries, 0, cached.as_ref(), &mut new).unwrap();
        // The root, `a` and `a/y` changed; `deep`, `deep/er` and `deep/er/still` did not.
        assert_eq!(new.len(), 3);
        let (ours, theirs) = ours_and_gits(dir, &index);
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
    }

    #[test]
    fn an_empty_index_has_the_empty_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"], None);
        let index = dir.join(".git/ours-index");
        git(dir, &["read-tree", "--empty"], Some(&index));
        let (ours, theirs) = ours_and_gits(dir, &index);
        assert_eq!(theirs, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
    }

    #[test]
    fn what_git_reads_differently_is_left_to_git() {
        let objects = |dir: &Path| dir.join(".git/objects");
        // An intent-to-add entry.
        let tmp = repository();
        let dir = tmp.path();
        write(dir, "later", "later");
        git(dir, &["add", "-N", "later"], None);
        let bytes = std::fs::read(dir.join(".git/index")).unwrap();
        assert_eq!(write_tree(&bytes, &objects(dir)), None, "intent to add");
        // A split index.
        let tmp = repository();
        let dir = tmp.path();
        git(dir, &["update-index", "--split-index"], None);
        let bytes = std::fs::read(dir.join(".git/index")).unwrap();
        assert_eq!(write_tree(&bytes, &objects(dir)), None, "split index");
        // An unmerged path.
        let tmp = repository();
        let dir = tmp.path();
        let blob = git(dir, &["rev-parse", "HEAD:a.b"], None);
        let stages = format!("100644 {blob} 1\tc\n100644 {blob} 2\tc\n");
        let mut child = super::super::git::isolated_git(dir)
            .args(["update-index", "--index-info"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stages.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        let bytes = std::fs::read(dir.join(".git/index")).unwrap();
        assert_eq!(write_tree(&bytes, &objects(dir)), None, "unmerged");
        // Not an index at all, or cut short.
        assert_eq!(write_tree(b"not an index", &objects(dir)), None);
        assert_eq!(write_tree(&bytes[..bytes.len() / 2], &objects(dir)), None);
    }

    #[test]
    fn many_new_trees_without_a_cache_tree_are_left_to_git() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"], None);
        for i in 0..=MAX_NEW_TREES {
            write(dir, &format!("d{i}/f"), "f");
        }
        git(dir, &["add", "-A"], None);
        let bytes = std::fs::read(dir.join(".git/index")).unwrap();
        assert_eq!(write_tree(&bytes, &dir.join(".git/objects")), None);
    }
}
