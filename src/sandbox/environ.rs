//! Replan's own environment out of `/proc/<pid>/environ`.
//!
//! The kernel shows a process's environment from the memory the strings had at `exec`. A
//! non-dumpable process hides it from other processes of its (non-root) user, but a command
//! running as root reads it whatever the sandbox (Landlock does not stop root reading another
//! process's `environ`: measured on Linux 6.18). So at start-up, single-threaded, Replan moves
//! every variable to memory of its own (`set_var` copies it) and zeroes the block the kernel
//! shows. Its memory stays readable to root through `/proc/<pid>/mem`: run Replan as a non-root
//! user (docs/security.md).

/// Copy every variable away from the `exec` block and zero that block. Must run before any
/// other thread exists.
pub fn hide_environment() {
    #[cfg(target_os = "linux")]
    {
        let Some((start, end)) = env_block() else {
            return;
        };
        let vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
        for (name, value) in &vars {
            // SAFETY: called from `main` before the runtime or any thread starts.
            unsafe { std::env::set_var(name, value) };
        }
        if !environ_outside(start, end) {
            return;
        }
        // SAFETY: [start, end) is this process's environment block (from /proc/self/stat), in
        // its writable stack mapping; no pointer of `environ` points into it any more (checked
        // just above), so nothing reads it after this.
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
    }
}

/// `env_start` and `env_end` of this process (fields 50 and 51 of `/proc/self/stat`).
#[cfg(target_os = "linux")]
fn env_block() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count from after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let start: usize = fields.get(50 - 3)?.parse().ok()?;
    let end: usize = fields.get(51 - 3)?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

/// Whether every `environ` entry now points outside [start, end).
#[cfg(target_os = "linux")]
fn environ_outside(start: usize, end: usize) -> bool {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: `environ` is the C library's null-terminated array, read single-threaded.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return true;
        }
        while !(*entry).is_null() {
            let at = *entry as usize;
            if (start..end).contains(&at) {
                return false;
            }
            entry = entry.add(1);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_block_is_found_in_proc_self_stat() {
        let (start, end) = super::env_block().expect("env_start and env_end");
        assert!(end > start);
    }
}
