//! A pack file (`Documentation/gitformat-pack`) of whole objects: what a push sends. No deltas:
//! a save adds a few files, and the receiver stores them as it would any pack.

use crate::tools::git_zlib::ZlibWriter;
use sha1::{Digest as _, Sha1};

/// The kinds of object a save sends, with their pack type numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Commit = 1,
    Tree = 2,
    Blob = 3,
}

/// A version 2 pack of `objects`, each a zlib stream of its whole body (see `git_zlib`), with
/// its SHA-1 trailer.
pub fn write(objects: &[(Kind, Vec<u8>)]) -> Vec<u8> {
    let mut pack = b"PACK".to_vec();
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    let mut zlib = ZlibWriter::default();
    for (kind, body) in objects {
        header(&mut pack, *kind, body.len());
        zlib.append(&mut pack, &[body]);
    }
    let trailer: [u8; 20] = Sha1::digest(&pack).into();
    pack.extend_from_slice(&trailer);
    pack
}

/// The object header: the type in bits 4–6 of the first byte, the size in its low four bits and
/// then seven bits a byte, least significant first, the top bit saying another byte follows.
fn header(pack: &mut Vec<u8>, kind: Kind, size: usize) {
    let mut byte = ((kind as u8) << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest > 0 {
        pack.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    pack.push(byte);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::git::isolated_git;
    use std::io::Write as _;

    #[test]
    fn git_indexes_the_pack_and_reads_each_object_back() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(
            isolated_git(tmp.path())
                .args(["init", "-q"])
                .status()
                .unwrap()
                .success()
        );
        let big = "x".repeat(5000).into_bytes();
        let small = b"hello\n".to_vec();
        let mut tree = b"100644 big\0".to_vec();
        tree.extend(crate::tools::git_objects::object_id("blob", &big));
        tree.extend(b"100644 small\0");
        tree.extend(crate::tools::git_objects::object_id("blob", &small));
        let tree_id = hex::encode(crate::tools::git_objects::object_id("tree", &tree));
        let commit =
            format!("tree {tree_id}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nm\n")
                .into_bytes();
        let pack = write(&[
            (Kind::Commit, commit.clone()),
            (Kind::Tree, tree),
            (Kind::Blob, big),
            (Kind::Blob, small),
        ]);
        let mut child = isolated_git(tmp.path())
            .args(["index-pack", "--stdin", "--strict"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&pack).unwrap();
        assert!(child.wait_with_output().unwrap().status.success());
        let id = hex::encode(crate::tools::git_objects::object_id("commit", &commit));
        let shown = isolated_git(tmp.path())
            .args(["ls-tree", "-r", "-l", &id])
            .output()
            .unwrap();
        let shown = String::from_utf8(shown.stdout).unwrap();
        assert!(
            shown.contains(" 5000\tbig") && shown.contains(" 6\tsmall"),
            "{shown}"
        );
        let fsck = isolated_git(tmp.path())
            .args(["fsck", "--strict"])
            .output()
            .unwrap();
        assert!(
            fsck.status.success(),
            "{}",
            String::from_utf8_lossy(&fsck.stderr)
        );
    }
}
