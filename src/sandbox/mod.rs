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
//! * **Protected paths** ([`protected`]): Landlock cannot make a part of the writable workspace
//!   read-only, so the configuration, Replan's local state and `.git`'s control files are
//!   snapshotted before each command and restored after it, and the command is reported failed.

pub mod environ;
pub mod landlock;
pub(crate) mod policy;
pub(crate) mod protected;

pub use policy::SandboxPolicy;

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
    landlock::report(landlock::kernel_abi(), policy);
}

/// Puts `command` in the sandbox: `no_new_privs` and Landlock in the child before `exec`.
pub fn confine(command: &mut tokio::process::Command, policy: &SandboxPolicy) {
    landlock::confine(command, policy);
}
