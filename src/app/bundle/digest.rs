//! The bundle's digest: SHA-256 over every regular, non-hidden file of the directory, in byte
//! order of the `/`-separated relative path, each as `path NUL length (u64, big-endian)
//! contents`. The agent job prints it when the run is over (step output `bundle_digest`);
//! `replan publish --digest` refuses a directory that no longer has it. It proves the bundle
//! did not change after Replan finished, nothing about what Replan put in it (docs/security.md).
//!
//! Hidden files are left out because artifact uploads leave them out (`actions/upload-artifact`
//! skips them); publish reads none of them (`publish::bundle_file` refuses such names).

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The variable that carries the agent job's digest to `replan publish`.
pub const DIGEST_ENV: &str = "REPLAN_BUNDLE_DIGEST";
/// The step output of `replan run --bundle`.
pub const DIGEST_OUTPUT: &str = "bundle_digest";

/// The digest of `dir`, lowercase hex. Anything but directories and regular files (a symbolic
/// link) is an error: a bundle is plain files.
pub fn of_dir(dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    for (relative, path) in files {
        let mut file = std::fs::File::open(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let length = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        hash.update(&relative);
        hash.update([0]);
        hash.update(length.to_be_bytes());
        let mut read = 0u64;
        loop {
            let n = file
                .read(&mut buffer)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if n == 0 {
                break;
            }
            read += n as u64;
            hash.update(&buffer[..n]);
        }
        if read != length {
            return Err(format!("{} changed while it was read", path.display()));
        }
    }
    Ok(hex::encode(hash.finalize()))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(Vec<u8>, PathBuf)>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        if entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name: Vec<u8> = relative
                .components()
                .map(|c| c.as_os_str().as_encoded_bytes().to_vec())
                .collect::<Vec<_>>()
                .join(&b'/');
            out.push((name, path));
        } else {
            return Err(format!(
                "{} is neither a file nor a directory; a bundle holds plain files only",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Publish's check: `expected` (from `--digest` or [`DIGEST_ENV`]) against the directory.
/// Without one, a warning: a local publish of a bundle on the same machine needs none.
pub fn check(dir: &Path, expected: Option<&str>) -> Result<(), String> {
    let Some(expected) = expected.map(str::trim).filter(|d| !d.is_empty()) else {
        tracing::warn!(
            "no bundle digest given (--digest or {DIGEST_ENV}): the bundle is not checked for changes made after the agent job's Replan finished; in CI pass the agent job's `{DIGEST_OUTPUT}` step output"
        );
        return Ok(());
    };
    let actual = of_dir(dir)?;
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(format!(
            "the bundle in {} has digest {actual}, but the agent job reported {expected}: it changed after Replan finished; nothing was published",
            dir.display()
        ));
    }
    tracing::info!("bundle digest {actual} matches the agent job's");
    Ok(())
}

/// `<DIR>.digest`, beside the bundle directory: the digest for CI systems without step outputs
/// (GitLab's templates pass the file as an artifact; a dotenv report would let the agent job set
/// any variable of the publish job, `CI_SERVER_URL` included).
pub fn file_beside(dir: &Path) -> std::path::PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "replan-bundle".into());
    dir.with_file_name(format!("{name}.digest"))
}

/// The agent job's end: the digest into the log, into `<DIR>.digest` and into the step output
/// `bundle_digest` of the real `$GITHUB_OUTPUT` (`output`, the file the job had before the bundle
/// took it over).
pub fn report(dir: &Path, output: Option<&Path>) -> Result<String, String> {
    let digest = of_dir(dir)?;
    tracing::info!("{DIGEST_OUTPUT}={digest} (pass it to `replan publish --digest`)");
    let beside = file_beside(dir);
    std::fs::write(&beside, format!("{digest}\n"))
        .map_err(|e| format!("cannot write {}: {e}", beside.display()))?;
    if let Some(path) = output {
        crate::actions::outputs::append(path, &[(DIGEST_OUTPUT, digest.clone())])
            .map_err(|e| format!("cannot write the step output {DIGEST_OUTPUT}: {e}"))?;
    }
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_covers_names_lengths_and_contents_and_skips_hidden_files() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
        std::fs::write(dir.path().join("a.bundle"), "x").unwrap();
        let first = of_dir(dir.path()).unwrap();
        assert_eq!(first, of_dir(dir.path()).unwrap(), "deterministic");
        std::fs::write(dir.path().join(".gitignore"), "*").unwrap();
        assert_eq!(first, of_dir(dir.path()).unwrap(), "hidden files left out");
        std::fs::write(dir.path().join("a.bundle"), "y").unwrap();
        assert_ne!(first, of_dir(dir.path()).unwrap(), "contents");
        std::fs::write(dir.path().join("a.bundle"), "x").unwrap();
        std::fs::rename(dir.path().join("a.bundle"), dir.path().join("b.bundle")).unwrap();
        assert_ne!(first, of_dir(dir.path()).unwrap(), "names");
    }

    #[test]
    fn a_wrong_digest_is_refused_and_a_missing_one_only_warned_about() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
        let digest = of_dir(dir.path()).unwrap();
        assert!(check(dir.path(), Some(&digest.to_uppercase())).is_ok());
        assert!(check(dir.path(), None).is_ok());
        let err = check(dir.path(), Some("00")).unwrap_err();
        assert!(err.contains("changed after Replan finished"), "{err}");
    }
}
