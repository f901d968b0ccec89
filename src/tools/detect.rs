//! The commands `run_command` allows when the configuration names none: the repository's own
//! build and test commands, found from its manifests.

use std::collections::BTreeSet;
use std::path::Path;

/// Allowed command prefixes (`cargo test`, `npm test`, ...) for the repository at `root`.
pub fn detect_allowed_commands(root: &Path) -> Vec<String> {
    let mut found = BTreeSet::new();
    let exists = |name: &str| root.join(name).exists();
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_default();

    if exists("Cargo.toml") {
        for command in [
            "cargo build",
            "cargo check",
            "cargo clippy",
            "cargo fmt",
            "cargo test",
        ] {
            found.insert(command.to_owned());
        }
    }
    if exists("package.json") {
        let runner = if exists("pnpm-lock.yaml") {
            "pnpm"
        } else if exists("yarn.lock") {
            "yarn"
        } else {
            "npm"
        };
        let manifest: serde_json::Value =
            serde_json::from_str(&read("package.json")).unwrap_or_default();
        if let Some(scripts) = manifest.get("scripts").and_then(|s| s.as_object()) {
            for script in scripts.keys() {
                match script.as_str() {
                    "test" => {
                        found.insert(format!("{runner} test"));
                    }
                    "build" | "lint" | "typecheck" | "check" => {
                        found.insert(format!("{runner} run {script}"));
                    }
                    _ => {}
                }
            }
        }
    }
    let pytest = exists("pytest.ini")
        || exists("conftest.py")
        || read("pyproject.toml").contains("[tool.pytest")
        || read("setup.cfg").contains("[tool:pytest]")
        || read("tox.ini").contains("[pytest]");
    if pytest {
        found.insert("pytest".to_owned());
        found.insert("python -m pytest".to_owned());
    }
    if exists("go.mod") {
        for command in ["go build", "go test", "go vet"] {
            found.insert(command.to_owned());
        }
    }
    for makefile in ["Makefile", "makefile", "GNUmakefile"] {
        let text = read(makefile);
        for target in ["test", "check", "build", "lint"] {
            if text.lines().any(|l| make_target_is(l, target)) {
                found.insert(format!("make {target}"));
            }
        }
    }
    found.into_iter().collect()
}

fn make_target_is(line: &str, target: &str) -> bool {
    line.strip_prefix(target)
        .is_some_and(|rest| rest.starts_with(':') && !rest.starts_with(":="))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn each_ecosystem_contributes_its_test_command() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "Cargo.toml", "[package]\nname='x'\n");
        write(
            dir.path(),
            "package.json",
            r#"{"scripts":{"test":"jest","build":"tsc","x":"y"}}"#,
        );
        write(dir.path(), "pyproject.toml", "[tool.pytest.ini_options]\n");
        write(dir.path(), "go.mod", "module x\n");
        write(
            dir.path(),
            "Makefile",
            "VAR := 1\ntest: build\n\tgo test ./...\nbuild:\n",
        );
        let commands = detect_allowed_commands(dir.path());
        for expected in [
            "cargo test",
            "npm test",
            "npm run build",
            "pytest",
            "go test",
            "make test",
            "make build",
        ] {
            assert!(
                commands.contains(&expected.to_owned()),
                "{expected} missing: {commands:?}"
            );
        }
        assert!(!commands.iter().any(|c| c.contains(" x")), "{commands:?}");
    }

    #[test]
    fn an_empty_repository_allows_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(detect_allowed_commands(dir.path()).is_empty());
    }

    #[test]
    fn a_package_json_without_test_script_allows_no_npm_test() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "package.json", r#"{"name":"x"}"#);
        write(dir.path(), "yarn.lock", "");
        assert!(detect_allowed_commands(dir.path()).is_empty());
    }
}
