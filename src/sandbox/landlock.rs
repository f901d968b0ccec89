//! Landlock rules for a child process, prepared in the parent and applied between `fork` and
//! `exec` with two system calls (nothing that allocates runs in the child).

use super::policy::SandboxPolicy;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Once};

/// The kernel's Landlock ABI version, 0 when it has none (or it is disabled). `REPLAN_LANDLOCK=off`
/// turns it off (for a kernel whose Landlock misbehaves, and for the tests that show which rules
/// hold without it); the run then warns as on a kernel without Landlock.
pub fn kernel_abi() -> i32 {
    if std::env::var_os("REPLAN_LANDLOCK").is_some_and(|v| v == "off") {
        return 0;
    }
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns a number.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        version.max(0) as i32
    }
    #[cfg(not(target_os = "linux"))]
    0
}

static REPORTED: Once = Once::new();

/// Logs once per process what the sandbox enforces (when the tools are set up, and at the
/// latest when the first child is confined).
pub fn report(abi: i32, policy: &SandboxPolicy) {
    REPORTED.call_once(|| {
        if abi > 0 {
            tracing::info!(
                "landlock: ABI {abi}; commands and MCP servers may write only in {} and {}, read \
                 the workspace and system directories, {}",
                policy.workspace.display(),
                std::env::temp_dir().display(),
                if policy.network {
                    "and use the network (`tools.network: true`)"
                } else if abi >= 4 {
                    "and open no TCP connection (`tools.network: false`)"
                } else {
                    "but this ABI cannot block the network (needs ABI 4)"
                }
            );
        } else {
            tracing::warn!(
                "landlock is not available on this kernel: commands and MCP servers can read and \
                 write every file this user can and reach the network; only the scrubbed \
                 environment, no_new_privs and the protected-path restore apply"
            );
        }
    });
}

/// Directories a command may read (and execute from) besides the workspace.
fn readable_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
        "/sys", "/dev", "/run", "/nix", "/snap",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for (variable, default) in [
        ("CARGO_HOME", ".cargo"),
        ("RUSTUP_HOME", ".rustup"),
        ("GOROOT", ""),
        ("GOPATH", "go"),
        ("GOMODCACHE", ""),
        ("JAVA_HOME", ""),
        ("VIRTUAL_ENV", ""),
    ] {
        match std::env::var_os(variable) {
            Some(value) if !value.is_empty() => paths.push(PathBuf::from(value)),
            _ if !default.is_empty() => {
                if let Some(home) = &home {
                    paths.push(home.join(default));
                }
            }
            _ => {}
        }
    }
    paths
}

/// Every tree a sandboxed command may read or write with `workspace` (Replan's private
/// directory must lie outside all of them).
pub fn reachable_paths(workspace: &std::path::Path) -> Vec<PathBuf> {
    readable_paths()
        .into_iter()
        .chain([workspace.to_path_buf(), std::env::temp_dir()])
        .filter(|p| p.is_absolute())
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect()
}

/// The first ABI that scopes signals (`LANDLOCK_SCOPE_SIGNAL`).
pub const SIGNAL_SCOPE_ABI: i32 = 6;

/// Character devices every program expects to write.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The ruleset for `policy`, or `None` without Landlock.
fn ruleset(
    abi: i32,
    policy: &SandboxPolicy,
    program: &std::path::Path,
) -> Result<Option<OwnedFd>, String> {
    use ::landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };
    if abi <= 0 {
        return Ok(None);
    }
    let version = ABI::from(abi);
    let existing = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths.into_iter().filter(|p| p.exists()).collect()
    };
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(version))
        .map_err(|e| e.to_string())?;
    if !policy.network && abi >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| e.to_string())?;
    }
    if abi >= SIGNAL_SCOPE_ABI {
        // The command cannot signal any process outside its own domain: not its reaper (which
        // would free its descendants), not Replan, not a sibling command.
        ruleset = ruleset.scope(Scope::Signal).map_err(|e| e.to_string())?;
    }
    let mut writable = vec![policy.workspace.clone(), policy.temp_dir()];
    writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
    let created = ruleset
        .create()
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(
            // A program named by its path (an MCP server's `command`) may run from anywhere.
            existing(
                readable_paths()
                    .into_iter()
                    .chain(program.is_absolute().then(|| program.to_path_buf()))
                    .collect(),
            ),
            AccessFs::from_read(version),
        ))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(
            existing(writable),
            AccessFs::from_all(version),
        ))
        .map_err(|e| e.to_string())?;
    Ok(created.into())
}

/// The ruleset a child of `command` will restrict itself to, or `None` without Landlock (or
/// when it cannot be built, which is logged).
pub(crate) fn prepare(
    command: &tokio::process::Command,
    policy: &SandboxPolicy,
) -> Option<Arc<OwnedFd>> {
    let abi = kernel_abi();
    report(abi, policy);
    let program = std::path::PathBuf::from(command.as_std().get_program());
    match ruleset(abi, policy, &program) {
        Ok(ruleset) => ruleset.map(Arc::new),
        Err(e) => {
            tracing::warn!(
                "landlock: could not build the ruleset ({e}); the command runs without it"
            );
            None
        }
    }
}

/// `no_new_privs`, then the ruleset: run in the child between `fork` and `exec`, so it makes
/// only these two system calls (async-signal-safe, nothing allocated).
pub(crate) fn restrict_self(ruleset: Option<&OwnedFd>) -> std::io::Result<()> {
    // SAFETY: both calls take plain integers (and a descriptor the caller keeps open).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(fd) = ruleset
            && libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
