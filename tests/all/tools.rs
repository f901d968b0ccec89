//! The tools as the model uses them: real files in temporary directories, real git, real
//! processes, and a real MCP server over stdio (`examples/mcp_fixture_server.rs`).

use crate::support::TestRepo;
use crate::support::git_http::GitHttp;
use replan::config::{McpServerConfig, ToolsConfig};
use replan::forge::Forge;
use replan::forge::local::LocalForge;
use replan::tools::git::{CommitAuthor, GitPushPublisher, NoPublish, Publisher, Snapshots};
use replan::tools::registry_builder::{BuiltTools, ToolContext, build_registry};
use replan::tools::workspace::Workspace;
use replan::tools::{ToolError, ToolErrorKind, ToolRegistry};
use replan::trigger::ThreadRef;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn config() -> ToolsConfig {
    ToolsConfig {
        allowed_commands: vec!["sh *".into(), "env *".into(), "cargo test *".into()],
        ..ToolsConfig::default()
    }
}

async fn tools_in(dir: &Path, config: ToolsConfig) -> BuiltTools {
    build_registry(ToolContext::new(Workspace::new(dir).unwrap(), config)).await
}

async fn registry(dir: &Path) -> ToolRegistry {
    tools_in(dir, config()).await.registry
}

async fn ok(registry: &ToolRegistry, tool: &str, args: Value) -> String {
    match registry.call(tool, args.clone()).await {
        Ok(output) => output.content,
        Err(error) => panic!("{tool}({args}) failed: {error}"),
    }
}

async fn err(registry: &ToolRegistry, tool: &str, args: Value) -> ToolError {
    match registry.call(tool, args.clone()).await {
        Ok(output) => panic!("{tool}({args}) succeeded: {}", output.content),
        Err(error) => error,
    }
}

fn write(dir: &Path, path: &str, text: &str) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}

// ---------------------------------------------------------------- confinement

/// A workspace next to a directory outside it holding a secret, with symlinks pointing out.
struct Escape {
    _parent: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

fn escape_setup() -> Escape {
    let parent = tempfile::tempdir().unwrap();
    let workspace = parent.path().join("repo");
    let outside = parent.path().join("outside");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), workspace.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("nothing-yet.txt"),
        workspace.join("dangling.txt"),
    )
    .unwrap();
    write(&workspace, "inside.txt", "hello\n");
    Escape {
        _parent: parent,
        workspace,
        outside,
    }
}

#[tokio::test]
async fn every_workspace_tool_denies_dot_dot_absolute_and_symlink_escapes() {
    let setup = escape_setup();
    let tools = registry(&setup.workspace).await;
    let secret = setup.outside.join("secret.txt").display().to_string();
    let escapes = [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        secret.as_str(),
        "link.txt",
        "linkdir/secret.txt",
    ];
    for path in escapes {
        let calls = [
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": path, "old_text": "top secret", "new_text": "pwned"}),
            ),
            ("search", json!({"pattern": "secret", "path": path})),
            (
                "apply_patch",
                json!({"patch": format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-top secret\n+pwned\n")}),
            ),
        ];
        for (tool, args) in calls {
            let error = err(&tools, tool, args).await;
            assert_eq!(
                error.kind,
                ToolErrorKind::Denied,
                "{tool} on {path}: {error}"
            );
        }
    }
    for path in ["..", "linkdir", secret.as_str()] {
        let error = err(&tools, "list_files", json!({"path": path})).await;
        assert_eq!(
            error.kind,
            ToolErrorKind::Denied,
            "list_files on {path}: {error}"
        );
        let error = err(
            &tools,
            "run_command",
            json!({"argv": ["sh", "-c", "true"], "cwd": path}),
        )
        .await;
        assert_eq!(
            error.kind,
            ToolErrorKind::Denied,
            "run_command in {path}: {error}"
        );
    }
    // New files through a symlinked folder or a dangling symlink would land outside.
    for path in ["linkdir/new.txt", "dangling.txt"] {
        let error = err(&tools, "write_file", json!({"path": path, "content": "x"})).await;
        assert_eq!(
            error.kind,
            ToolErrorKind::Denied,
            "write_file {path}: {error}"
        );
    }
    let error = err(
        &tools,
        "apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/linkdir/new.txt\n@@ -0,0 +1 @@\n+x\n"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");

    assert!(
        err(
            &tools,
            "read_file",
            json!({"path": "../outside/secret.txt"})
        )
        .await
        .message
        .contains("`..`")
    );
    assert!(
        err(&tools, "read_file", json!({"path": secret}))
            .await
            .message
            .contains("absolute")
    );
    assert!(
        err(&tools, "read_file", json!({"path": "link.txt"}))
            .await
            .message
            .contains("the file tools do not follow symlinks")
    );
    assert_eq!(read(&setup.outside, "secret.txt"), "top secret\n");
    assert!(!setup.outside.join("new.txt").exists());
    assert!(!setup.outside.join("nothing-yet.txt").exists());
    // Inside the workspace everything still works.
    assert_eq!(
        ok(&tools, "read_file", json!({"path": "inside.txt"})).await,
        "hello\n"
    );
}

/// A symlink is never followed, not even one that stays inside: a command can retarget it
/// between two calls, and git stores it as a link, not as the file it points to.
#[tokio::test]
async fn a_symlink_that_stays_inside_the_workspace_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "real/file.txt", "real\n");
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
    let tools = registry(dir.path()).await;
    let error = err(&tools, "read_file", json!({"path": "alias/file.txt"})).await;
    assert_eq!(error.kind, ToolErrorKind::Denied);
    assert!(error.message.contains("do not follow symlinks"), "{error}");
    assert_eq!(
        ok(&tools, "read_file", json!({"path": "real/file.txt"})).await,
        "real\n"
    );
}

#[tokio::test]
async fn the_git_directory_is_never_read_or_written() {
    let repo = TestRepo::new();
    let tools = registry(repo.path()).await;
    let error = err(&tools, "read_file", json!({"path": ".git/config"})).await;
    assert_eq!(error.kind, ToolErrorKind::Denied);
    let error = err(
        &tools,
        "write_file",
        json!({"path": ".git/hooks/pre-commit", "content": "x"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::Denied);
    let listed = ok(&tools, "list_files", json!({})).await;
    assert!(!listed.contains(".git/"), "{listed}");
}

// ---------------------------------------------------------------- read / list / search

#[tokio::test]
async fn read_file_returns_the_file_or_a_line_range() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/lib.rs", "one\ntwo\nthree\nfour\n");
    let tools = registry(dir.path()).await;
    assert_eq!(
        ok(&tools, "read_file", json!({"path": "src/lib.rs"})).await,
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(
        ok(
            &tools,
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 2, "end_line": 3})
        )
        .await,
        "two\nthree\n"
    );
    assert_eq!(
        ok(
            &tools,
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 4})
        )
        .await,
        "four\n"
    );
    let error = err(
        &tools,
        "read_file",
        json!({"path": "src/lib.rs", "start_line": 9}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert!(error.message.contains("4 lines"), "{error}");
    let error = err(&tools, "read_file", json!({"path": "src/missing.rs"})).await;
    assert_eq!(error.kind, ToolErrorKind::NotFound);
    let error = err(&tools, "read_file", json!({"start_line": 1})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert!(error.message.contains("`path` is required"), "{error}");
}

#[tokio::test]
async fn read_file_cuts_a_large_file_at_the_cap_and_says_how_to_read_on() {
    let dir = tempfile::tempdir().unwrap();
    let big: String = (1..=1000).map(|n| format!("line {n}\n")).collect();
    write(dir.path(), "big.txt", &big);
    let tools = tools_in(
        dir.path(),
        ToolsConfig {
            read_cap_bytes: 1000,
            ..config()
        },
    )
    .await
    .registry;
    let text = ok(&tools, "read_file", json!({"path": "big.txt"})).await;
    assert!(text.starts_with("line 1\nline 2\n"), "{text}");
    assert!(text.len() < 1200, "{}", text.len());
    assert!(text.contains(&format!("of {} bytes", big.len())), "{text}");
    assert!(text.contains("start_line/end_line"), "{text}");
    let range = ok(
        &tools,
        "read_file",
        json!({"path": "big.txt", "start_line": 999}),
    )
    .await;
    assert_eq!(range, "line 999\nline 1000\n");
}

#[tokio::test]
async fn list_files_skips_what_gitignore_excludes() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "target/\n*.log\n");
    repo.write("src/main.rs", "fn main() {}\n");
    repo.write("target/debug/app", "binary");
    repo.write("debug.log", "noise");
    repo.write(".github/workflows/ci.yml", "on: push\n");
    let tools = registry(repo.path()).await;
    let listed = ok(&tools, "list_files", json!({})).await;
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(
        lines,
        vec![
            ".github/workflows/ci.yml",
            ".gitignore",
            "README.md",
            "src/main.rs"
        ]
    );
    assert_eq!(
        ok(&tools, "list_files", json!({"path": "src"})).await,
        "src/main.rs"
    );
    let error = err(&tools, "list_files", json!({"path": "README.md"})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
}

#[tokio::test]
async fn search_finds_lines_skips_ignored_files_and_caps_the_matches() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "vendor/\n");
    repo.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    repo.write("src/b.py", "def alpha(): pass\n");
    repo.write("vendor/c.rs", "fn alpha() {}\n");
    let many: String = (0..50).map(|n| format!("needle {n}\n")).collect();
    repo.write("many.txt", &many);
    let tools = tools_in(
        repo.path(),
        ToolsConfig {
            search_max_results: 10,
            ..config()
        },
    )
    .await
    .registry;
    let found = ok(&tools, "search", json!({"pattern": "fn alpha"})).await;
    assert_eq!(found, "src/a.rs:1: fn alpha() {}");
    let found = ok(
        &tools,
        "search",
        json!({"pattern": "ALPHA", "case_insensitive": true, "glob": "*.py"}),
    )
    .await;
    assert_eq!(found, "src/b.py:1: def alpha(): pass");
    let capped = ok(&tools, "search", json!({"pattern": "needle"})).await;
    assert_eq!(
        capped
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        10
    );
    assert!(capped.contains("40 more matches not shown"), "{capped}");
    let none = ok(&tools, "search", json!({"pattern": "zebra"})).await;
    assert!(none.contains("no matches"), "{none}");
    let error = err(&tools, "search", json!({"pattern": "("})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert!(error.message.contains("not a valid regex"), "{error}");
}

// ---------------------------------------------------------------- write / edit / patch

#[tokio::test]
async fn write_file_creates_folders_and_replaces_files() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path()).await;
    let said = ok(
        &tools,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "new\n"}),
    )
    .await;
    assert!(said.starts_with("created `a/b/c.txt`"), "{said}");
    assert_eq!(read(dir.path(), "a/b/c.txt"), "new\n");
    let said = ok(
        &tools,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "newer\n"}),
    )
    .await;
    assert!(said.starts_with("replaced"), "{said}");
    assert_eq!(read(dir.path(), "a/b/c.txt"), "newer\n");
}

#[tokio::test]
async fn edit_file_replaces_one_exact_occurrence_and_explains_misses() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.rs",
        "fn a() {\n    call();\n}\nfn b() {\n    call();\n}\n",
    );
    let tools = registry(dir.path()).await;

    let error = err(
        &tools,
        "edit_file",
        json!({"path": "f.rs", "old_text": "    call();", "new_text": "x"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert!(error.message.contains("occurs 2 times"), "{error}");
    assert!(error.message.contains("lines 2, 5"), "{error}");

    let error = err(
        &tools,
        "edit_file",
        json!({"path": "f.rs", "old_text": "fn c() {}", "new_text": "x"}),
    )
    .await;
    assert!(error.message.contains("was not found in `f.rs`"), "{error}");

    let error = err(
        &tools,
        "edit_file",
        json!({"path": "f.rs", "old_text": "fn b() {\n  call();", "new_text": "x"}),
    )
    .await;
    assert!(
        error.message.contains("first line appears at line 4"),
        "{error}"
    );

    let said = ok(&tools, "edit_file", json!({"path": "f.rs", "old_text": "fn b() {\n    call();", "new_text": "fn b() {\n    other();"})).await;
    assert!(said.contains("line 4"), "{said}");
    assert_eq!(
        read(dir.path(), "f.rs"),
        "fn a() {\n    call();\n}\nfn b() {\n    other();\n}\n"
    );

    let error = err(
        &tools,
        "edit_file",
        json!({"path": "gone.rs", "old_text": "a", "new_text": "b"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::NotFound);
}

#[tokio::test]
async fn apply_patch_changes_creates_and_deletes_files_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    write(dir.path(), "old.txt", "bye\n");
    let tools = registry(dir.path()).await;
    let patch = "diff --git a/a.txt b/a.txt\n\
                 --- a/a.txt\n+++ b/a.txt\n\
                 @@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n\
                 @@ -8,3 +8,4 @@\n 8\n 9\n+9.5\n 10\n\
                 --- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\
                 --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let said = ok(&tools, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        said,
        "patched `a.txt` (2 hunks)\ncreated `new/file.txt`\ndeleted `old.txt`"
    );
    assert_eq!(
        read(dir.path(), "a.txt"),
        "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n9.5\n10\n"
    );
    assert_eq!(read(dir.path(), "new/file.txt"), "hello\nworld\n");
    assert!(!dir.path().join("old.txt").exists());
}

#[tokio::test]
async fn a_patch_that_does_not_apply_names_the_hunk_and_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "alpha\nbeta\n");
    write(dir.path(), "b.txt", "one\ntwo\nthree\n");
    let tools = registry(dir.path()).await;
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n\
                 --- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n\
                 @@ -3,1 +3,1 @@\n-tree\n+THREE\n";
    let error = err(&tools, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(
        error.message.contains(
            "hunk 2 of `b.txt` does not apply at line 3: expected `tree` but found `three`"
        ),
        "{error}"
    );
    assert_eq!(
        read(dir.path(), "a.txt"),
        "alpha\nbeta\n",
        "first file must stay unchanged"
    );
    assert_eq!(read(dir.path(), "b.txt"), "one\ntwo\nthree\n");

    let error = err(
        &tools,
        "apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n"}),
    )
    .await;
    assert!(error.message.contains("already exists"), "{error}");
    let error = err(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/zz.txt\n+++ b/zz.txt\n@@ -1 +1 @@\n-a\n+b\n"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::NotFound);
    let error = err(
        &tools,
        "apply_patch",
        json!({"patch": "please change beta"}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
}

// ---------------------------------------------------------------- run_command

#[tokio::test]
async fn run_command_runs_allowed_argv_and_denies_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path()).await;
    let said = ok(
        &tools,
        "run_command",
        json!({"argv": ["sh", "-c", "echo out; echo err >&2"]}),
    )
    .await;
    assert!(
        said.starts_with("`sh -c echo out; echo err >&2` exited with status 0"),
        "{said}"
    );
    assert!(said.contains("out\n") && said.contains("err\n"), "{said}");

    let error = err(
        &tools,
        "run_command",
        json!({"argv": ["sh", "-c", "exit 3"]}),
    )
    .await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("exit status 3"), "{error}");

    let error = err(&tools, "run_command", json!({"argv": ["rm", "-rf", "."]})).await;
    assert_eq!(error.kind, ToolErrorKind::Denied);
    assert!(
        error.message.contains("`sh *`, `env *`, `cargo test *`"),
        "{error}"
    );
    assert!(error.message.contains("tools.allowed_commands"), "{error}");
    // A prefix allows more arguments but not a different sub-command.
    let error = err(&tools, "run_command", json!({"argv": ["cargo", "publish"]})).await;
    assert_eq!(error.kind, ToolErrorKind::Denied);
    let error = err(&tools, "run_command", json!({"argv": "sh -c ls"})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
}

#[tokio::test]
async fn run_command_environment_has_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path()).await;
    let said = ok(&tools, "run_command", json!({"argv": ["env"]})).await;
    assert!(said.contains("PATH="), "{said}");
    // Cargo sets this for every test process; it is not on the safe list.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    assert!(!said.contains("CARGO_MANIFEST_DIR"), "{said}");
    for line in said.lines().skip(1) {
        let name = line
            .split('=')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        assert!(
            !["TOKEN", "KEY", "SECRET", "PASSWORD"]
                .iter()
                .any(|m| name.contains(m)),
            "secret-looking variable passed: {name}"
        );
    }
}

#[tokio::test]
async fn run_command_times_out_and_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "script.sh",
        "sleep 30 &\necho $! > sleeper.pid\necho started\nwait\n",
    );
    let tools = tools_in(
        dir.path(),
        ToolsConfig {
            command_timeout_seconds: 30,
            ..config()
        },
    )
    .await
    .registry;
    let started = std::time::Instant::now();
    let error = err(
        &tools,
        "run_command",
        json!({"argv": ["sh", "script.sh"], "timeout_seconds": 1}),
    )
    .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind, ToolErrorKind::Timeout);
    assert!(
        error.message.contains("did not finish within 1s"),
        "{error}"
    );
    assert!(
        error.message.contains("started"),
        "output so far is kept: {error}"
    );
    let pid: i32 = read(dir.path(), "sleeper.pid").trim().parse().unwrap();
    let mut alive = true;
    for _ in 0..50 {
        // Signal 0 checks for existence; a zombie still counts, so also read /proc.
        let exists = unsafe { libc::kill(pid, 0) } == 0;
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        if !exists || zombie {
            alive = false;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        !alive,
        "the background `sleep 30` (pid {pid}) survived the time-out"
    );
}

#[tokio::test]
async fn run_command_keeps_the_head_and_tail_of_long_output() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_in(
        dir.path(),
        ToolsConfig {
            output_cap_bytes: 1000,
            ..config()
        },
    )
    .await
    .registry;
    let said = ok(
        &tools,
        "run_command",
        json!({"argv": ["sh", "-c", "echo FIRST; i=0; while [ $i -lt 2000 ]; do echo filler-line-$i; i=$((i+1)); done; echo LAST"]}),
    )
    .await;
    assert!(said.contains("FIRST"), "{said}");
    assert!(said.trim_end().ends_with("LAST"), "{said}");
    assert!(said.contains("bytes omitted …"), "{said}");
    assert!(said.len() < 1200, "{}", said.len());
}

#[tokio::test]
async fn run_command_allow_list_is_detected_from_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "Cargo.toml", "[package]\nname = \"x\"\n");
    write(dir.path(), "Makefile", "test:\n\ttrue\n");
    let built = tools_in(dir.path(), ToolsConfig::default()).await;
    let spec = built
        .availability
        .available
        .iter()
        .find(|s| s.name == "run_command")
        .unwrap();
    assert!(
        spec.description.contains("cargo test"),
        "{}",
        spec.description
    );
    assert!(
        spec.description.contains("make test"),
        "{}",
        spec.description
    );
    let said = ok(
        &built.registry,
        "run_command",
        json!({"argv": ["make", "test"]}),
    )
    .await;
    assert!(said.contains("status 0"), "{said}");

    let empty = tempfile::tempdir().unwrap();
    let built = tools_in(empty.path(), ToolsConfig::default()).await;
    assert!(!built.registry.contains("run_command"));
    let reason = built
        .availability
        .reason_unavailable("run_command")
        .unwrap();
    assert!(reason.contains("tools.allowed_commands"), "{reason}");
}

#[tokio::test]
async fn tools_not_enabled_are_reported_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let built = tools_in(
        dir.path(),
        ToolsConfig {
            enabled: vec!["read_file".into(), "teleport".into()],
            ..config()
        },
    )
    .await;
    assert_eq!(
        built.registry.names().collect::<Vec<_>>(),
        vec!["read_file"]
    );
    assert!(
        built
            .availability
            .reason_unavailable("write_file")
            .unwrap()
            .contains("tools.enabled")
    );
    assert!(
        built
            .availability
            .reason_unavailable("teleport")
            .unwrap()
            .contains("not a built-in tool")
    );
    assert!(
        built
            .availability
            .reason_unavailable("open_pull_request")
            .unwrap()
            .contains("no forge thread")
    );
}

// ---------------------------------------------------------------- MCP

/// The fixture server binary, built by `cargo test` with the other examples; `cargo build` here
/// finds it fresh (or builds it when a narrower command like `cargo test --test all` skipped it)
/// and reports its path.
pub(crate) fn fixture_server() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo
            .args([
                "build",
                "--quiet",
                "--example",
                "mcp_fixture_server",
                "--message-format=json",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        // Cargo sets these for the test process; build scripts (ring's) that watch them would be
        // rerun, and the next `cargo test` would rebuild them again.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
                "CARGO_CFG_",
            ]
            .iter()
            .any(|prefix| name.starts_with(prefix))
                || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"]
                    .contains(&name.as_ref())
            {
                cargo.env_remove(name.as_ref());
            }
        }
        let output = cargo.output().expect("run cargo build for the MCP fixture");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|m| {
                m.get("executable")
                    .and_then(Value::as_str)
                    .map(PathBuf::from)
            })
            .expect("cargo reported the fixture executable")
    })
    .clone()
}

fn fixture_config(allowed_tools: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: fixture_server().display().to_string(),
        env: BTreeMap::from([("FIXTURE_GREETING".to_owned(), "hi there".to_owned())]),
        allowed_tools: allowed_tools.iter().map(|s| s.to_string()).collect(),
        ..McpServerConfig::default()
    }
}

async fn with_mcp(
    dir: &Path,
    servers: BTreeMap<String, McpServerConfig>,
    timeout: u64,
) -> BuiltTools {
    let mut context = ToolContext::new(
        Workspace::new(dir).unwrap(),
        ToolsConfig {
            command_timeout_seconds: timeout,
            ..config()
        },
    );
    context.mcp_servers = servers;
    build_registry(context).await
}

#[tokio::test]
async fn mcp_server_tools_are_listed_with_the_server_prefix_and_called() {
    let dir = tempfile::tempdir().unwrap();
    let built = with_mcp(
        dir.path(),
        BTreeMap::from([("fx".into(), fixture_config(&[]))]),
        30,
    )
    .await;
    for name in [
        "fx__echo",
        "fx__add",
        "fx__fail",
        "fx__slow",
        "fx__env",
        "fx__crash",
    ] {
        assert!(
            built.availability.is_available(name),
            "{name} missing: {:?}",
            built.availability
        );
    }
    let spec = built.registry.get("fx__add").unwrap().spec();
    assert!(
        spec.description.contains("Add two integers"),
        "{}",
        spec.description
    );
    assert_eq!(spec.input_schema["required"], json!(["a", "b"]));
    let tools = &built.registry;
    assert_eq!(ok(tools, "fx__echo", json!({"text": "ping"})).await, "ping");
    assert_eq!(ok(tools, "fx__add", json!({"a": 2, "b": 40})).await, "42");
    let error = err(tools, "fx__add", json!({"a": "two"})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments, "{error}");
    let error = err(tools, "fx__fail", json!({})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("this tool always fails"), "{error}");
    // Configured env reaches the server; Replan's own environment is scrubbed.
    assert_eq!(
        ok(tools, "fx__env", json!({"name": "FIXTURE_GREETING"})).await,
        "hi there"
    );
    assert_eq!(
        ok(tools, "fx__env", json!({"name": "CARGO_MANIFEST_DIR"})).await,
        "<unset>"
    );
    built.mcp.shutdown().await;
    let error = err(tools, "fx__echo", json!({"text": "late"})).await;
    assert!(error.message.contains("stopped"), "{error}");
}

#[tokio::test]
async fn mcp_allowed_tools_limit_what_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    let built = with_mcp(
        dir.path(),
        BTreeMap::from([("fx".into(), fixture_config(&["echo"]))]),
        30,
    )
    .await;
    let offered: Vec<&str> = built
        .registry
        .names()
        .filter(|n| n.starts_with("fx__"))
        .collect();
    assert_eq!(offered, vec!["fx__echo"]);
    let reason = built.availability.reason_unavailable("fx__crash").unwrap();
    assert!(reason.contains("mcp_servers.fx.allowed_tools"), "{reason}");
    built.mcp.shutdown().await;
}

#[tokio::test]
async fn an_mcp_server_that_crashes_mid_call_is_reported_and_stays_down() {
    let dir = tempfile::tempdir().unwrap();
    let built = with_mcp(
        dir.path(),
        BTreeMap::from([("fx".into(), fixture_config(&[]))]),
        30,
    )
    .await;
    let tools = &built.registry;
    assert_eq!(
        ok(tools, "fx__echo", json!({"text": "before"})).await,
        "before"
    );
    let error = err(tools, "fx__crash", json!({})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("MCP server `fx`"), "{error}");
    assert!(error.message.contains("crash"), "{error}");
    assert!(
        error.message.contains("fixture: crashing on purpose"),
        "stderr tail: {error}"
    );
    let error = err(tools, "fx__echo", json!({"text": "after"})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("MCP server `fx` is down"), "{error}");
    built.mcp.shutdown().await;
}

#[tokio::test]
async fn a_slow_mcp_call_times_out_and_the_server_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let built = with_mcp(
        dir.path(),
        BTreeMap::from([("fx".into(), fixture_config(&[]))]),
        1,
    )
    .await;
    let started = std::time::Instant::now();
    let error = err(&built.registry, "fx__slow", json!({"seconds": 20})).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(error.kind, ToolErrorKind::Timeout, "{error}");
    assert_eq!(
        ok(&built.registry, "fx__echo", json!({"text": "still here"})).await,
        "still here"
    );
    built.mcp.shutdown().await;
}

#[tokio::test]
async fn an_mcp_server_that_cannot_start_is_unavailable_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let broken = McpServerConfig {
        command: "/nonexistent/mcp-server".into(),
        ..McpServerConfig::default()
    };
    let not_mcp = McpServerConfig {
        command: "sh".into(),
        args: vec!["-c".into(), "echo not an mcp server >&2; exit 1".into()],
        ..McpServerConfig::default()
    };
    let built = with_mcp(
        dir.path(),
        BTreeMap::from([
            ("gone".into(), broken),
            ("liar".into(), not_mcp),
            ("fx".into(), fixture_config(&["echo"])),
        ]),
        30,
    )
    .await;
    let reason = built.availability.reason_unavailable("gone__*").unwrap();
    assert!(
        reason.contains("could not be started") && reason.contains("/nonexistent/mcp-server"),
        "{reason}"
    );
    let reason = built.availability.reason_unavailable("liar__*").unwrap();
    assert!(
        reason.contains("not an mcp server"),
        "stderr tail in: {reason}"
    );
    assert!(built.registry.contains("read_file") && built.registry.contains("fx__echo"));
    built.mcp.shutdown().await;
}

// ---------------------------------------------------------------- forge tools

async fn forge_tools(
    repo: &TestRepo,
    forge_dir: &Path,
    publisher_push: bool,
) -> (BuiltTools, Arc<LocalForge>) {
    let forge = Arc::new(LocalForge::new(forge_dir).with_repository(repo.path()));
    forge
        .create_thread(
            ThreadRef::issue(5),
            "Fix the greeting",
            "It says helo.",
            "alice",
        )
        .await
        .unwrap();
    let mut context = ToolContext::new(Workspace::new(repo.path()).unwrap(), config());
    context.forge = Some((forge.clone() as Arc<dyn Forge>, ThreadRef::issue(5)));
    context.publisher = if publisher_push {
        Arc::new(GitPushPublisher)
    } else {
        Arc::new(NoPublish)
    };
    context.author = CommitAuthor {
        name: "Replan".into(),
        email: "replan@users.noreply.github.com".into(),
    };
    (build_registry(context).await, forge)
}

#[tokio::test]
async fn read_thread_and_post_comment_use_the_forge() {
    let repo = TestRepo::new();
    let forge_dir = tempfile::tempdir().unwrap();
    let (built, forge) = forge_tools(&repo, forge_dir.path(), false).await;
    forge
        .add_comment_as(&ThreadRef::issue(5), "bob", "Also the farewell.")
        .await
        .unwrap();
    let said = ok(
        &built.registry,
        "post_comment",
        json!({"body": "Working on it."}),
    )
    .await;
    assert_eq!(said, "posted comment 2 on #5");
    let thread = ok(&built.registry, "read_thread", json!({})).await;
    assert!(
        thread.starts_with("#5 Fix the greeting\nauthor: alice"),
        "{thread}"
    );
    assert!(thread.contains("It says helo."), "{thread}");
    assert!(
        thread.contains("comment 1 by bob") && thread.contains("Also the farewell."),
        "{thread}"
    );
    assert!(
        thread.contains("comment 2 by replan[bot] (bot)") && thread.contains("Working on it."),
        "{thread}"
    );
    let error = err(&built.registry, "post_comment", json!({"body": "  "})).await;
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
}

#[tokio::test]
async fn open_pull_request_commits_to_a_new_branch_and_leaves_the_checkout_alone() {
    let repo = TestRepo::new();
    repo.write("greeting.txt", "helo\n");
    repo.commit_all("Add greeting");
    let original_head = repo.head();
    let forge_dir = tempfile::tempdir().unwrap();
    let (built, forge) = forge_tools(&repo, forge_dir.path(), false).await;
    let tools = &built.registry;

    let error = err(tools, "open_pull_request", json!({"title": "Fix greeting"})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("nothing to commit"), "{error}");

    ok(
        tools,
        "edit_file",
        json!({"path": "greeting.txt", "old_text": "helo", "new_text": "hello"}),
    )
    .await;
    ok(
        tools,
        "write_file",
        json!({"path": "docs/new.md", "content": "# New\n"}),
    )
    .await;
    repo.write("ignored.log", "x");
    repo.write(".gitignore", "*.log\n");
    let said = ok(
        tools,
        "open_pull_request",
        json!({"title": "Fix greeting", "body": "Spelling."}),
    )
    .await;
    assert!(said.starts_with("opened pull request #1"), "{said}");
    assert!(said.contains("from `replan/issue-5` into `main`"), "{said}");

    // The branch holds one commit on top of main with every change, by the configured author.
    assert_eq!(repo.rev_parse("replan/issue-5^").unwrap(), original_head);
    assert_eq!(repo.show("replan/issue-5:greeting.txt"), "hello\n");
    assert_eq!(repo.show("replan/issue-5:docs/new.md"), "# New\n");
    assert!(repo.try_show("replan/issue-5:ignored.log").is_none());
    let author = repo.run_git(&["log", "-1", "--format=%an <%ae>%n%B", "replan/issue-5"]);
    assert!(
        author.starts_with("Replan <replan@users.noreply.github.com>\nFix greeting"),
        "{author}"
    );
    assert!(author.contains("#5"), "{author}");
    // The checkout is where it was, with the changes still in the working tree.
    assert_eq!(repo.run_git(&["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(repo.head(), original_head);
    assert_eq!(repo.read("greeting.txt"), "hello\n");
    assert!(
        repo.run_git(&["status", "--porcelain"])
            .contains("greeting.txt")
    );

    let pulls = forge.pull_requests().await.unwrap();
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0].request.head, "replan/issue-5");
    assert_eq!(pulls[0].request.base, "main");
    let (body, marker) = pulls[0]
        .request
        .body
        .split_once("\n\n<!-- replan:key=")
        .unwrap();
    assert_eq!(body, "Spelling.\n\nCloses #5");
    assert!(
        marker.ends_with(" -->"),
        "a hidden idempotency marker: {marker}"
    );

    // A second pull request for the same issue gets the next free branch name.
    repo.write("greeting.txt", "hello!\n");
    let said = ok(tools, "open_pull_request", json!({"title": "More"})).await;
    assert!(said.contains("`replan/issue-5-2`"), "{said}");
    assert_eq!(repo.show("replan/issue-5-2:greeting.txt"), "hello!\n");
    assert!(
        forge.pull_requests().await.unwrap()[1]
            .request
            .body
            .starts_with("Closes #5\n\n<!-- replan:key="),
        "a different call, a different key"
    );
    assert_ne!(
        forge.pull_requests().await.unwrap()[1].request.body,
        pulls[0].request.body
    );
}

#[tokio::test]
async fn open_pull_request_pushes_the_branch_to_origin() {
    let remote = TestRepo::bare();
    let seed = TestRepo::clone_from(&remote);
    seed.write("README.md", "seed\n");
    seed.commit_all("seed");
    seed.run_git(&["push", "-q", "origin", "main"]);
    let repo = TestRepo::clone_from(&remote);
    let forge_dir = tempfile::tempdir().unwrap();
    let (built, _forge) = forge_tools(&repo, forge_dir.path(), true).await;
    repo.write("README.md", "changed\n");
    ok(
        &built.registry,
        "open_pull_request",
        json!({"title": "Change"}),
    )
    .await;
    assert_eq!(remote.show("replan/issue-5:README.md"), "changed\n");
}

#[tokio::test]
async fn pushing_from_a_checkout_without_origin_is_skipped_and_a_broken_origin_is_an_error() {
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit_all("x");
    repo.run_git(&["branch", "replan/work/issue-5"]);
    GitPushPublisher
        .publish(repo.path(), "replan/work/issue-5")
        .await
        .expect("no origin: nothing to push to, and no error");

    repo.run_git(&["remote", "add", "origin", "/nonexistent/replan-remote.git"]);
    let error = GitPushPublisher
        .publish(repo.path(), "replan/work/issue-5")
        .await
        .expect_err("an origin that cannot be reached");
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("git push"), "{error}");
}

/// The work-branch save pushes its new commit by id while the local branch is moved beside it:
/// origin gets the commit even though the local branch is not there yet, and a branch someone
/// else moved meanwhile is not overwritten.
#[tokio::test]
async fn a_snapshot_commit_is_pushed_by_id_and_the_branch_moves_only_from_where_it_was() {
    let origin = TestRepo::bare();
    let repo = TestRepo::clone_from(&origin);
    let _ = repo.try_git(&["checkout", "-q", "-b", "main"]);
    repo.write("a.txt", "a\n");
    repo.commit_all("a");
    repo.run_git(&["push", "-q", "origin", "main"]);
    let branch = "replan/work/issue-12";
    let mut snapshots = Snapshots::open(repo.path(), branch).unwrap();
    repo.write("b.txt", "b\n");
    let commit = snapshots
        .commit(repo.path(), "one", &CommitAuthor::default())
        .unwrap()
        .expect("a new file is a change");
    assert_eq!(repo.rev_parse(&format!("refs/heads/{branch}")), None);
    let publisher = GitPushPublisher;
    assert!(publisher.pushes_commits());
    publisher
        .publish_commit(repo.path(), &commit, branch)
        .await
        .unwrap();
    assert_eq!(
        origin.rev_parse(&format!("refs/heads/{branch}")).as_deref(),
        Some(commit.as_str())
    );
    snapshots.advance(repo.path(), branch, &commit).unwrap();
    assert_eq!(
        repo.rev_parse(&format!("refs/heads/{branch}")).as_deref(),
        Some(commit.as_str())
    );

    // Someone else moves the branch: the next move is refused, not forced.
    repo.run_git(&["update-ref", &format!("refs/heads/{branch}"), "main"]);
    repo.write("c.txt", "c\n");
    let next = snapshots
        .commit(repo.path(), "two", &CommitAuthor::default())
        .unwrap()
        .unwrap();
    let error = snapshots
        .advance(repo.path(), branch, &next)
        .expect_err("the branch moved");
    assert!(error.message.contains("update-ref"), "{error}");
    assert_eq!(
        repo.rev_parse(&format!("refs/heads/{branch}")),
        repo.rev_parse("main")
    );
}

/// actions/checkout leaves the job's token in `.git/config` (`persist-credentials: true`), where
/// every command can read it. Adoption takes it out of the checkout's config and keeps it in
/// memory: the checkout's config no longer holds it, and Replan's saves still reach the HTTP
/// remote that demands it (the remote answers 401 without it).
#[tokio::test]
async fn adoption_takes_the_checkouts_token_out_of_its_config_and_still_pushes_with_it() {
    use base64::Engine as _;
    let repo = TestRepo::new();
    repo.write("a.txt", "a\n");
    repo.commit_all("a");
    let remote = TestRepo::bare();
    repo.run_git(&["push", "-q", &remote.url(), "HEAD:refs/heads/main"]);
    let token = base64::engine::general_purpose::STANDARD.encode("x-access-token:ghs_secret0123");
    let authorization = format!("basic {token}");
    let name = remote
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let http = GitHttp::start(remote.path().parent().unwrap(), &authorization);
    repo.run_git(&["remote", "add", "origin", &http.url(&name)]);
    let key = format!("http.{}.extraheader", http.url(""));
    repo.run_git(&["config", &key, &format!("AUTHORIZATION: {authorization}")]);

    let private = tempfile::tempdir().unwrap();
    let private_path = private.path().to_string_lossy().into_owned();
    let env = |name: &str| (name == "REPLAN_PRIVATE_DIR").then(|| private_path.clone());
    let adopted = replan::git::adopt(repo.path(), &env, &[]).unwrap();
    let config = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
    assert!(!config.contains(&token), "{config}");
    assert!(!config.contains("extraheader"), "{config}");
    assert!(
        config.contains(&http.url(&name)),
        "the remote stays: {config}"
    );

    let branch = "replan/work/issue-21";
    let mut snapshots = Snapshots::open(repo.path(), branch).unwrap();
    repo.write("b.txt", "b\n");
    let commit = snapshots
        .commit(repo.path(), "save", &CommitAuthor::default())
        .unwrap()
        .expect("a new file is a change");
    snapshots.advance(repo.path(), branch, &commit).unwrap();
    GitPushPublisher
        .publish_commit(repo.path(), &commit, branch)
        .await
        .unwrap();
    assert_eq!(
        remote.rev_parse(&format!("refs/heads/{branch}")),
        Some(commit)
    );
    assert_eq!(remote.show(&format!("{branch}:b.txt")), "b\n");
    let requests = http.requests();
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|r| r.status == 200),
        "every request authorised"
    );
    // The branch lives in the private copy, not in the checkout's repository.
    assert_eq!(repo.rev_parse(&format!("refs/heads/{branch}")), None);
    drop(snapshots);
    drop(adopted);
}

#[test]
fn snapshots_build_on_the_branch_when_it_exists_and_on_head_otherwise() {
    let repo = TestRepo::new();
    repo.write("a.txt", "a\n");
    let head = repo.commit_all("a");
    let author = CommitAuthor::default();
    repo.write("b.txt", "b\n");
    let mut first = Snapshots::open(repo.path(), "replan/work/issue-9").unwrap();
    let commit = first
        .save(repo.path(), "replan/work/issue-9", "one", &author)
        .unwrap()
        .expect("a new file is a change");
    assert_eq!(
        repo.rev_parse(&format!("{commit}^")).as_deref(),
        Some(head.as_str())
    );
    assert_eq!(repo.show("replan/work/issue-9:b.txt"), "b\n");
    assert_eq!(
        first
            .save(repo.path(), "replan/work/issue-9", "same", &author)
            .unwrap(),
        None,
        "the same tree commits nothing"
    );
    drop(first);

    // A later run finds the branch and builds on its tip.
    repo.write("c.txt", "c\n");
    let mut second = Snapshots::open(repo.path(), "replan/work/issue-9").unwrap();
    let next = second
        .save(repo.path(), "replan/work/issue-9", "two", &author)
        .unwrap()
        .unwrap();
    assert_eq!(repo.rev_parse(&format!("{next}^")), Some(commit));
    assert_eq!(
        repo.rev_parse("HEAD").as_ref(),
        Some(&head),
        "the checkout stays where it was"
    );

    // A linked worktree's `.git` is a file naming its own git directory (its own index).
    let linked = tempfile::tempdir().unwrap();
    let linked = linked.path().join("linked");
    repo.run_git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        linked.to_str().unwrap(),
        &head,
    ]);
    std::fs::write(linked.join("d.txt"), "d\n").unwrap();
    let mut in_worktree = Snapshots::open(&linked, "replan/work/issue-10").unwrap();
    in_worktree
        .save(&linked, "replan/work/issue-10", "three", &author)
        .unwrap()
        .unwrap();
    assert_eq!(repo.show("replan/work/issue-10:d.txt"), "d\n");
    assert_eq!(
        repo.try_show("replan/work/issue-10:b.txt"),
        None,
        "built on the worktree's HEAD"
    );

    let empty = TestRepo::empty();
    let error = Snapshots::open(empty.path(), "replan/work/issue-9")
        .err()
        .unwrap();
    assert!(error.message.contains("no commit yet"), "{error}");
}

#[tokio::test]
async fn a_pull_request_the_forge_rejects_is_a_failed_call_naming_the_branch() {
    let repo = TestRepo::new();
    let forge_dir = tempfile::tempdir().unwrap();
    // The forge checks branches in a different repository, so the head is "missing" there.
    let other = TestRepo::new();
    let forge = Arc::new(LocalForge::new(forge_dir.path()).with_repository(other.path()));
    forge
        .create_thread(ThreadRef::issue(5), "t", "b", "a")
        .await
        .unwrap();
    let mut context = ToolContext::new(Workspace::new(repo.path()).unwrap(), config());
    context.forge = Some((forge as Arc<dyn Forge>, ThreadRef::issue(5)));
    context.publisher = Arc::new(NoPublish);
    let built = build_registry(context).await;
    repo.write("x.txt", "x\n");
    let error = err(&built.registry, "open_pull_request", json!({"title": "X"})).await;
    assert_eq!(error.kind, ToolErrorKind::Failed);
    assert!(error.message.contains("replan/issue-5"), "{error}");
    assert!(error.message.contains("does not exist"), "{error}");
}

// ----- bounded reading (issue 14)

#[tokio::test]
async fn read_file_refuses_a_fifo_at_once_and_search_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.txt", "needle\n");
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let tools = registry(dir.path()).await;
    let started = std::time::Instant::now();

    let error = err(&tools, "read_file", json!({"path": "pipe"})).await;

    assert!(error.message.contains("not a regular file"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    let found = ok(&tools, "search", json!({"pattern": "needle"})).await;
    assert!(found.contains("notes.txt:1"), "{found}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn read_file_of_a_large_file_returns_at_most_the_cap_and_can_read_its_end() {
    let dir = tempfile::tempdir().unwrap();
    // 40 MB of text, 400,000 lines: read as a stream, never whole.
    let line = format!("{}\n", "x".repeat(99));
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.path().join("big.txt")).unwrap());
    for _ in 0..400_000 {
        std::io::Write::write_all(&mut file, line.as_bytes()).unwrap();
    }
    std::io::Write::write_all(&mut file, b"the last line\n").unwrap();
    drop(file);
    let tools = registry(dir.path()).await;
    let cap = config().read_cap_bytes as usize;

    let head = ok(&tools, "read_file", json!({"path": "big.txt"})).await;
    assert!(head.len() < cap + 300, "{}", head.len());
    assert!(
        head.contains("[… cut after"),
        "{}",
        &head[head.len() - 200..]
    );
    assert!(
        head.contains("file: 40000014 bytes"),
        "{}",
        &head[head.len() - 200..]
    );

    let tail = ok(
        &tools,
        "read_file",
        json!({"path": "big.txt", "start_line": 400_001}),
    )
    .await;
    assert_eq!(tail, "the last line\n");
    let past = err(
        &tools,
        "read_file",
        json!({"path": "big.txt", "start_line": 400_002}),
    )
    .await;
    assert!(past.message.contains("(400001 lines)"), "{past}");
}
