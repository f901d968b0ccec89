//! Reading the instruction files from git objects of one commit, through Replan's own git: never
//! from the work tree, which the model edits (issue 35's rule: nothing the model can write is
//! read as configuration).

use super::{InstructionFile, RepoInstructions, Scope, front_matter, scope_of};
use crate::config::InstructionsConfig;
use globset::GlobBuilder;
use std::io::Read as _;
use std::path::Path;

/// Room for a front matter beyond the cap: it is not sent, so it does not count.
const FRONT_MATTER_SLACK: u64 = 4096;

/// A blob of the commit's tree.
struct Blob {
    oid: String,
    size: u64,
    path: String,
}

/// The instruction files `cfg` names, read from `commit` of the repository `dir` belongs to.
/// `source` says why that commit (for the summary and the log).
pub fn read(
    dir: &Path,
    commit: &str,
    source: &str,
    cfg: &InstructionsConfig,
) -> Result<RepoInstructions, String> {
    let mut out = RepoInstructions {
        commit: commit.to_owned(),
        source: source.to_owned(),
        ..RepoInstructions::default()
    };
    if cfg.files.is_empty() {
        return Ok(out);
    }
    let blobs = tree(dir, commit)?;
    let mut remaining = cfg.max_bytes;
    for (blob, nested) in chosen(&blobs, &cfg.files)? {
        let scope = if nested {
            let dir = blob.path.rsplit_once('/').map_or("", |(d, _)| d);
            Scope::Directory(dir.to_owned())
        } else {
            Scope::Everywhere
        };
        if remaining == 0 {
            out.cut.push(format!(
                "`{}` ({} bytes) left out: instructions.max_bytes ({}) is used up",
                blob.path, blob.size, cfg.max_bytes
            ));
            continue;
        }
        let raw = read_blob(dir, &blob.oid, remaining + FRONT_MATTER_SLACK)
            .map_err(|e| format!("cannot read `{}` from commit {commit}: {e}", blob.path))?;
        let text = String::from_utf8_lossy(&raw);
        let (body, scope) = if blob.path.ends_with(".instructions.md") {
            match front_matter::split(&text) {
                Ok((body, Some(globs))) => match scope_of(globs) {
                    Ok(scope) => (body, scope),
                    Err(e) => {
                        out.cut.push(format!("`{}` left out: {e}", blob.path));
                        continue;
                    }
                },
                Ok((_, None)) => {
                    out.cut.push(format!(
                        "`{}` left out: its front matter has no `applyTo`, so it applies to no file",
                        blob.path
                    ));
                    continue;
                }
                Err(e) => {
                    out.cut.push(format!("`{}` left out: {e}", blob.path));
                    continue;
                }
            }
        } else {
            (text.as_ref(), scope)
        };
        if body.trim().is_empty() {
            continue;
        }
        let mut body = body.to_owned();
        if body.len() as u64 > remaining {
            let mut end = remaining as usize;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            out.cut.push(format!(
                "`{}` cut after {end} of its bytes: instructions.max_bytes is {}",
                blob.path, cfg.max_bytes
            ));
            body.truncate(end);
        }
        remaining -= body.len() as u64;
        out.files.push(InstructionFile {
            path: blob.path.clone(),
            bytes: blob.size,
            text: body,
            scope,
        });
    }
    Ok(out)
}

/// The files to read, in order: each entry of `files` (a glob matches within one directory,
/// in path order), then, when `AGENTS.md` is listed, every nested `AGENTS.md`, shallow first.
/// The flag says a file is a nested one.
fn chosen<'a>(blobs: &'a [Blob], files: &[String]) -> Result<Vec<(&'a Blob, bool)>, String> {
    let mut out: Vec<(&Blob, bool)> = Vec::new();
    let add = |blob: &'a Blob, nested: bool, out: &mut Vec<(&'a Blob, bool)>| {
        if !out.iter().any(|(b, _)| b.path == blob.path) {
            out.push((blob, nested));
        }
    };
    for entry in files {
        if entry.contains(['*', '?', '[']) {
            let glob = GlobBuilder::new(entry)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("instructions.files: `{entry}` is not a valid glob: {e}"))?
                .compile_matcher();
            for blob in blobs.iter().filter(|b| glob.is_match(&b.path)) {
                add(blob, false, &mut out);
            }
        } else if let Some(blob) = blobs.iter().find(|b| b.path == *entry) {
            add(blob, false, &mut out);
        }
    }
    if files.iter().any(|f| f == "AGENTS.md") {
        let mut nested: Vec<&Blob> = blobs
            .iter()
            .filter(|b| b.path.ends_with("/AGENTS.md"))
            .collect();
        nested.sort_by_key(|b| (b.path.matches('/').count(), b.path.clone()));
        for blob in nested {
            add(blob, true, &mut out);
        }
    }
    Ok(out)
}

/// The regular files of `commit`'s tree (no symlinks, no submodules), sorted by path.
fn tree(dir: &Path, commit: &str) -> Result<Vec<Blob>, String> {
    let output = crate::git::output_with(
        dir,
        &["ls-tree", "-r", "-l", "-z", "--full-tree", commit],
        &[],
        &[],
        None,
    )
    .map_err(|e| e.message)?;
    if !output.status.success() {
        return Err(format!(
            "cannot list commit {commit}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let mut blobs = Vec::new();
    for record in output.stdout.split(|b| *b == 0) {
        let record = String::from_utf8_lossy(record);
        let Some((meta, path)) = record.split_once('\t') else {
            continue;
        };
        let fields: Vec<&str> = meta.split_whitespace().collect();
        if let [mode, "blob", oid, size] = fields[..]
            && matches!(mode, "100644" | "100755")
        {
            blobs.push(Blob {
                oid: oid.to_owned(),
                size: size.parse().unwrap_or(0),
                path: path.to_owned(),
            });
        }
    }
    blobs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(blobs)
}

/// At most `limit` bytes of the blob `oid` (a huge file is not read whole).
fn read_blob(dir: &Path, oid: &str, limit: u64) -> Result<Vec<u8>, String> {
    let mut command = crate::git::command::command(dir, &[]).map_err(|e| e.message)?;
    command
        .args(["cat-file", "blob", oid])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let mut bytes = Vec::new();
    let read = child
        .stdout
        .take()
        .map(|out| out.take(limit).read_to_end(&mut bytes));
    let _ = child.kill();
    let _ = child.wait();
    match read {
        Some(Ok(_)) => Ok(bytes),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("git gave no output".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "c"]);
        let head = crate::git::run(dir.path(), &["rev-parse", "HEAD"], &[]).unwrap();
        (dir, head)
    }

    #[test]
    fn files_are_read_in_the_configured_order_then_nested_agents_md() {
        let (dir, head) = repo(&[
            ("CLAUDE.md", "claude"),
            ("AGENTS.md", "agents"),
            ("crates/x/AGENTS.md", "x rules"),
            (
                ".github/instructions/rs.instructions.md",
                "---\napplyTo: '**/*.rs'\n---\nrust",
            ),
            (
                ".github/instructions/none.instructions.md",
                "no front matter",
            ),
        ]);
        let got = read(dir.path(), &head, "test", &InstructionsConfig::default()).unwrap();
        let paths: Vec<&str> = got.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "AGENTS.md",
                "CLAUDE.md",
                ".github/instructions/rs.instructions.md",
                "crates/x/AGENTS.md"
            ]
        );
        assert_eq!(got.files[2].text, "rust");
        assert!(matches!(&got.files[3].scope, Scope::Directory(d) if d == "crates/x"));
        assert!(got.cut[0].contains("none.instructions.md") && got.cut[0].contains("applyTo"));
    }

    #[test]
    fn the_total_is_capped_and_the_cut_is_reported() {
        let (dir, head) = repo(&[("AGENTS.md", "abcdefgh"), ("CLAUDE.md", "more")]);
        let cfg = InstructionsConfig {
            max_bytes: 5,
            ..InstructionsConfig::default()
        };
        let got = read(dir.path(), &head, "test", &cfg).unwrap();
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].text, "abcde");
        assert_eq!(got.files[0].bytes, 8);
        assert!(got.cut[0].contains("cut after 5"), "{:?}", got.cut);
        assert!(got.cut[1].contains("CLAUDE.md") && got.cut[1].contains("left out"));
        let none = InstructionsConfig {
            files: vec![],
            ..InstructionsConfig::default()
        };
        assert!(read(dir.path(), &head, "test", &none).unwrap().is_empty());
    }

    #[test]
    fn the_work_tree_is_not_read() {
        let (dir, head) = repo(&[("AGENTS.md", "committed")]);
        std::fs::write(dir.path().join("AGENTS.md"), "edited in the work tree").unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "new in the work tree").unwrap();
        let got = read(dir.path(), &head, "test", &InstructionsConfig::default()).unwrap();
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].text, "committed");
    }
}
