//! The one place a `git` process of Replan's is made.
//!
//! Replan's git must never read anything the model can write as configuration: not the
//! checkout's `.git` (hooks, `commondir`, `config`, fsmonitor, a worktree's `gitdir:` file), not
//! a global or system config, not a `.gitattributes` driver. So every process gets a fixed
//! environment and command-line settings that beat any file, and a checkout Replan adopted
//! ([`super::private`]) is reached through its private git directory, never through the
//! checkout's `.git`: `--git-dir <private> --work-tree <checkout>`.

use super::error::GitError;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

/// Settings that override whatever a config file says (command line beats every file): no
/// hooks, no fsmonitor, no attributes file, no credential helper, no pager or editor, no
/// submodule recursion, no automatic gc, and only the transports a push or fetch needs.
const FIXED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.pager=cat",
    "core.editor=true",
    "core.askPass=",
    "core.sshCommand=ssh",
    "credential.helper=",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "protocol.http.allow=always",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "safe.directory=*",
    "advice.detachedHead=false",
];

/// Variables a git process of Replan's keeps from Replan's environment; everything else
/// (`GIT_DIR`, `GIT_CONFIG_*`, `GIT_SSH_COMMAND`, `GIT_EXTERNAL_DIFF`, tokens) is dropped.
const KEPT: &[&str] = &[
    "PATH",
    "HOME",
    "SSH_AUTH_SOCK",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
];

/// How a directory's git is reached.
#[derive(Clone, Debug)]
enum Route {
    /// An adopted work tree: its private git directory, and the credentials Replan took out of
    /// the checkout's config (sent as `GIT_CONFIG_*` variables, never on the command line,
    /// which every process may read).
    Private {
        git_dir: PathBuf,
        credentials: Vec<(String, String)>,
    },
    /// A workspace that had no repository when the run started: a `.git` the model makes
    /// later is never used.
    NoRepository,
}

/// Work trees (canonical paths) and how each one's git is reached; the deepest match wins (a
/// subtask's worktree lives under the private directory, never under a work tree).
fn routes() -> &'static Mutex<Vec<(PathBuf, Route)>> {
    static ROUTES: OnceLock<Mutex<Vec<(PathBuf, Route)>>> = OnceLock::new();
    ROUTES.get_or_init(Mutex::default)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// From now on, git in `work_tree` (or below it) uses `git_dir` with `credentials`.
pub fn register(work_tree: &Path, git_dir: &Path, credentials: Vec<(String, String)>) {
    set_route(
        work_tree,
        Route::Private {
            git_dir: git_dir.to_path_buf(),
            credentials,
        },
    );
}

/// From now on, git in `work_tree` (or below it) refuses to run.
pub fn register_no_repository(work_tree: &Path) {
    set_route(work_tree, Route::NoRepository);
}

fn set_route(work_tree: &Path, route: Route) {
    let key = canonical(work_tree);
    let mut routes = routes().lock().unwrap_or_else(|e| e.into_inner());
    routes.retain(|(dir, _)| *dir != key);
    routes.push((key, route));
}

/// Forget `work_tree` (its private directory is gone).
pub fn unregister(work_tree: &Path) {
    let key = canonical(work_tree);
    routes()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(dir, _)| *dir != key);
}

/// The work tree `dir` belongs to, and how its git is reached.
fn route_of(dir: &Path) -> Option<(PathBuf, Route)> {
    let dir = canonical(dir);
    let routes = routes().lock().unwrap_or_else(|e| e.into_inner());
    routes
        .iter()
        .filter(|(tree, _)| dir.starts_with(tree))
        .max_by_key(|(tree, _)| tree.components().count())
        .cloned()
}

/// The private git directory of the work tree `dir` belongs to, when it was adopted.
pub fn private_git_dir(dir: &Path) -> Option<PathBuf> {
    match route_of(dir)? {
        (_, Route::Private { git_dir, .. }) => Some(git_dir),
        (_, Route::NoRepository) => None,
    }
}

/// A `git` process for `dir` with the fixed environment, and `config` passed as `GIT_CONFIG_*`
/// variables (after the credentials of an adopted work tree). Every git process of Replan's is
/// made here. An unadopted directory (a bare repository, the publish job's checkout, a
/// history branch's repository, a test's) is reached with `-C`, under the same settings.
pub fn command(dir: &Path, config: &[(&str, &str)]) -> Result<Command, GitError> {
    let mut command = Command::new("git");
    command.env_clear();
    for name in KEPT {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_ADVICE", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    for setting in FIXED {
        command.arg("-c").arg(setting);
    }
    let mut variables: Vec<(String, String)> = Vec::new();
    match route_of(dir) {
        Some((
            work_tree,
            Route::Private {
                git_dir,
                credentials,
            },
        )) => {
            command
                .arg("--git-dir")
                .arg(git_dir)
                .arg("--work-tree")
                .arg(work_tree)
                .current_dir(dir);
            variables.extend(credentials);
        }
        Some((work_tree, Route::NoRepository)) => {
            return Err(GitError::new(format!(
                "`{}` was not a git repository when the run started; Replan does not use a \
                 repository made during the run",
                work_tree.display()
            )));
        }
        None => {
            command.arg("-C").arg(dir);
        }
    }
    variables.extend(
        config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    if !variables.is_empty() {
        command.env("GIT_CONFIG_COUNT", variables.len().to_string());
        for (n, (key, value)) in variables.iter().enumerate() {
            command.env(format!("GIT_CONFIG_KEY_{n}"), key);
            command.env(format!("GIT_CONFIG_VALUE_{n}"), value);
        }
    }
    Ok(command)
}

/// Run git in `dir` with extra `env` (an index file, an identity) and `config`, optionally
/// feeding `input` on standard input; the output as it is.
pub fn output_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    config: &[(&str, &str)],
    input: Option<&[u8]>,
) -> Result<Output, GitError> {
    let mut command = command(dir, config)?;
    command.args(args).envs(env.iter().copied());
    let Some(input) = input else {
        return command
            .output()
            .map_err(|e| GitError::new(format!("cannot run git: {e}")));
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| GitError::new(format!("cannot run git: {e}")))?;
    let mut stdin = child.stdin.take();
    // Written from a thread of its own: a large input would fill the pipe while git's output
    // fills the other one.
    let writer = std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            use std::io::Write as _;
            stdin.as_mut().map(|s| s.write_all(input))
        });
        let output = child.wait_with_output();
        (writer.join(), output)
    });
    let (written, output) = writer;
    let output = output.map_err(|e| GitError::new(format!("cannot run git: {e}")))?;
    if !output.status.success() {
        return Ok(output);
    }
    match written {
        Ok(Some(Ok(()))) | Ok(None) => Ok(output),
        _ => Err(GitError::new(format!(
            "`git {}`: could not write its input",
            args.join(" ")
        ))),
    }
}

/// Run git in `dir`; trimmed standard output on success, an error with its stderr otherwise.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
    checked(args, output_with(dir, args, env, &[], None)?)
}

/// [`run`] with `config` settings and `input` on standard input.
pub fn run_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    config: &[(&str, &str)],
    input: Option<&[u8]>,
) -> Result<String, GitError> {
    checked(args, output_with(dir, args, env, config, input)?)
}

fn checked(args: &[&str], output: Output) -> Result<String, GitError> {
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(GitError::new(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
