//! Finding what the packaging tests need: the repository, the musl binary, the lint tools.
//! Nothing here ever lets a test pass without its tool: a missing tool is installed with
//! `.ci/packaging-tools.sh` (what `.ci/packaging.sh` runs) or the test fails saying how to get it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// Serialises installs and builds started by tests running in parallel.
static SETUP: Mutex<()> = Mutex::new(());

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// The cargo target directory of this test run: the test binary's `replan` is `<target>/debug/replan`.
pub fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_replan"));
    bin.parent()
        .and_then(Path::parent)
        .expect("the replan binary lives in <target>/<profile>/")
        .to_path_buf()
}

fn run_packaging_tools_script() {
    let status = Command::new("bash")
        .arg(repo_root().join(".ci/packaging-tools.sh"))
        .status()
        .expect("run bash .ci/packaging-tools.sh");
    assert!(
        status.success(),
        ".ci/packaging-tools.sh failed ({status}); it installs the musl target, musl-tools, shellcheck and actionlint"
    );
}

/// The static release binary `.ci/packaging.sh` builds. Outside CI a missing one is built here (minutes,
/// once); in CI it must already be there, because `.ci/packaging.sh` builds it before the tests.
pub fn musl_binary() -> PathBuf {
    let path = target_dir().join(MUSL_TARGET).join("release/replan");
    if path.is_file() {
        return path;
    }
    assert!(
        !in_ci(),
        "{} is missing: .ci/packaging.sh must build it (cargo build --locked --release --target {MUSL_TARGET}) before the tests",
        path.display()
    );
    let _guard = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !path.is_file() {
        run_packaging_tools_script();
        let status = Command::new(env!("CARGO"))
            .current_dir(repo_root())
            .env("CARGO_TARGET_DIR", target_dir())
            .args(["build", "--locked", "--release", "--target", MUSL_TARGET])
            .status()
            .expect("run cargo build for the musl target");
        assert!(
            status.success(),
            "building the musl binary failed: {status}"
        );
    }
    assert!(
        path.is_file(),
        "{} still missing after the build",
        path.display()
    );
    path
}

/// A tool on PATH or at the path `.ci/packaging-tools.sh` installs it to.
fn find_tool(name: &str, installed_at: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(path) = installed_at.filter(|p| p.is_file()) {
        return Some(path);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A lint tool; in CI it must be installed already, elsewhere it is installed on first use.
pub fn lint_tool(name: &str) -> PathBuf {
    let installed_at =
        (name == "actionlint").then(|| repo_root().join("target/tools/actionlint/bin/actionlint"));
    if let Some(path) = find_tool(name, installed_at.clone()) {
        return path;
    }
    assert!(
        !in_ci(),
        "{name} is not installed: .ci/packaging.sh installs it with .ci/packaging-tools.sh before the tests"
    );
    let _guard = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if find_tool(name, installed_at.clone()).is_none() {
        run_packaging_tools_script();
    }
    find_tool(name, installed_at)
        .unwrap_or_else(|| panic!("{name} is still missing after .ci/packaging-tools.sh"))
}
