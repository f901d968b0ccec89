//! The release binary is static and starts with nothing around it: no environment, no files but
//! itself and the CA roots, as in the `FROM scratch` image (dist/Dockerfile).

use std::path::Path;
use std::process::{Command, Output};

use super::elf;
use super::tools::{musl_binary, repo_root};

#[test]
fn musl_release_binary_is_statically_linked() {
    let linkage = elf::linkage(&musl_binary());
    assert!(
        linkage.is_static(),
        "the musl binary must need no loader and no shared library: {linkage:?}"
    );
}

/// The checker itself can fail: the ordinary (glibc) test build is dynamically linked.
#[test]
fn elf_check_sees_the_dynamic_glibc_build() {
    let linkage = elf::linkage(Path::new(env!("CARGO_BIN_EXE_replan")));
    assert!(!linkage.is_static(), "{linkage:?}");
    assert!(linkage.needed_libraries > 0, "{linkage:?}");
}

/// The final stage of dist/Dockerfile: its base, its `COPY src dest` lines from the build
/// context, the directories it copies from an earlier stage, and its entrypoint.
struct ImageRecipe {
    base: String,
    copies: Vec<(String, String)>,
    dirs: Vec<String>,
    entrypoint: Vec<String>,
}

fn image_recipe() -> ImageRecipe {
    let text =
        std::fs::read_to_string(repo_root().join("dist/Dockerfile")).expect("read dist/Dockerfile");
    let mut recipe = ImageRecipe {
        base: String::new(),
        copies: Vec::new(),
        dirs: Vec::new(),
        entrypoint: Vec::new(),
    };
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
        let (instruction, rest) = line.split_once(' ').unwrap_or((line, ""));
        match instruction {
            "FROM" => {
                recipe = ImageRecipe {
                    base: rest.trim().to_owned(),
                    copies: Vec::new(),
                    dirs: Vec::new(),
                    entrypoint: Vec::new(),
                }
            }
            "COPY" if rest.starts_with("--from=") => {
                let dest = rest
                    .split_whitespace()
                    .last()
                    .expect("COPY --from=... <src> <dest>");
                recipe.dirs.push(dest.to_owned());
            }
            "COPY" => {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                assert_eq!(parts.len(), 2, "COPY <src> <dest>: {line}");
                recipe
                    .copies
                    .push((parts[0].to_owned(), parts[1].to_owned()));
            }
            "ENTRYPOINT" => {
                recipe.entrypoint =
                    serde_json::from_str(rest).expect("ENTRYPOINT in exec (JSON) form");
            }
            _ => {}
        }
    }
    recipe
}

/// The image's root, built by following the recipe's COPY lines with the build context of the
/// documented build commands: the musl binary and the system's CA bundle.
fn image_root(binary: &Path, recipe: &ImageRecipe) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("temp dir for the image root");
    for dir in &recipe.dirs {
        std::fs::create_dir_all(root.path().join(dir.trim_start_matches('/')))
            .expect("create a directory of the image");
    }
    for (src, dest) in &recipe.copies {
        let target = root.path().join(dest.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().expect("dest has a parent")).expect("create dirs");
        match src.as_str() {
            "replan" => {
                std::fs::copy(binary, &target).expect("copy the binary");
            }
            "ca-certificates.crt" => {
                let system = Path::new("/etc/ssl/certs/ca-certificates.crt");
                if system.is_file() {
                    std::fs::copy(system, &target).expect("copy the CA bundle");
                } else {
                    std::fs::write(&target, "").expect("write an empty CA bundle");
                }
            }
            other => panic!("the test does not know the build-context file {other}"),
        }
    }
    root
}

#[test]
fn image_recipe_is_scratch_with_the_binary_and_ca_roots() {
    let recipe = image_recipe();
    assert_eq!(recipe.base, "scratch");
    assert_eq!(
        recipe.copies,
        vec![
            ("replan".to_owned(), "/replan".to_owned()),
            (
                "ca-certificates.crt".to_owned(),
                "/etc/ssl/certs/ca-certificates.crt".to_owned()
            ),
        ]
    );
    assert_eq!(recipe.dirs, ["/home/replan", "/tmp", "/var/tmp"]);
    assert_eq!(recipe.entrypoint, ["/replan"]);
}

fn describe(output: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn on_path(tool: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
        .map(|p| p.display().to_string())
}

#[test]
fn musl_binary_runs_with_an_empty_environment_in_the_image_root() {
    let recipe = image_recipe();
    let root = image_root(&musl_binary(), &recipe);
    let dir = root.path().to_str().expect("temp path is UTF-8").to_owned();
    let expected = format!("replan {}", env!("CARGO_PKG_VERSION"));

    // Unprivileged: a user namespace makes us root enough to chroot. As root: plain chroot too.
    // Absolute paths, because the sandbox runs with an empty environment (no PATH).
    let unshare = on_path("unshare");
    let chroot = on_path("chroot");
    let mut attempts: Vec<(&str, Vec<String>)> = Vec::new();
    if let (Some(unshare), Some(chroot)) = (&unshare, &chroot) {
        attempts.push((
            "unshare -r chroot",
            vec![unshare.clone(), "-r".into(), chroot.clone(), dir.clone()],
        ));
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if let (true, Some(chroot)) = (is_root, &chroot) {
        attempts.push(("chroot", vec![chroot.clone(), dir.clone()]));
    }

    let mut ran = Vec::new();
    let mut refused = Vec::new();
    for (name, prefix) in attempts {
        let sandbox = Command::new(&prefix[0])
            .args(&prefix[1..])
            .args(&recipe.entrypoint)
            .arg("--version")
            .env_clear()
            .current_dir(repo_root())
            .output();
        let output = match sandbox {
            Ok(output) => output,
            Err(e) => {
                refused.push(format!("{name}: {e}"));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The sandbox itself refused (no user namespaces here): not the binary's failure.
        if !output.status.success()
            && (stderr.contains("unshare failed") || stderr.contains("cannot change root"))
        {
            refused.push(format!("{name}: {}", describe(&output)));
            continue;
        }
        assert!(output.status.success(), "{name}: {}", describe(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(stdout.trim(), expected, "{name}: {}", describe(&output));
        // More than --version: the async runtime and the configuration load, still in the empty root.
        let explain = Command::new(&prefix[0])
            .args(&prefix[1..])
            .args(&recipe.entrypoint)
            .args(["config", "--explain"])
            .env_clear()
            .output()
            .expect("run config --explain in the sandbox");
        assert!(
            explain.status.success(),
            "{name} config --explain: {}",
            describe(&explain)
        );
        ran.push(name);
    }
    if is_root {
        assert!(
            ran.contains(&"chroot"),
            "as root, chroot must work: {refused:?}"
        );
    }
    assert!(
        !ran.is_empty(),
        "no way to run the binary in an empty root here (need user namespaces or root): {refused:?}"
    );
}
