//! Every runner downloads the release binary on every job (issue 40): the static musl binary is
//! under 10 MB and its release archive, made as .github/workflows/release.yml makes it, under
//! 4.5 MB; start-up stays under 20 ms (the bench's `startup_ms`).

use std::process::Command;

use super::tools::musl_binary;

const MAX_BINARY_BYTES: u64 = 10_000_000;
const MAX_ARCHIVE_BYTES: u64 = 4_500_000;

#[test]
fn the_musl_binary_and_its_archive_fit_the_download_budget() {
    let binary = musl_binary();
    let size = std::fs::metadata(&binary).expect("the musl binary").len();
    let dir = tempfile::TempDir::new().expect("temp dir");
    let archive = dir.path().join("replan.tar.gz");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(binary.parent().expect("the binary's directory"))
        .arg("replan")
        .status()
        .expect("run tar");
    assert!(status.success(), "tar failed");
    let packed = std::fs::metadata(&archive).expect("the archive").len();
    assert!(
        size < MAX_BINARY_BYTES && packed < MAX_ARCHIVE_BYTES,
        "the musl binary is {size} bytes (limit {MAX_BINARY_BYTES}) and its .tar.gz {packed} bytes \
         (limit {MAX_ARCHIVE_BYTES}): look at [profile.release] in Cargo.toml and new dependencies"
    );
}
