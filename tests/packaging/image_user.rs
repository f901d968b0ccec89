//! dist/Dockerfile, read as text (docker does not run here): every stage that runs Replan runs
//! it as the unprivileged user 10001 with a writable HOME and temporary directories.

use super::tools::repo_root;

/// One `FROM` stage: its name, base and instructions (continuation lines joined).
struct Stage {
    name: String,
    instructions: Vec<(String, String)>,
}

fn stages() -> Vec<Stage> {
    let text =
        std::fs::read_to_string(repo_root().join("dist/Dockerfile")).expect("read dist/Dockerfile");
    let joined = text.replace("\\\n", " ");
    let mut stages: Vec<Stage> = Vec::new();
    for line in joined.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (instruction, rest) = line.split_once(' ').unwrap_or((line, ""));
        if instruction == "FROM" {
            let name = rest.split(" AS ").nth(1).unwrap_or_default().trim();
            stages.push(Stage {
                name: name.to_owned(),
                instructions: Vec::new(),
            });
        } else if let Some(stage) = stages.last_mut() {
            stage
                .instructions
                .push((instruction.to_owned(), rest.trim().to_owned()));
        }
    }
    stages
}

impl Stage {
    fn runs_replan(&self) -> bool {
        self.instructions
            .iter()
            .any(|(i, rest)| i == "ENTRYPOINT" && rest.contains("replan"))
    }

    fn last(&self, instruction: &str) -> Option<&str> {
        self.instructions
            .iter()
            .rev()
            .find(|(i, _)| i == instruction)
            .map(|(_, rest)| rest.as_str())
    }

    fn env(&self, name: &str) -> Option<String> {
        self.instructions
            .iter()
            .filter(|(i, _)| i == "ENV")
            .flat_map(|(_, rest)| rest.split_whitespace())
            .filter_map(|pair| pair.split_once('='))
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.to_owned())
            .next_back()
    }
}

#[test]
fn every_image_stage_that_runs_replan_runs_it_as_an_unprivileged_user() {
    let stages = stages();
    let running: Vec<&Stage> = stages.iter().filter(|s| s.runs_replan()).collect();
    assert!(running.len() >= 2, "the scratch and the shell stage");
    for stage in running {
        let name = if stage.name.is_empty() {
            "final"
        } else {
            &stage.name
        };
        assert_eq!(stage.last("USER"), Some("10001:10001"), "stage {name}");
        let home = stage
            .env("HOME")
            .unwrap_or_else(|| panic!("stage {name}: ENV HOME"));
        assert_eq!(home, "/home/replan", "stage {name}");
        assert_eq!(stage.env("TMPDIR").as_deref(), Some("/tmp"), "stage {name}");
        let text: Vec<String> = stage
            .instructions
            .iter()
            .map(|(i, r)| format!("{i} {r}"))
            .collect();
        let text = text.join("\n");
        // HOME owned by the user; /tmp and /var/tmp writable by it (sticky, world-writable).
        assert!(
            text.contains("--chown=10001:10001") && text.contains("/home/replan"),
            "stage {name}: HOME belongs to 10001\n{text}"
        );
        for dir in ["/tmp", "/var/tmp"] {
            assert!(
                text.lines()
                    .any(|l| l.starts_with("COPY") && l.contains(dir)),
                "stage {name}: {dir} comes from the dirs stage\n{text}"
            );
        }
    }
    let dirs = stages
        .iter()
        .find(|s| s.name == "dirs")
        .expect("a `dirs` stage makes the directories");
    let made = dirs.last("RUN").unwrap_or_default();
    for needed in [
        "chown 10001:10001 /rootfs/home/replan",
        "chmod 0700 /rootfs/home/replan",
        "chmod 1777 /rootfs/tmp /rootfs/var/tmp",
    ] {
        assert!(made.contains(needed), "{needed}: {made}");
    }
}
