//! The split-trust bundle digest, written from its specification, apart from Replan's.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The bundle digest as docs/security.md specifies it, written here independently: SHA-256 over
/// every regular, non-hidden file, in byte order of the `/`-separated relative path, each as
/// `path NUL length(u64, big-endian) contents`.
pub fn bundle_digest(dir: &Path) -> String {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push((relative.replace('\\', "/"), path));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    let mut hash = Sha256::new();
    for (relative, path) in files {
        let bytes = std::fs::read(path).unwrap();
        hash.update(relative.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(&bytes);
    }
    hex::encode(hash.finalize())
}
