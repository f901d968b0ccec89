//! The file tools are confined by the kernel (issue 35, point 5): whatever a command planted in
//! the checkout — a symlink, a hard link, a pre-created temporary file, a `.GIT` folder, a folder
//! swapped for a symlink — no file tool reads or writes outside the workspace or inside `.git`.

use super::{allowing, call, tools_for};
use crate::support::TestRepo;
use replan::tools::{ToolErrorKind, ToolRegistry};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A repository (with `.git/config`) and a directory beside it that stands for "outside".
struct Scene {
    repo: TestRepo,
    outside: tempfile::TempDir,
    git_config: String,
}

impl Scene {
    fn new() -> Self {
        let repo = TestRepo::new();
        repo.write("c.txt", "old c\n");
        repo.write("d.txt", "old d\n");
        repo.commit_all("files");
        let git_config = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
        Scene {
            repo,
            outside: tempfile::tempdir().unwrap(),
            git_config,
        }
    }

    fn root(&self) -> &Path {
        self.repo.path()
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }

    async fn tools(&self) -> ToolRegistry {
        tools_for(self.root(), allowing(&["sh -c *"]), |_| {}).await
    }

    /// `.git/config` is as it was and nothing appeared outside.
    fn assert_untouched(&self) {
        let config = std::fs::read_to_string(self.root().join(".git/config")).unwrap();
        assert_eq!(config, self.git_config, ".git/config was changed");
        let outside: Vec<_> = std::fs::read_dir(self.outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            outside.iter().all(|n| n == "secret.txt"),
            "files appeared outside the workspace: {outside:?}"
        );
    }
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn a_planted_temporary_symlink_is_never_written_through() {
    let scene = Scene::new();
    let root = scene.root();
    // What a command can leave behind: the temporary names the tools used to write through.
    symlink(scene.outside("a"), root.join(".a.txt.replan-tmp")).unwrap();
    symlink(".git/config", root.join(".b.txt.replan-tmp")).unwrap();
    symlink(".git/config", root.join(".c.txt.replan-tmp")).unwrap();
    symlink(scene.outside("d"), root.join(".d.txt.replan-tmp")).unwrap();
    symlink(".git/config", root.join(".e.txt.replan-tmp")).unwrap();
    let tools = scene.tools().await;

    call(
        &tools,
        "write_file",
        json!({"path": "a.txt", "content": "A\n"}),
    )
    .await
    .unwrap();
    call(
        &tools,
        "write_file",
        json!({"path": "b.txt", "content": "B\n"}),
    )
    .await
    .unwrap();
    call(
        &tools,
        "edit_file",
        json!({"path": "c.txt", "old_text": "old c", "new_text": "C"}),
    )
    .await
    .unwrap();
    call(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/d.txt\n+++ b/d.txt\n@@ -1 +1 @@\n-old d\n+D\n"}),
    )
    .await
    .unwrap();
    call(
        &tools,
        "apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1 @@\n+E\n"}),
    )
    .await
    .unwrap();

    scene.assert_untouched();
    for (name, content) in [
        ("a.txt", "A\n"),
        ("b.txt", "B\n"),
        ("c.txt", "C\n"),
        ("d.txt", "D\n"),
        ("e.txt", "E\n"),
    ] {
        let path = root.join(name);
        assert!(
            std::fs::symlink_metadata(&path).unwrap().is_file(),
            "{name} is not a regular file"
        );
        assert_eq!(text(&path), content, "{name}");
    }
}

#[tokio::test]
async fn a_pre_created_temporary_file_is_neither_reused_nor_written_through() {
    let scene = Scene::new();
    let root = scene.root();
    std::fs::write(root.join(".a.txt.replan-tmp"), "planted\n").unwrap();
    // A temporary name hard-linked to .git/config: writing into it would write .git/config.
    std::fs::hard_link(root.join(".git/config"), root.join(".b.txt.replan-tmp")).unwrap();
    let tools = scene.tools().await;

    call(
        &tools,
        "write_file",
        json!({"path": "a.txt", "content": "A\n"}),
    )
    .await
    .unwrap();
    call(
        &tools,
        "write_file",
        json!({"path": "b.txt", "content": "B\n"}),
    )
    .await
    .unwrap();

    scene.assert_untouched();
    assert_eq!(text(&root.join(".a.txt.replan-tmp")), "planted\n");
    assert_eq!(text(&root.join("a.txt")), "A\n");
    assert_eq!(text(&root.join("b.txt")), "B\n");
}

#[tokio::test]
async fn a_hard_link_to_git_config_is_neither_read_nor_written() {
    let scene = Scene::new();
    let root = scene.root();
    std::fs::hard_link(root.join(".git/config"), root.join("hl.txt")).unwrap();
    let tools = scene.tools().await;

    let error = call(&tools, "read_file", json!({"path": "hl.txt"}))
        .await
        .expect_err("read_file of a hard link must be refused");
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");
    assert!(
        error.message.contains("`hl.txt`") && error.message.contains("hard link"),
        "{error}"
    );
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "hl.txt", "content": "pwned\n"}),
        ),
        (
            "edit_file",
            json!({"path": "hl.txt", "old_text": "[core]", "new_text": "[pwned]"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/hl.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-[core]\n"}),
        ),
    ] {
        let error = call(&tools, tool, args)
            .await
            .expect_err("writing a hard link must be refused");
        assert_eq!(error.kind, ToolErrorKind::Denied, "{tool}: {error}");
        assert!(error.message.contains("hard link"), "{tool}: {error}");
    }
    let found = call(
        &tools,
        "search",
        json!({"pattern": "repositoryformatversion"}),
    )
    .await
    .unwrap();
    assert!(
        !found.contains("hl.txt"),
        "search read the hard link: {found}"
    );

    scene.assert_untouched();
    assert!(root.join("hl.txt").exists());
}

#[tokio::test]
async fn symlinked_files_and_folders_are_not_followed_even_inside_the_workspace() {
    let scene = Scene::new();
    let root = scene.root();
    std::fs::write(scene.outside("secret.txt"), "top secret\n").unwrap();
    symlink(scene.outside("secret.txt"), root.join("out.txt")).unwrap();
    symlink(scene.outside.path(), root.join("outdir")).unwrap();
    symlink("c.txt", root.join("alias.txt")).unwrap();
    symlink(".git", root.join("gitdir")).unwrap();
    let tools = scene.tools().await;

    for path in ["out.txt", "outdir/secret.txt", "alias.txt", "gitdir/config"] {
        for (tool, args) in [
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "pwned\n"})),
            (
                "edit_file",
                json!({"path": path, "old_text": "top secret", "new_text": "pwned"}),
            ),
        ] {
            let error = call(&tools, tool, args)
                .await
                .expect_err("a symlink must not be followed");
            assert_eq!(error.kind, ToolErrorKind::Denied, "{tool} {path}: {error}");
        }
    }
    let error = call(&tools, "read_file", json!({"path": "alias.txt"}))
        .await
        .unwrap_err();
    assert!(
        error.message.contains("`alias.txt`")
            && error
                .message
                .contains("the file tools do not follow symlinks"),
        "{error}"
    );
    let error = call(
        &tools,
        "write_file",
        json!({"path": "outdir/new.txt", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert!(error.message.contains("symlink"), "{error}");
    let error = call(&tools, "list_files", json!({"path": "outdir"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");
    let found = call(
        &tools,
        "search",
        json!({"pattern": "secret|repositoryformat"}),
    )
    .await
    .unwrap();
    assert!(
        found.starts_with("no matches"),
        "search followed a symlink: {found}"
    );

    scene.assert_untouched();
    assert_eq!(text(&scene.outside("secret.txt")), "top secret\n");
    assert_eq!(text(&root.join("c.txt")), "old c\n");
    assert!(
        std::fs::symlink_metadata(root.join("alias.txt"))
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn dot_git_in_any_case_is_refused() {
    let scene = Scene::new();
    let tools = scene.tools().await;
    for path in [".GIT/config", ".Git/hooks/pre-push", "sub/.gIt/config"] {
        let error = call(&tools, "write_file", json!({"path": path, "content": "x"}))
            .await
            .expect_err("a .git path in any case must be refused");
        assert_eq!(error.kind, ToolErrorKind::Denied, "{path}: {error}");
        assert!(error.message.contains(".git"), "{path}: {error}");
        let error = call(
            &tools,
            "apply_patch",
            json!({"patch": format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n")}),
        )
        .await
        .expect_err("a .git path in any case must be refused");
        assert_eq!(error.kind, ToolErrorKind::Denied, "{path}: {error}");
    }
    let error = call(&tools, "read_file", json!({"path": ".GIT/config"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");
    for folder in [".GIT", ".Git", "sub"] {
        assert!(!scene.root().join(folder).exists(), "{folder} was created");
    }
    scene.assert_untouched();
}

#[tokio::test]
async fn a_folder_swapped_for_a_symlink_is_not_followed() {
    let scene = Scene::new();
    let root = scene.root();
    let tools = scene.tools().await;
    call(
        &tools,
        "write_file",
        json!({"path": "sub/a.txt", "content": "first\n"}),
    )
    .await
    .unwrap();
    // Between two calls a command swaps the folder for a symlink pointing out.
    std::fs::rename(root.join("sub"), root.join("sub.real")).unwrap();
    symlink(scene.outside.path(), root.join("sub")).unwrap();
    let error = call(
        &tools,
        "write_file",
        json!({"path": "sub/a.txt", "content": "second\n"}),
    )
    .await
    .expect_err("a folder swapped for a symlink must be refused");
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");
    scene.assert_untouched();

    // During a call: a background process keeps swapping the folder and the symlink while the
    // tools write; no write may land outside.
    std::fs::remove_file(root.join("sub")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, root, outside) = (
            stop.clone(),
            root.to_path_buf(),
            scene.outside.path().to_path_buf(),
        );
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(root.join("sub.real"), root.join("sub"));
                let _ = std::fs::rename(root.join("sub"), root.join("sub.real"));
                let _ = symlink(&outside, root.join("sub"));
                let _ = std::fs::remove_file(root.join("sub"));
            }
        })
    };
    for i in 0..200 {
        let _ = call(
            &tools,
            "write_file",
            json!({"path": "sub/a.txt", "content": format!("{i}\n")}),
        )
        .await;
        let _ = call(&tools, "read_file", json!({"path": "sub/a.txt"})).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    scene.assert_untouched();
}

/// The attacker's own path: a hostile scripted model plants the links with an allowed command
/// (inside the sandbox), then asks the file tools (outside it) to use them, in a whole run of the
/// binary.
#[test]
fn a_hostile_model_cannot_use_links_its_command_planted() {
    use crate::github::e2e_support::scenario;
    use crate::support::llm_server::LlmServer;

    let origin = TestRepo::bare();
    let checkout = TestRepo::clone_from(&origin);
    let _ = checkout.try_git(&["checkout", "-q", "-b", "main"]);
    checkout.write("README.md", "# widgets\n");
    checkout.write(".replan.yml", "tools:\n  allowed_commands: [\"sh -c *\"]\n");
    checkout.commit_all("init");
    checkout.run_git(&["push", "-q", "origin", "main"]);
    let git_config = std::fs::read_to_string(checkout.path().join(".git/config")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let steps = format!(
        r#"
mode: matched
steps:
  - when: {{ contains: "Execute subtask `task_1`" }}
    tool_calls:
      - {{ name: run_command, arguments: {{ argv: ["sh", "-c", "ln -s .git/config .a.txt.replan-tmp && ln -s {marker} .b.txt.replan-tmp && ln .git/config hl.txt && echo planted"] }} }}
      - {{ name: write_file, arguments: {{ path: a.txt, content: "payload a\n" }} }}
      - {{ name: write_file, arguments: {{ path: b.txt, content: "payload b\n" }} }}
      - {{ name: read_file, arguments: {{ path: hl.txt }} }}
      - {{ name: write_file, arguments: {{ path: hello.md, content: "hello\n" }} }}
  - when: {{ contains: "Execute subtask `task_2`" }}
    tool_calls: [ {{ name: open_pull_request, arguments: {{ title: "Add hello", body: "hello" }} }} ]
"#,
        marker = marker.display()
    );
    let llm = LlmServer::start(scenario(&steps));
    let (mut command, _home, _tmp) = super::hostile_local_run(&llm, checkout.path());
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");

    let root = checkout.path();
    let bodies: String = llm.requests().iter().map(|r| r.body.to_string()).collect();
    // The command did plant the links, so the checks below can fail.
    assert!(bodies.contains("planted"), "the planting command ran");
    // Nothing was written through them and nothing of .git/config reached the model.
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        git_config
    );
    assert!(!marker.exists(), "write_file wrote outside the workspace");
    assert_eq!(text(&root.join("a.txt")), "payload a\n");
    assert_eq!(text(&root.join("b.txt")), "payload b\n");
    assert!(
        !bodies.contains("repositoryformatversion"),
        "read_file returned .git/config"
    );
    assert!(bodies.contains("hard link"), "read_file hl.txt was refused");
    // The links are still there, untouched, for the commit to carry as links.
    assert!(
        std::fs::symlink_metadata(root.join(".a.txt.replan-tmp")).is_ok_and(|m| m.is_symlink())
    );
    assert!(root.join("hl.txt").exists());
}
