//! A commit object written into the repository without running git: the work-branch save makes
//! one after every `git write-tree`, and each `git` process costs about 2 ms to start, a fifth of
//! the save's own side (issue 15's cycle overhead). Only for what git would write byte for byte
//! the same: a SHA-1 repository, an identity git would not clean up, no date from the
//! environment. Everything else goes through `git commit-tree`.

pub use crate::history::object_id::object_id;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Where a repository's loose objects go, when a commit can be written there directly: the git
/// directory's `objects` (a linked worktree's through its `commondir`). None when the environment
/// sends git's own writes elsewhere or gives git the dates to stamp.
pub fn objects_dir(git_dir: &Path, env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let git_would_differ = [
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMITTER_DATE",
        "GIT_AUTHOR_DATE",
    ];
    if git_would_differ.iter().any(|v| env(v).is_some()) {
        return None;
    }
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.to_path_buf(),
    };
    let objects = common.join("objects");
    objects.is_dir().then_some(objects)
}

/// Whether git would keep `value` as it is in an identity line: no angle brackets or newlines,
/// nothing it trims at either end.
fn clean_ident(value: &str) -> bool {
    let crud = |c: char| c.is_ascii_whitespace() || ".,:;<>\"\\'".contains(c);
    !value.is_empty()
        && !value.contains(['<', '>', '\n', '\0'])
        && !value.starts_with(crud)
        && !value.ends_with(crud)
}

/// The commit `git commit-tree <tree> -p <parent> -m <message>` would write for the author and
/// committer `(name, email)` at `when` (seconds
/// since the epoch, and the offset from UTC in minutes); None when git would write something
/// else (see the module's note) and the caller should run it.
pub fn commit_body(
    tree: &str,
    parent: &str,
    message: &str,
    (name, email): (&str, &str),
    when: (i64, i32),
) -> Option<String> {
    let sha1_hex = |id: &str| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !sha1_hex(tree) || !sha1_hex(parent) || !clean_ident(name) || !clean_ident(email) {
        return None;
    }
    let (seconds, offset) = when;
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.unsigned_abs();
    let ident = format!(
        "{name} <{email}> {seconds} {sign}{:02}{:02}",
        offset / 60,
        offset % 60
    );
    let mut body = format!("tree {tree}\nparent {parent}\nauthor {ident}\ncommitter {ident}\n\n");
    body.push_str(message);
    if !message.ends_with('\n') {
        body.push('\n');
    }
    Some(body)
}

/// Store `body` as a loose object of `kind` in `objects`; its id. An object that is already
/// there is not written again; a new one appears whole or not at all (written aside, renamed).
pub fn write_loose(objects: &Path, kind: &str, body: &[u8]) -> std::io::Result<String> {
    let id = hex::encode(object_id(kind, body));
    store_loose(objects, kind, &id, body)?;
    Ok(id)
}

/// Store `body`, whose id (hex) its caller computed with [`object_id`], as a loose object.
pub fn store_loose(objects: &Path, kind: &str, id: &str, body: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let header = format!("{kind} {}\0", body.len());
    let dir = objects.join(&id[..2]);
    let path = dir.join(&id[2..]);
    if path.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(&dir)?;
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!("tmp_obj_replan_{}_{n}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create_new(&temp)?;
        let mut stream = Vec::new();
        super::git_zlib::ZlibWriter::default().append(&mut stream, &[header.as_bytes(), body]);
        file.write_all(&stream)?;
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(true);
        file.set_permissions(permissions)?;
        std::fs::rename(&temp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Now, as git stamps an identity line: seconds since the epoch and the local offset (minutes).
pub fn now() -> (i64, i32) {
    let now = chrono::Local::now();
    (now.timestamp(), now.offset().local_minus_utc() / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    const PARENT: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn identities_git_would_rewrite_are_left_to_git() {
        let at = (1_700_000_000, 0);
        let ok = ("Replan", "replan@users.noreply.github.com");
        assert!(commit_body(TREE, PARENT, "m", ok, at).is_some());
        for bad in [
            ("Re<plan", "r@x"),
            ("Replan ", "r@x"),
            ("Replan.", "r@x"),
            ("", "r@x"),
            ("Replan", "r@x\nevil"),
            ("Replan", "<r@x>"),
        ] {
            assert!(commit_body(TREE, PARENT, "m", bad, at).is_none(), "{bad:?}");
        }
        let sha256 = "a".repeat(64);
        assert!(commit_body(&sha256, PARENT, "m", ok, at).is_none());
    }

    #[test]
    fn the_identity_line_carries_the_offset_as_git_writes_it() {
        let body = commit_body(
            TREE,
            PARENT,
            "Save",
            ("A", "a@b"),
            (1_700_000_000, -(5 * 60 + 30)),
        )
        .unwrap();
        assert!(
            body.contains("\nauthor A <a@b> 1700000000 -0530\n"),
            "{body}"
        );
        assert!(body.ends_with("\n\nSave\n"), "{body}");
    }

    #[test]
    fn a_date_or_object_directory_from_the_environment_leaves_it_to_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("objects")).unwrap();
        assert!(objects_dir(dir.path(), |_| None).is_some());
        for var in [
            "GIT_OBJECT_DIRECTORY",
            "GIT_AUTHOR_DATE",
            "GIT_COMMITTER_DATE",
        ] {
            let env = |name: &str| (name == var).then(|| "x".to_owned());
            assert!(objects_dir(dir.path(), env).is_none(), "{var}");
        }
    }
}
