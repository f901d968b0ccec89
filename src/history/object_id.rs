//! The id git gives an object: history branches are git branches (a forge's, or a local one),
//! and a forge checks a write against the id of the file it replaces.

use sha1::{Digest as _, Sha1};

/// The SHA-1 object id of `body` as an object of `kind` (`blob`, `tree`, `commit`).
pub fn object_id(kind: &str, body: &[u8]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", body.len()).as_bytes());
    hasher.update(body);
    hasher.finalize().into()
}

/// [`object_id`] of `bytes` as a blob, in hex: the `sha` of a file in a forge's API.
pub fn blob_id(bytes: &[u8]) -> String {
    hex::encode(object_id("blob", bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_ones_git_gives() {
        // `printf 'hello\n' | git hash-object --stdin`, `git hash-object /dev/null`.
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }
}
