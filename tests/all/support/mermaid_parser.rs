//! mermaid's own parser, run under Node, over graphs Replan renders.
//!
//! The npm packages (pinned in `.ci/mermaid/package-lock.json`) are installed into
//! `target/mermaid-check/` on first use with `npm ci`, and nothing is cached outside `target/`.
//! `.ci/mermaid/check.mjs` parses each graph and reports its nodes and edges as a reader sees them.

use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

#[derive(Debug, Deserialize)]
pub struct Vertex {
    pub id: String,
    /// The label as displayed: entity codes decoded.
    pub text: String,
    pub classes: Vec<String>,
}

/// One graph as mermaid understood it, or its parse error.
#[derive(Debug, Deserialize)]
pub struct Parsed {
    pub error: Option<String>,
    #[serde(default)]
    pub vertices: Vec<Vertex>,
    #[serde(default)]
    pub edges: Vec<(String, String)>,
}

fn on_path(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `None` (with the reason printed) when node or npm is missing on a developer's machine; in CI
/// (`CI` set, where ubuntu runners have both) a missing Node fails the test instead.
pub fn available() -> Option<PathBuf> {
    if !(on_path("node") && on_path("npm")) {
        let reason = "node and npm are needed to run mermaid's parser (install Node 20+)";
        assert!(std::env::var_os("CI").is_none(), "{reason}");
        // Written past the test harness's capture, so a skip never reads as a quiet "ok".
        let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {reason}");
        return None;
    }
    Some(install())
}

fn install() -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/mermaid");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mermaid-check");
    std::fs::create_dir_all(&dir).expect("target/mermaid-check");
    for file in ["package.json", "package-lock.json", "check.mjs"] {
        std::fs::copy(source.join(file), dir.join(file)).expect(file);
    }
    let lock = std::fs::read(dir.join("package-lock.json")).expect("package-lock.json");
    let installed = dir.join("node_modules/.installed-from-lock");
    if std::fs::read(&installed).ok().as_deref() != Some(&lock[..]) {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir)
            .status()
            .expect("npm ci in target/mermaid-check");
        assert!(status.success(), "npm ci in {} failed", dir.display());
        std::fs::write(&installed, &lock).expect("install marker");
    }
    dir
}

/// Parses each graph (the text inside the ```mermaid fence).
pub fn parse(dir: &Path, graphs: &[String]) -> Vec<Parsed> {
    let mut child = Command::new("node")
        .arg("check.mjs")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node check.mjs");
    let input = serde_json::to_vec(graphs).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "check.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check.mjs's JSON")
}

/// The graph inside a rendered ```mermaid block; panics unless the block is one fence that
/// nothing in the graph closes early.
pub fn fenced_graph(markdown: &str) -> String {
    let start = markdown.find("```mermaid\n").expect("a ```mermaid block") + "```mermaid\n".len();
    let rest = &markdown[start..];
    let end = rest.find("\n```").expect("the end of the ```mermaid block");
    let graph = &rest[..end + 1];
    let closing = &rest[end + 1..];
    assert!(
        closing.starts_with("```\n") || closing == "```",
        "the fence closes with a bare ```, not more text:\n{markdown}"
    );
    graph.to_owned()
}
