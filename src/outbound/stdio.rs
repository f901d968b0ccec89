//! Standard output and error as pipes that Replan reads back, redacts line by line and writes
//! to the real descriptors: `println!`, `eprintln!`, log lines, panic messages and the output of
//! any child that inherited them all pass the secret set, with no call site to remember.

use super::redactor::RedactingLineWriter;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The real stdout, for the `::add-mask::` commands the Actions runner swallows (they must
/// carry the value itself; they never reach the job log).
static REAL_STDOUT: OnceLock<OwnedFd> = OnceLock::new();

/// Keeps the redacting pipes alive; dropping it flushes what is pending and restores 1 and 2.
pub struct StdioGuard {
    restore: Vec<(i32, OwnedFd)>,
    pumps: Vec<(JoinHandle<()>, mpsc::Receiver<()>)>,
}

/// Puts the redacting pipes in place of file descriptors 1 and 2.
pub fn interpose() -> std::io::Result<StdioGuard> {
    let mut guard = StdioGuard {
        restore: Vec::new(),
        pumps: Vec::new(),
    };
    let targets: [(i32, OwnedFd); 2] = [
        (1, std::io::stdout().as_fd().try_clone_to_owned()?),
        (2, std::io::stderr().as_fd().try_clone_to_owned()?),
    ];
    for (target, real) in targets {
        let (mut reader, writer) = std::io::pipe()?;
        let output = File::from(real.try_clone()?);
        if target == 1 {
            let _ = REAL_STDOUT.set(real.try_clone()?);
        }
        std::io::stdout().flush()?;
        // SAFETY: dup2 on descriptors we own; it atomically points `target` at the pipe.
        if unsafe { libc::dup2(writer.as_raw_fd(), target) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        drop(writer);
        guard.restore.push((target, real));
        let (done, finished) = mpsc::channel();
        let pump = std::thread::Builder::new()
            .name(format!("redact-fd{target}"))
            .spawn(move || {
                let mut out = RedactingLineWriter::new(output, super::secrets());
                let mut chunk = vec![0u8; 16 * 1024];
                while let Ok(n) = reader.read(&mut chunk) {
                    if n == 0 || out.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                }
                drop(out);
                let _ = done.send(());
            })?;
        guard.pumps.push((pump, finished));
    }
    Ok(guard)
}

/// Writes `line` to the real stdout, past the redaction (only for `::add-mask::`).
pub fn write_unredacted_stdout_line(line: &str) {
    match REAL_STDOUT.get() {
        Some(fd) => {
            let _ = std::io::stdout().flush();
            if let Ok(fd) = fd.try_clone() {
                let _ = writeln!(File::from(fd), "{line}");
            }
        }
        None => println!("{line}"),
    }
}

impl Drop for StdioGuard {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        for (target, real) in &self.restore {
            // SAFETY: as above; this closes the pipe's last write end we hold.
            unsafe {
                libc::dup2(real.as_raw_fd(), *target);
            }
        }
        // A leftover grandchild may still hold a write end: do not wait for it forever.
        for (pump, finished) in self.pumps.drain(..) {
            if finished.recv_timeout(Duration::from_secs(2)).is_ok() {
                let _ = pump.join();
            }
        }
    }
}
