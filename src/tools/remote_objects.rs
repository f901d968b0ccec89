//! What the remote work branch holds, as far as this run's saves know, and the pack of what a
//! new save adds to it: every tree and blob of the new commit the remote's commit does not
//! have, and the commit. The remote checks the pack's connectivity itself, so a wrong guess is
//! a refused push (and `git push` after it), never a broken branch.

use super::git_wire::Outgoing;
use super::git_wire::pack::{self, Kind};
use super::index_tree::Contents;
use std::collections::HashSet;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

/// New blobs beyond this many bytes are left to `git push`, which streams them.
const MAX_PACK_INPUT: usize = 32 << 20;

/// Every object id of a commit's tree.
pub type TreeObjects = HashSet<[u8; 20]>;

pub fn tree_objects(contents: &Contents) -> TreeObjects {
    let trees = contents.trees.iter().map(|(id, _)| *id);
    trees.chain(contents.blobs.iter().copied()).collect()
}

/// The remote branch's value (`None`: it does not exist yet) and the objects of `base`, the
/// commit whose tree the remote is known to have (the branch's tip, or the commit a new branch
/// starts from).
pub struct RemoteObjects {
    pub tip: Option<String>,
    pub base: String,
    pub have: TreeObjects,
}

impl RemoteObjects {
    /// The pack that makes `commit` (its `body`, on `parent`, with the tree `contents`) whole
    /// on the remote; `None` when the commit is not on `base` or a new blob is not a loose
    /// object in `objects` (packed objects are `git push`'s business).
    pub fn outgoing(
        &self,
        (commit, body, parent): (&str, &[u8], &str),
        contents: &Contents,
        objects: &Path,
    ) -> Option<Outgoing> {
        if parent != self.base {
            return None;
        }
        let mut sent = HashSet::new();
        let mut entries = vec![(Kind::Commit, body.to_vec())];
        for (id, tree) in &contents.trees {
            if !self.have.contains(id) && sent.insert(*id) {
                entries.push((Kind::Tree, tree.clone()));
            }
        }
        let mut size = 0;
        for id in &contents.blobs {
            if !self.have.contains(id) && sent.insert(*id) {
                let blob = read_loose_blob(objects, id)?;
                size += blob.len();
                if size > MAX_PACK_INPUT {
                    return None;
                }
                entries.push((Kind::Blob, blob));
            }
        }
        Some(Outgoing {
            commit: commit.to_owned(),
            old: self.tip.clone(),
            pack: Arc::new(pack::write(&entries)),
        })
    }
}

/// The body of the loose blob `id`, checked against its header.
fn read_loose_blob(objects: &Path, id: &[u8; 20]) -> Option<Vec<u8>> {
    let hex = hex::encode(id);
    let file = std::fs::File::open(objects.join(&hex[..2]).join(&hex[2..])).ok()?;
    let mut data = Vec::new();
    flate2::read::ZlibDecoder::new(file)
        .read_to_end(&mut data)
        .ok()?;
    let nul = data.iter().position(|&b| b == 0)?;
    let len: usize = std::str::from_utf8(data.get(..nul)?.strip_prefix(b"blob ")?)
        .ok()?
        .parse()
        .ok()?;
    let body = data.split_off(nul + 1);
    (body.len() == len).then_some(body)
}
