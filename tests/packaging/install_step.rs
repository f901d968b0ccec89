//! The composite action's install step (`dist/install.sh`) run as a runner runs it: a temporary
//! tool cache, `GITHUB_OUTPUT` and `GITHUB_PATH` files, and a "release" on `file://` or on a
//! loopback HTTP server, with a real `SHA256SUMS`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::tools::repo_root;
use crate::support::{FakeResponse, TestServer};

const TARGET: &str = "x86_64-unknown-linux-musl";
const ASSET: &str = "replan-x86_64-unknown-linux-musl.tar.gz";
const FAKE_BINARY: &str = "#!/bin/sh\necho \"released replan 9.9.9\"\n";

/// A runner's world in a temp dir: releases, tool cache, output files, the action's checkout.
struct Runner {
    dir: tempfile::TempDir,
}

impl Runner {
    fn new() -> Self {
        let runner = Runner {
            dir: tempfile::tempdir().expect("temp dir for the runner"),
        };
        std::fs::create_dir_all(runner.path("action")).expect("action dir");
        std::fs::write(
            runner.path("action/Cargo.toml"),
            "[package]\nname = \"replan\"\nversion = \"2.3.4\"\n",
        )
        .expect("write the action's Cargo.toml");
        runner
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn releases_url(&self) -> String {
        format!("file://{}", self.path("releases").display())
    }

    /// Publishes `tag` with the fake binary; `sums` edits the SHA256SUMS text before it is written.
    fn publish(&self, tag: &str, sums: impl Fn(String) -> String) -> String {
        let stage = self.path(&format!("stage-{tag}"));
        std::fs::create_dir_all(&stage).expect("stage dir");
        let binary = stage.join("replan");
        std::fs::write(&binary, FAKE_BINARY).expect("write the fake binary");
        make_executable(&binary);
        let release = self.path(&format!("releases/{tag}"));
        std::fs::create_dir_all(&release).expect("release dir");
        let tarball = release.join(ASSET);
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&stage)
            .arg("replan")
            .status()
            .expect("run tar");
        assert!(status.success(), "tar failed");
        let digest = hex::encode(Sha256::digest(
            std::fs::read(&tarball).expect("read tarball"),
        ));
        let text = format!(
            "{digest}  {ASSET}\n{}  replan-aarch64-unknown-linux-musl.tar.gz\n",
            "0".repeat(64)
        );
        std::fs::write(release.join("SHA256SUMS"), sums(text)).expect("write SHA256SUMS");
        digest
    }

    /// Runs the install step with a runner's variables plus `extra` (which may override them).
    fn install(&self, extra: &[(&str, &str)]) -> Output {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
        env.insert("HOME".into(), self.path("home").display().to_string());
        env.insert("RUNNER_OS".into(), "Linux".into());
        env.insert("RUNNER_ARCH".into(), "X64".into());
        env.insert(
            "RUNNER_TOOL_CACHE".into(),
            self.path("toolcache").display().to_string(),
        );
        env.insert(
            "GITHUB_OUTPUT".into(),
            self.path("github_output").display().to_string(),
        );
        env.insert(
            "GITHUB_PATH".into(),
            self.path("github_path").display().to_string(),
        );
        env.insert(
            "GITHUB_ACTION_PATH".into(),
            self.path("action").display().to_string(),
        );
        env.insert("REPLAN_ACTION_REF".into(), "v9.9.9".into());
        env.insert("REPLAN_RELEASE_BASE_URL".into(), self.releases_url());
        for (k, v) in extra {
            env.insert((*k).into(), (*v).into());
        }
        Command::new("bash")
            .arg(repo_root().join("dist/install.sh"))
            .env_clear()
            .envs(env)
            .output()
            .expect("run bash dist/install.sh")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    fn outputs(&self) -> BTreeMap<String, String> {
        self.read("github_output")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn describe(output: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_installed_release(runner: &Runner, version: &str, source: &str) {
    let dir = runner.path(&format!(
        "toolcache/replan/{}/x64",
        version.trim_start_matches('v')
    ));
    let binary = dir.join("replan");
    let outputs = runner.outputs();
    assert_eq!(outputs.get("path"), Some(&binary.display().to_string()));
    assert_eq!(outputs.get("version").map(String::as_str), Some(version));
    assert_eq!(outputs.get("source").map(String::as_str), Some(source));
    assert_eq!(runner.read("github_path").trim(), dir.display().to_string());
    assert!(
        runner
            .path(&format!(
                "toolcache/replan/{}/x64.complete",
                version.trim_start_matches('v')
            ))
            .is_file(),
        "the tool cache's completion marker is written"
    );
    let ran = Command::new(&binary)
        .output()
        .expect("run the installed binary");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout).trim(),
        "released replan 9.9.9"
    );
}

#[test]
fn install_step_installs_the_release_of_the_action_ref_from_a_file_url() {
    let runner = Runner::new();
    runner.publish("v9.9.9", |s| s);
    let output = runner.install(&[]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_installed_release(&runner, "v9.9.9", "release");
}

#[test]
fn install_step_downloads_from_a_loopback_release_server() {
    let runner = Runner::new();
    runner.publish("v9.9.9", |s| s);
    let releases = runner.path("releases");
    let requested = Arc::new(Mutex::new(Vec::new()));
    let log = requested.clone();
    let server = TestServer::start(Arc::new(move |request| {
        log.lock().unwrap().push(request.path.clone());
        match std::fs::read(releases.join(request.path.trim_start_matches('/'))) {
            Ok(body) => FakeResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/octet-stream".into())],
                body,
                delay: None,
            },
            Err(_) => FakeResponse::text(404, "Not Found"),
        }
    }));
    let output = runner.install(&[("REPLAN_RELEASE_BASE_URL", &server.base_url())]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_installed_release(&runner, "v9.9.9", "release");
    assert_eq!(
        *requested.lock().unwrap(),
        vec!["/v9.9.9/SHA256SUMS".to_owned(), format!("/v9.9.9/{ASSET}")]
    );
}

#[test]
fn install_step_with_a_major_tag_ref_installs_the_version_of_the_action_source() {
    let runner = Runner::new();
    runner.publish("v2.3.4", |s| s);
    let output = runner.install(&[("REPLAN_ACTION_REF", "v1")]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_installed_release(&runner, "v2.3.4", "release");
}

#[test]
fn install_step_uses_the_tool_cache_on_the_second_run() {
    let runner = Runner::new();
    runner.publish("v9.9.9", |s| s);
    assert!(runner.install(&[]).status.success());
    std::fs::remove_dir_all(runner.path("releases")).expect("remove the release");
    std::fs::remove_file(runner.path("github_output")).expect("reset GITHUB_OUTPUT");
    std::fs::remove_file(runner.path("github_path")).expect("reset GITHUB_PATH");
    let output = runner.install(&[]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_installed_release(&runner, "v9.9.9", "cache");
}

#[test]
fn install_step_refuses_a_download_whose_checksum_does_not_match() {
    let runner = Runner::new();
    let wrong = "ab".repeat(32);
    let actual = runner.publish("v9.9.9", |s| {
        let good = s.split_whitespace().next().unwrap().to_owned();
        s.replacen(&good, &wrong, 1)
    });
    let output = runner.install(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", describe(&output));
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(stderr.contains(ASSET), "names the file: {stderr}");
    assert!(stderr.contains(&wrong), "names the expected hash: {stderr}");
    assert!(stderr.contains(&actual), "names the actual hash: {stderr}");
    assert!(
        !runner.path("toolcache/replan").exists(),
        "nothing is installed"
    );
    assert_eq!(runner.read("github_path"), "", "PATH is not extended");
    assert_eq!(runner.read("github_output"), "", "no outputs");
}

/// A `cargo` on PATH that records its arguments and "builds" by writing `<root>/bin/replan`.
fn fake_cargo(runner: &Runner) -> String {
    let bin = runner.path("fakebin");
    std::fs::create_dir_all(&bin).expect("fake bin dir");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{log}'\nroot=''\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --root ]; then root=\"$2\"; fi\n  shift\ndone\nmkdir -p \"$root/bin\"\nprintf '#!/bin/sh\\necho built from source\\n' > \"$root/bin/replan\"\nchmod +x \"$root/bin/replan\"\n",
        log = runner.path("cargo-args").display()
    );
    std::fs::write(bin.join("cargo"), script).expect("write fake cargo");
    make_executable(&bin.join("cargo"));
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn assert_built_from_source(runner: &Runner, output: &Output) {
    assert!(output.status.success(), "{}", describe(output));
    let args: Vec<String> = runner
        .read("cargo-args")
        .lines()
        .map(str::to_owned)
        .collect();
    let action = runner.path("action").display().to_string();
    assert_eq!(
        &args[..4],
        ["install", "--locked", "--path", action.as_str()],
        "{args:?}"
    );
    let outputs = runner.outputs();
    assert_eq!(outputs.get("source").map(String::as_str), Some("cargo"));
    let binary = outputs.get("path").expect("path output");
    let ran = Command::new(binary).output().expect("run the built binary");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout).trim(),
        "built from source"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("building replan from the action's source")
    );
}

#[test]
fn install_step_builds_from_source_on_a_runner_without_a_release_binary() {
    let runner = Runner::new();
    runner.publish("v9.9.9", |s| s);
    let path = fake_cargo(&runner);
    let output = runner.install(&[
        ("RUNNER_OS", "macOS"),
        ("RUNNER_ARCH", "ARM64"),
        ("PATH", &path),
    ]);
    assert_built_from_source(&runner, &output);
}

#[test]
fn install_step_builds_from_source_when_the_release_does_not_exist() {
    let runner = Runner::new();
    let path = fake_cargo(&runner);
    let output = runner.install(&[("PATH", &path)]);
    assert_built_from_source(&runner, &output);
}

#[test]
fn install_step_builds_from_source_when_the_release_lacks_this_target() {
    let runner = Runner::new();
    runner.publish("v9.9.9", |s| {
        s.replace(TARGET, "riscv64gc-unknown-linux-musl")
    });
    let path = fake_cargo(&runner);
    let output = runner.install(&[("PATH", &path)]);
    assert_built_from_source(&runner, &output);
}

#[test]
fn install_step_without_a_release_or_cargo_says_what_to_do() {
    let runner = Runner::new();
    // PATH without cargo: only the directories of the tools the script needs.
    let bin = runner.path("nocargo");
    std::fs::create_dir_all(&bin).expect("bin dir");
    for tool in [
        "bash",
        "env",
        "curl",
        "tar",
        "sha256sum",
        "mktemp",
        "sed",
        "head",
        "awk",
        "tr",
        "cut",
        "rm",
        "mkdir",
        "cp",
        "mv",
        "chmod",
        "dirname",
        "uname",
        "cat",
        "gzip",
    ] {
        if let Ok(found) = Command::new("bash")
            .args(["-c", &format!("command -v {tool}")])
            .output()
        {
            let p = String::from_utf8_lossy(&found.stdout).trim().to_owned();
            if !p.is_empty() {
                let _ = std::os::unix::fs::symlink(p, bin.join(tool));
            }
        }
    }
    let path = bin.display().to_string();
    let output = runner.install(&[("RUNNER_OS", "Windows"), ("PATH", &path)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", describe(&output));
    assert!(stderr.contains("cargo is not installed"), "{stderr}");
    assert!(stderr.contains("Windows"), "names the runner: {stderr}");
    assert_eq!(runner.read("github_output"), "");
}
