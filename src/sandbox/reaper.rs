//! No process outlives its command: every command and MCP server runs under a reaper of its own,
//! a child subreaper that kills whatever the command left behind before it exits itself.
//!
//! ```text
//! Replan ── reaper (PR_SET_CHILD_SUBREAPER, outside the sandbox) ── command (sandboxed) ── …
//! ```
//!
//! Every process the command starts stays below the reaper whatever it does: an orphan — after a
//! double fork, or a `setsid`, or a change of process group — is re-parented to the nearest
//! subreaper, the reaper, not to init. When the command itself exits, or Replan asks the reaper to
//! stop (`SIGTERM`: a time-out, an MCP server stopped or dropped), or Replan dies (the reaper's
//! parent-death signal), the reaper SIGKILLs all its children, reaps them, kills the orphans that
//! re-parent to it meanwhile, and only when it has no child left exits with the command's status.
//! So when Replan's `wait` returns, nothing of the command runs, and the protected-path restore
//! that follows sees the workspace as the command left it.
//!
//! Why this shape: Replan is a multi-threaded tokio process, and re-executing its own binary as
//! the reaper is not an option (in the tests the current executable is the test harness). So the
//! reaper is the process tokio spawns, split in two in `pre_exec`: it becomes a subreaper, wipes
//! its copy of the environment, forks; the fork returns from `pre_exec`, restricts itself
//! (`no_new_privs`, Landlock) and execs the command, while the reaper never returns and runs
//! [`reaper_loop`] — code between `fork` and `exec` of a multi-threaded process, so it allocates
//! nothing and takes no lock: raw system calls, stack buffers, `/proc` read with `open`, `read`
//! and `getdents64`, `_exit`.
//!
//! The command must not be able to kill its reaper (its orphans would then go to init). With
//! Landlock ABI 6 the command's domain scopes signals: it cannot signal any process outside it.
//! Without that, the command's process group is still killed after the reaper exits (what stayed
//! in the group dies) and the command itself gets SIGKILL when its reaper dies; a process that
//! kills the reaper *and* leaves the process group can outlive the command. That is logged.
//!
//! The reaper is a fork of Replan and holds a copy of its memory: it stays non-dumpable like
//! Replan, and Landlock stops a sandboxed process (even root) from reading another domain's
//! memory. Without Landlock a root command could still read `/proc/<reaper>/environ`, so the
//! reaper zeroes its environment before it forks the command (the command gets only the
//! scrubbed environment its `Command` was given).

use super::policy::SandboxPolicy;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Once};

/// A command (or MCP server) running under its reaper: waiting for it means waiting until every
/// process it started is gone.
pub struct Reaped {
    child: tokio::process::Child,
    /// The reaper's pid, also the command's process group.
    group: Option<i32>,
}

impl Reaped {
    pub fn stdin(&mut self) -> Option<tokio::process::ChildStdin> {
        self.child.stdin.take()
    }

    pub fn stdout(&mut self) -> Option<tokio::process::ChildStdout> {
        self.child.stdout.take()
    }

    pub fn stderr(&mut self) -> Option<tokio::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The command's exit status, once it and every process it started are gone. Cancel-safe.
    pub async fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        let status = self.child.wait().await?;
        // The backstop for a reaper killed by its command (Landlock without signal scoping).
        if let Some(group) = self.group.take() {
            // SAFETY: kill(2) with a negative pid signals the process group the reaper led; it
            // has no memory-safety preconditions.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        Ok(status)
    }

    /// Asks the reaper to kill the command and everything it started, then to exit. Never
    /// SIGKILL for the reaper: its descendants would escape to init.
    pub fn stop(&self) {
        // `id()` is `None` once the reaper has been reaped, so its pid cannot have been reused.
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) takes plain integers.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
    }

    /// [`stop`](Self::stop), then [`wait`](Self::wait).
    pub async fn stop_and_wait(&mut self) -> io::Result<std::process::ExitStatus> {
        self.stop();
        self.wait().await
    }
}

impl Drop for Reaped {
    /// Dropping cannot wait: the reaper kills the tree on its own, and tokio reaps the reaper.
    fn drop(&mut self) {
        self.stop();
    }
}

static ANNOUNCED: Once = Once::new();

/// Logs once how the processes of commands are contained, and what this kernel makes weaker.
pub fn announce(abi: i32) {
    ANNOUNCED.call_once(|| {
        if abi >= super::landlock::SIGNAL_SCOPE_ABI {
            tracing::info!("processes: every command and MCP server runs under a subreaper");
        } else {
            tracing::warn!(
                "processes: every command and MCP server runs under a subreaper, but this \
                 kernel's Landlock cannot stop a command from signalling it (needs ABI {}): a \
                 command that kills its reaper and leaves its process group (setsid) can outlive \
                 it",
                super::landlock::SIGNAL_SCOPE_ABI
            );
        }
    });
}

/// Starts `command` under a reaper, the command confined by `policy`. The command's
/// environment must be set explicitly (`env_clear` then `envs`): the reaper's own is wiped.
pub fn spawn(command: &mut tokio::process::Command, policy: &SandboxPolicy) -> io::Result<Reaped> {
    announce(super::landlock::kernel_abi());
    let ruleset: Option<Arc<OwnedFd>> = super::landlock::prepare(command, policy);
    let signals = Signals::new();
    let replan = std::process::id() as libc::pid_t;
    let split = move || -> io::Result<()> {
        // SAFETY: `split_off_reaper` and `restrict_self` make only async-signal-safe system
        // calls on memory prepared before the fork.
        unsafe { split_off_reaper(&signals, replan)? };
        super::landlock::restrict_self(ruleset.as_deref())
    };
    // SAFETY: see `split`.
    unsafe {
        command.pre_exec(split);
    }
    command.process_group(0).kill_on_drop(false);
    let child = command.spawn()?;
    let group = child.id().map(|pid| pid as i32);
    Ok(Reaped { child, group })
}

/// Signal sets built before the fork (building them afterwards would be safe too, but this
/// keeps the child's code to system calls).
#[derive(Clone, Copy)]
struct Signals {
    /// What the reaper waits for: a child's exit, or a request to stop.
    watched: libc::sigset_t,
    /// Only `SIGCHLD`.
    child: libc::sigset_t,
    empty: libc::sigset_t,
}

/// The signals that ask the reaper to stop (Replan's `SIGTERM`, its own death, a terminal).
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

impl Signals {
    fn new() -> Signals {
        // SAFETY: sigemptyset/sigaddset initialise and fill the sets we own.
        unsafe {
            let mut watched: libc::sigset_t = std::mem::zeroed();
            let mut child: libc::sigset_t = std::mem::zeroed();
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut watched);
            libc::sigemptyset(&mut child);
            libc::sigemptyset(&mut empty);
            libc::sigaddset(&mut watched, libc::SIGCHLD);
            libc::sigaddset(&mut child, libc::SIGCHLD);
            for signal in STOP_SIGNALS {
                libc::sigaddset(&mut watched, signal);
            }
            Signals {
                watched,
                child,
                empty,
            }
        }
    }
}

/// In the process tokio spawned: make it a subreaper, fork the command and return in the
/// command (`Ok`), while this process stays behind as the reaper and never returns.
///
/// # Safety
/// Only between `fork` and `exec`.
unsafe fn split_off_reaper(signals: &Signals, replan: libc::pid_t) -> io::Result<()> {
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // An ignored SIGCHLD would reap children by itself and hide the command's status.
        set_default(libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &signals.watched, std::ptr::null_mut());
        // Replan's death stops the reaper too (Replan spawns from threads that live as long as
        // its runtime). If Replan died already, the signal would never come: send it now.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        if libc::getppid() != replan {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
        wipe_environment();
        let reaper = libc::getpid();
        let command = libc::fork();
        if command < 0 {
            return Err(io::Error::last_os_error());
        }
        if command == 0 {
            // The command: it dies with its reaper, whoever kills that (a backstop where
            // Landlock cannot stop it), and starts with no signal blocked.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != reaper {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            libc::sigprocmask(libc::SIG_SETMASK, &signals.empty, std::ptr::null_mut());
            return Ok(());
        }
        // The reaper holds nothing open: not the pipes (their readers see the end when the last
        // process of the command is gone) nor std's exec-error pipe (the spawn returns when the
        // command has exec'd).
        close_all_descriptors();
        reaper_loop(command, signals)
    }
}

/// Waits for the command to exit or for a stop signal, kills every descendant, exits like the
/// command.
unsafe fn reaper_loop(command: libc::pid_t, signals: &Signals) -> ! {
    unsafe {
        let mut status: Option<libc::c_int> = None;
        while status.is_none() {
            let signal = libc::sigwaitinfo(&signals.watched, std::ptr::null_mut());
            if signal == libc::SIGCHLD {
                loop {
                    let mut raw = 0;
                    let pid = libc::waitpid(-1, &mut raw, libc::WNOHANG);
                    if pid <= 0 {
                        break;
                    }
                    if pid == command {
                        status = Some(raw);
                    }
                }
            } else if signal > 0 {
                break;
            }
        }
        kill_descendants(signals);
        exit_like(status)
    }
}

/// SIGKILLs every child, reaps, and again — orphans re-parent to us as their parents die —
/// until there is no child left.
unsafe fn kill_descendants(signals: &Signals) {
    unsafe {
        let me = libc::getpid();
        loop {
            kill_children(me);
            loop {
                let mut raw = 0;
                let pid = libc::waitpid(-1, &mut raw, libc::WNOHANG);
                if pid > 0 {
                    continue;
                }
                if pid == 0 {
                    break;
                }
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return; // ECHILD: nothing is left.
            }
            // Children remain, still dying: wait for one (or 10 ms, should a listing have
            // missed one), then kill again whatever re-parented meanwhile.
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::sigtimedwait(&signals.child, std::ptr::null_mut(), &pause);
        }
    }
}

/// SIGKILLs the current children: listed by `/proc/thread-self/children` (the reaper has one
/// thread), or where the kernel has no such file, every process of `/proc` whose parent is `me`.
unsafe fn kill_children(me: libc::pid_t) {
    let kill = |pid| {
        // SAFETY: kill(2) takes plain integers.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    };
    // SAFETY: both read /proc into stack buffers.
    unsafe {
        if !for_each_listed_child(kill) {
            for_each_child_in_proc(me, kill);
        }
    }
}

/// Calls `each` with every child in `/proc/thread-self/children`; false without that file.
unsafe fn for_each_listed_child(each: impl FnMut(libc::pid_t)) -> bool {
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return false;
        }
        for_each_number(fd, each);
        libc::close(fd);
        true
    }
}

/// Calls `each` with every process of `/proc` whose parent is `me`.
unsafe fn for_each_child_in_proc(me: libc::pid_t, mut each: impl FnMut(libc::pid_t)) {
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut entries = [0u8; 4096];
        loop {
            let read = libc::syscall(
                libc::SYS_getdents64,
                dir,
                entries.as_mut_ptr(),
                entries.len(),
            );
            if read <= 0 {
                break;
            }
            let read = read as usize;
            let mut offset = 0;
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name (NUL-ended).
            while offset + 19 < read {
                let length = u16::from_ne_bytes([entries[offset + 16], entries[offset + 17]]);
                let length = length as usize;
                if length < 20 || offset + length > read {
                    break;
                }
                let pid = parse_pid(&entries[offset + 19..offset + length]);
                if pid > 0 && parent_of(pid) == me {
                    each(pid);
                }
                offset += length;
            }
        }
        libc::close(dir);
    }
}

/// The decimal number at the start of `name` up to its NUL, or 0 when it is not all digits.
fn parse_pid(name: &[u8]) -> libc::pid_t {
    let mut pid: libc::pid_t = 0;
    for &byte in name {
        match byte {
            0 => break,
            b'0'..=b'9' => {
                pid = pid
                    .wrapping_mul(10)
                    .wrapping_add(libc::pid_t::from(byte - b'0'));
            }
            _ => return 0,
        }
    }
    pid.max(0)
}

/// The parent of `pid` from `/proc/<pid>/stat` (the field after the state, after the last `)`
/// that ends the command name), or 0.
unsafe fn parent_of(pid: libc::pid_t) -> libc::pid_t {
    unsafe {
        // "/proc/" + at most 11 digits + "/stat\0" fits.
        let mut path = [0u8; 32];
        path[..6].copy_from_slice(b"/proc/");
        let digits = write_decimal(pid, &mut path[6..17]);
        path[6 + digits..6 + digits + 6].copy_from_slice(b"/stat\0");
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return 0;
        }
        let mut stat = [0u8; 512];
        let read = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        if read <= 0 {
            return 0;
        }
        let stat = &stat[..read as usize];
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            return 0;
        };
        // ") S 1234 ..."
        let rest = &stat[close + 1..];
        let mut fields = rest.split(|&b| b == b' ').filter(|f| !f.is_empty());
        let _state = fields.next();
        fields.next().map(parse_pid).unwrap_or(0)
    }
}

/// Writes `value` (non-negative) in decimal at the start of `out` (at least 11 bytes); returns
/// the number of bytes written.
fn write_decimal(value: libc::pid_t, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 11];
    let mut count = 0;
    let mut rest = value.max(0) as u32;
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 || count == digits.len() {
            break;
        }
    }
    for (index, digit) in digits[..count].iter().rev().enumerate() {
        out[index] = *digit;
    }
    count
}

/// Calls `each` with every whitespace-separated number read from `fd`.
unsafe fn for_each_number(fd: libc::c_int, mut each: impl FnMut(libc::pid_t)) {
    unsafe {
        let mut buffer = [0u8; 512];
        let mut number: libc::pid_t = 0;
        let mut in_number = false;
        loop {
            let read = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
            if read < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if read <= 0 {
                break;
            }
            for &byte in &buffer[..read as usize] {
                if byte.is_ascii_digit() {
                    number = number
                        .wrapping_mul(10)
                        .wrapping_add(libc::pid_t::from(byte - b'0'));
                    in_number = true;
                } else {
                    if in_number && number > 0 {
                        each(number);
                    }
                    number = 0;
                    in_number = false;
                }
            }
        }
        if in_number && number > 0 {
            each(number);
        }
    }
}

/// Exits with the command's status: its code, or the signal that killed it (raised again on
/// ourselves); killed by SIGKILL when the reaper was asked to stop.
unsafe fn exit_like(status: Option<libc::c_int>) -> ! {
    unsafe {
        let signal = match status {
            Some(raw) if libc::WIFEXITED(raw) => libc::_exit(libc::WEXITSTATUS(raw)),
            Some(raw) if libc::WIFSIGNALED(raw) => libc::WTERMSIG(raw),
            _ => libc::SIGKILL,
        };
        set_default(signal);
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

unsafe fn set_default(signal: libc::c_int) {
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

unsafe extern "C" {
    static mut environ: *mut *mut libc::c_char;
}

/// Zeroes this process's copy of Replan's environment: the strings `environ` points to, and the
/// block the kernel shows as `/proc/<pid>/environ` (from `env_start` to `env_end` in
/// `/proc/self/stat`), which also holds variables removed since start-up.
unsafe fn wipe_environment() {
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let mut byte = *entry;
            while *byte != 0 {
                std::ptr::write_volatile(byte, 0);
                byte = byte.add(1);
            }
            entry = entry.add(1);
        }
        let (start, end) = environment_block();
        let mut address = start;
        while address < end {
            std::ptr::write_volatile(address as *mut u8, 0);
            address += 1;
        }
    }
}

/// `env_start` and `env_end` (fields 50 and 51) of `/proc/self/stat`, or (0, 0).
unsafe fn environment_block() -> (usize, usize) {
    unsafe {
        let fd = libc::open(
            c"/proc/self/stat".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return (0, 0);
        }
        let mut stat = [0u8; 1024];
        let mut length = 0;
        while length < stat.len() {
            let read = libc::read(fd, stat[length..].as_mut_ptr().cast(), stat.len() - length);
            if read <= 0 {
                break;
            }
            length += read as usize;
        }
        libc::close(fd);
        let stat = &stat[..length];
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            return (0, 0);
        };
        // Field 3 (the state) is the first after the command name.
        let mut fields = stat[close + 1..]
            .split(|&b| b == b' ' || b == b'\n')
            .filter(|f| !f.is_empty());
        let start = fields.nth(50 - 3).map(parse_usize).unwrap_or(0);
        let end = fields.next().map(parse_usize).unwrap_or(0);
        if start == 0 || end <= start || end - start > 1 << 20 {
            return (0, 0);
        }
        (start, end)
    }
}

fn parse_usize(text: &[u8]) -> usize {
    let mut value: usize = 0;
    for &byte in text {
        if !byte.is_ascii_digit() {
            return 0;
        }
        value = value
            .wrapping_mul(10)
            .wrapping_add(usize::from(byte - b'0'));
    }
    value
}

/// Closes every descriptor: `close_range`, or one by one up to the descriptor limit.
unsafe fn close_all_descriptors() {
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
            return;
        }
        let mut limit: libc::rlimit = std::mem::zeroed();
        let highest = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 16) as libc::c_int
        } else {
            1024
        };
        for fd in 0..highest {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_and_paths_are_read_and_written_without_allocating() {
        assert_eq!(parse_pid(b"1234\0junk"), 1234);
        assert_eq!(parse_pid(b"self\0"), 0);
        assert_eq!(parse_pid(b".\0"), 0);
        let mut out = [0u8; 11];
        let written = write_decimal(4_194_304, &mut out);
        assert_eq!(&out[..written], b"4194304");
        assert_eq!(write_decimal(0, &mut out), 1);
        assert_eq!(parse_usize(b"140737488351232"), 140_737_488_351_232);
    }

    #[test]
    fn the_parent_and_the_environment_block_are_read_from_proc() {
        // SAFETY: both only read /proc into stack buffers.
        unsafe {
            assert_eq!(parent_of(std::process::id() as i32), libc::getppid());
            let (start, end) = environment_block();
            assert!(start > 0 && end > start, "{start}..{end}");
        }
    }

    #[test]
    fn children_are_found_in_the_listing_and_by_a_scan_of_proc() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let (mut listed, mut scanned) = (Vec::new(), Vec::new());
        // SAFETY: both read /proc into stack buffers.
        let has_listing = unsafe {
            for_each_child_in_proc(libc::getpid(), |found| scanned.push(found));
            for_each_listed_child(|found| listed.push(found))
        };
        let _ = child.kill();
        let _ = child.wait();
        assert!(scanned.contains(&pid), "{pid} not in {scanned:?}");
        // The listing is per thread; this thread started the child.
        assert!(
            !has_listing || listed.contains(&pid),
            "{pid} not in {listed:?}"
        );
    }
}
