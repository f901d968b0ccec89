//! Git objects with their real SHA-1 ids, for the forge fakes' git data.
//!
//! Blobs, trees and commits are encoded exactly as git encodes them, so an id the fake
//! hands out equals what `git hash-object` / `git write-tree` / `git commit-tree` compute.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use sha1::{Digest, Sha1};

/// A tree entry; `mode` is in GitHub's spelling (`100644`, `100755`, `040000`, `120000`, `160000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub name: String,
    pub mode: String,
    pub sha: String,
}

impl TreeEntry {
    /// `blob`, `tree` or `commit` (a submodule), from the mode.
    pub fn kind(&self) -> &'static str {
        kind_of_mode(&self.mode)
    }
}

pub fn kind_of_mode(mode: &str) -> &'static str {
    match mode {
        "040000" | "40000" => "tree",
        "160000" => "commit",
        _ => "blob",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub email: String,
    /// Seconds since the epoch, UTC.
    pub time: i64,
}

impl Signature {
    fn encode(&self) -> String {
        format!("{} <{}> {} +0000", self.name, self.email, self.time)
    }

    /// RFC 3339 in UTC, as the APIs show dates.
    pub fn date(&self) -> String {
        chrono::DateTime::from_timestamp(self.time, 0)
            .expect("signature time in range")
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub tree: String,
    pub parents: Vec<String>,
    pub author: Signature,
    pub committer: Signature,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitObject {
    Blob(Vec<u8>),
    Tree(Vec<TreeEntry>),
    Commit(Commit),
}

impl GitObject {
    pub fn kind(&self) -> &'static str {
        match self {
            GitObject::Blob(_) => "blob",
            GitObject::Tree(_) => "tree",
            GitObject::Commit(_) => "commit",
        }
    }

    /// The object's content as git stores it (before the `kind len\0` header).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            GitObject::Blob(bytes) => bytes.clone(),
            GitObject::Tree(entries) => {
                let mut sorted = entries.clone();
                sorted.sort_by(git_tree_order);
                let mut out = Vec::new();
                for entry in sorted {
                    let mode = entry.mode.trim_start_matches('0');
                    out.extend_from_slice(format!("{mode} {}\0", entry.name).as_bytes());
                    out.extend_from_slice(&hex::decode(&entry.sha).expect("tree entry sha is hex"));
                }
                out
            }
            GitObject::Commit(commit) => {
                let mut text = format!("tree {}\n", commit.tree);
                for parent in &commit.parents {
                    text.push_str(&format!("parent {parent}\n"));
                }
                text.push_str(&format!("author {}\n", commit.author.encode()));
                text.push_str(&format!("committer {}\n", commit.committer.encode()));
                text.push('\n');
                text.push_str(&commit.message);
                text.into_bytes()
            }
        }
    }

    pub fn id(&self) -> String {
        hash_object(self.kind(), &self.encode())
    }
}

/// `git hash-object -t <kind>` for the given content.
pub fn hash_object(kind: &str, content: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", content.len()).as_bytes());
    hasher.update(content);
    hex::encode(hasher.finalize())
}

/// Git sorts tree entries by name, comparing a subtree's name as if it ended in `/`.
fn git_tree_order(left: &TreeEntry, right: &TreeEntry) -> Ordering {
    sort_key(left).cmp(&sort_key(right))
}

fn sort_key(entry: &TreeEntry) -> Vec<u8> {
    let mut key = entry.name.as_bytes().to_vec();
    if entry.kind() == "tree" {
        key.push(b'/');
    }
    key
}

/// A non-tree leaf of a flattened tree: a file, a symlink or a submodule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub mode: String,
    pub sha: String,
}

/// All objects of one repository, by id.
#[derive(Debug, Default, Clone)]
pub struct ObjectStore {
    objects: HashMap<String, GitObject>,
}

impl ObjectStore {
    pub fn insert(&mut self, object: GitObject) -> String {
        let id = object.id();
        self.objects.insert(id.clone(), object);
        id
    }

    pub fn get(&self, sha: &str) -> Option<&GitObject> {
        self.objects.get(sha)
    }

    pub fn blob(&self, sha: &str) -> Option<&Vec<u8>> {
        match self.objects.get(sha) {
            Some(GitObject::Blob(bytes)) => Some(bytes),
            _ => None,
        }
    }

    pub fn tree(&self, sha: &str) -> Option<&Vec<TreeEntry>> {
        match self.objects.get(sha) {
            Some(GitObject::Tree(entries)) => Some(entries),
            _ => None,
        }
    }

    pub fn commit(&self, sha: &str) -> Option<&Commit> {
        match self.objects.get(sha) {
            Some(GitObject::Commit(commit)) => Some(commit),
            _ => None,
        }
    }

    /// Every leaf under `tree_sha`, by full path.
    pub fn flatten(&self, tree_sha: &str) -> BTreeMap<String, Leaf> {
        let mut leaves = BTreeMap::new();
        self.flatten_into(tree_sha, "", &mut leaves);
        leaves
    }

    fn flatten_into(&self, tree_sha: &str, prefix: &str, leaves: &mut BTreeMap<String, Leaf>) {
        for entry in self.tree(tree_sha).cloned().unwrap_or_default() {
            let path = format!("{prefix}{}", entry.name);
            if entry.kind() == "tree" {
                self.flatten_into(&entry.sha, &format!("{path}/"), leaves);
            } else {
                leaves.insert(
                    path,
                    Leaf {
                        mode: entry.mode,
                        sha: entry.sha,
                    },
                );
            }
        }
    }

    /// Builds (and stores) the nested trees for a set of leaves; returns the root tree id.
    pub fn build_tree(&mut self, leaves: &BTreeMap<String, Leaf>) -> String {
        let mut entries = Vec::new();
        let mut subtrees: BTreeMap<String, BTreeMap<String, Leaf>> = BTreeMap::new();
        for (path, leaf) in leaves {
            match path.split_once('/') {
                Some((dir, rest)) => {
                    subtrees
                        .entry(dir.to_string())
                        .or_default()
                        .insert(rest.to_string(), leaf.clone());
                }
                None => entries.push(TreeEntry {
                    name: path.clone(),
                    mode: leaf.mode.clone(),
                    sha: leaf.sha.clone(),
                }),
            }
        }
        for (dir, children) in subtrees {
            let sha = self.build_tree(&children);
            entries.push(TreeEntry {
                name: dir,
                mode: "040000".to_string(),
                sha,
            });
        }
        self.insert(GitObject::Tree(entries))
    }

    /// The entry at `path` inside `tree_sha` (`""` is the tree itself, as a `040000` entry).
    pub fn entry_at(&self, tree_sha: &str, path: &str) -> Option<TreeEntry> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Some(TreeEntry {
                name: String::new(),
                mode: "040000".to_string(),
                sha: tree_sha.to_string(),
            });
        }
        let mut current = tree_sha.to_string();
        let mut components = path.split('/').peekable();
        while let Some(component) = components.next() {
            let entry = self
                .tree(&current)?
                .iter()
                .find(|entry| entry.name == component)?
                .clone();
            if components.peek().is_none() {
                return Some(entry);
            }
            if entry.kind() != "tree" {
                return None;
            }
            current = entry.sha;
        }
        None
    }

    /// True when `ancestor` is `descendant` or reachable from it through parents.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([descendant.to_string()]);
        while let Some(sha) = queue.pop_front() {
            if sha == ancestor {
                return true;
            }
            if !seen.insert(sha.clone()) {
                continue;
            }
            if let Some(commit) = self.commit(&sha) {
                queue.extend(commit.parents.iter().cloned());
            }
        }
        false
    }

    /// Writes one file on top of `parent` (or as a root commit) and returns the new commit id.
    pub fn commit_file(
        &mut self,
        parent: Option<&str>,
        path: &str,
        content: &[u8],
        message: &str,
        author: Signature,
    ) -> String {
        let mut leaves = parent
            .and_then(|sha| self.commit(sha))
            .map(|commit| commit.tree.clone())
            .map(|tree| self.flatten(&tree))
            .unwrap_or_default();
        let blob = self.insert(GitObject::Blob(content.to_vec()));
        leaves.insert(
            path.to_string(),
            Leaf {
                mode: "100644".to_string(),
                sha: blob,
            },
        );
        let tree = self.build_tree(&leaves);
        self.insert(GitObject::Commit(Commit {
            tree,
            parents: parent.map(|sha| vec![sha.to_string()]).unwrap_or_default(),
            committer: author.clone(),
            author,
            message: message.to_string(),
        }))
    }

    /// The file at `path` in the tree of `commit_sha`.
    pub fn file_in_commit(&self, commit_sha: &str, path: &str) -> Option<Vec<u8>> {
        let commit = self.commit(commit_sha)?;
        let entry = self.entry_at(&commit.tree, path)?;
        self.blob(&entry.sha).cloned()
    }

    /// The blob id of `path` in the tree of `commit_sha`.
    fn blob_id_in_commit(&self, commit_sha: &str, path: &str) -> Option<String> {
        let commit = self.commit(commit_sha)?;
        self.entry_at(&commit.tree, path).map(|entry| entry.sha)
    }

    /// The newest commit reachable from `head` (along first parents) that changed `path`,
    /// like `git log -1 --first-parent <head> -- <path>`; `None` if `path` is absent.
    pub fn last_commit_for_path(&self, head: &str, path: &str) -> Option<String> {
        let mut current = head.to_string();
        let mut blob = self.blob_id_in_commit(&current, path)?;
        loop {
            let parent = self.commit(&current)?.parents.first().cloned();
            let Some(parent) = parent else {
                return Some(current);
            };
            match self.blob_id_in_commit(&parent, path) {
                Some(parent_blob) if parent_blob == blob => {
                    current = parent;
                    blob = parent_blob;
                }
                _ => return Some(current),
            }
        }
    }
}
