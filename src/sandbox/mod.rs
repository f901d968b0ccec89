//! The sandbox model-written commands and MCP servers run in (Linux).
//!
//! * **Environment**: scrubbed to a short safe list (`tools::env`), never a credential.
//! * **`no_new_privs`** in the child, so set-uid programs (`sudo`) gain nothing.
//! * **Replan non-dumpable** from start-up ([`make_process_non_dumpable`]): a child running as
//!   the same non-root user cannot read `/proc/<replan>/environ` or `/mem`. A root child can
//!   (it has `CAP_SYS_PTRACE`); run Replan as a non-root user for this to hold.
//! * **Landlock** where the kernel offers it ([`landlock`]): writes only in the workspace and
//!   `$TMPDIR`, reads of the workspace, system directories and toolchains, no TCP unless
//!   `tools.network: true`. The ABI obtained is logged once (`landlock: ABI <n>`); without
//!   Landlock a warning says what is not enforced.
//! * **One reaper per command** ([`reaper`]): every command and MCP server runs under a child
//!   subreaper that kills everything the command started — after `setsid`, a double fork — before
//!   Replan looks at the workspace again; with Landlock ABI 6 the command cannot signal it.
//! * **Protected paths** ([`protected`]): Landlock cannot make a part of the writable workspace
//!   read-only, so the configuration, Replan's local state and `.git`'s control files are
//!   snapshotted before each command and restored after it, and the command is reported failed.

pub mod environ;
pub mod landlock;
pub(crate) mod policy;
pub(crate) mod protected;
pub mod reaper;

pub use policy::SandboxPolicy;
pub use reaper::{Reaped, spawn};

/// `PR_SET_DUMPABLE 0` for Replan itself: its memory and environment stay out of the children's
/// reach (for children that are not root).
pub fn make_process_non_dumpable() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Says once, on stderr, what the sandbox will enforce on this machine.
pub fn announce(policy: &SandboxPolicy) {
    let abi = landlock::kernel_abi();
    landlock::report(abi, policy);
    reaper::announce(abi);
}
