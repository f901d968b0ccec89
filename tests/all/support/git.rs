//! Real git repositories in temporary directories, isolated from the user's git config.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// Environment that keeps git away from the user's and the system's configuration.
/// Also apply it to a binary under test that runs git: `cmd.envs(isolated_git_env())`.
pub fn isolated_git_env() -> [(&'static str, &'static str); 4] {
    [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_ADVICE", "0"),
    ]
}

/// A `git` command in `dir` with the isolated environment.
pub fn git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.current_dir(dir).envs(isolated_git_env());
    // Variables a surrounding git (hooks, worktrees) may have set would redirect us.
    for variable in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
    ] {
        command.env_remove(variable);
    }
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    git_command(dir)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("could not run git {args:?}: {error}"))
}

pub struct TestRepo {
    dir: TempDir,
    bare: bool,
}

impl TestRepo {
    /// `git init -b main` with a local identity and one commit (`README.md`).
    pub fn new() -> Self {
        let repo = TestRepo::empty();
        repo.write("README.md", "# test repository\n");
        repo.commit_all("Initial commit");
        repo
    }

    /// `git init -b main` with a local identity and no commit.
    pub fn empty() -> Self {
        let repo = TestRepo {
            dir: TempDir::new().expect("create a temp dir for a git repository"),
            bare: false,
        };
        repo.run_git(&["init", "-q", "-b", "main"]);
        repo.configure_identity();
        repo
    }

    /// A bare repository on `main`, to use as a remote.
    pub fn bare() -> Self {
        let repo = TestRepo {
            dir: TempDir::new().expect("create a temp dir for a bare repository"),
            bare: true,
        };
        repo.run_git(&["init", "-q", "--bare", "-b", "main"]);
        repo
    }

    /// A working clone of `remote` (usually a [`TestRepo::bare`]) with `origin` set.
    pub fn clone_from(remote: &TestRepo) -> Self {
        let dir = TempDir::new().expect("create a temp dir for a clone");
        let output = git_command(dir.path())
            .args(["clone", "-q"])
            .arg(remote.path())
            .arg(".")
            .output()
            .expect("run git clone");
        assert!(
            output.status.success(),
            "git clone failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let repo = TestRepo { dir, bare: false };
        repo.configure_identity();
        repo
    }

    fn configure_identity(&self) {
        self.run_git(&["config", "user.name", "Replan Test"]);
        self.run_git(&["config", "user.email", "replan-test@example.com"]);
        self.run_git(&["config", "commit.gpgsign", "false"]);
        self.run_git(&["config", "tag.gpgsign", "false"]);
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The path as a string, e.g. for `git remote add`.
    pub fn url(&self) -> String {
        self.path().display().to_string()
    }

    pub fn is_bare(&self) -> bool {
        self.bare
    }

    /// Writes a file (creating parent directories) in the working tree.
    pub fn write(&self, path: &str, content: &str) -> PathBuf {
        let full = self.path().join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("create parent directories");
        }
        std::fs::write(&full, content).expect("write a file in the test repository");
        full
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path))
            .unwrap_or_else(|error| panic!("read {path} in the test repository: {error}"))
    }

    /// `git add -A && git commit -m msg`; returns the new HEAD.
    pub fn commit_all(&self, message: &str) -> String {
        self.run_git(&["add", "-A"]);
        self.run_git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    /// Runs git, panics with its stderr on failure, returns trimmed stdout.
    pub fn run_git(&self, args: &[&str]) -> String {
        match self.try_git(args) {
            Ok(stdout) => stdout,
            Err(stderr) => panic!("git {args:?} failed in {}: {stderr}", self.url()),
        }
    }

    /// Runs git; `Err(stderr)` when it fails.
    pub fn try_git(&self, args: &[&str]) -> Result<String, String> {
        let output = run(self.path(), args);
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout)
                .trim_end()
                .to_string())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    pub fn head(&self) -> String {
        self.run_git(&["rev-parse", "HEAD"])
    }

    pub fn rev_parse(&self, rev: &str) -> Option<String> {
        self.try_git(&["rev-parse", "--verify", "--quiet", rev])
            .ok()
    }

    /// Local branch names, sorted.
    pub fn branches(&self) -> Vec<String> {
        let listing = self.run_git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
        let mut branches: Vec<String> = listing.lines().map(str::to_string).collect();
        branches.sort();
        branches
    }

    /// `git show <rev:path>`; panics if it does not exist.
    pub fn show(&self, spec: &str) -> String {
        self.try_show(spec)
            .unwrap_or_else(|| panic!("{spec} does not exist in {}", self.url()))
    }

    /// `git show <rev:path>`, `None` if it does not exist. Not trimmed.
    pub fn try_show(&self, spec: &str) -> Option<String> {
        let output = run(self.path(), &["show", spec]);
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Commit subjects of `rev`, newest first.
    pub fn log(&self, rev: &str) -> Vec<String> {
        self.run_git(&["log", "--format=%s", rev])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `git hash-object --stdin` of some bytes (without writing the object).
    pub fn hash_object(&self, content: &[u8]) -> String {
        use std::io::Write as _;
        use std::process::Stdio;
        let mut child = git_command(self.path())
            .args(["hash-object", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run git hash-object");
        child
            .stdin
            .take()
            .expect("hash-object stdin")
            .write_all(content)
            .expect("feed git hash-object");
        let output = child.wait_with_output().expect("wait for git hash-object");
        assert!(output.status.success(), "git hash-object failed");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}
