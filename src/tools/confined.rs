//! Every read and write of the file tools, confined to the workspace by the kernel.
//!
//! Commands the model runs can plant anything in the checkout between two tool calls: a symlink
//! where a temporary file will be written, a hard link to `.git/config`, a folder swapped for a
//! symlink. Checking path strings and then opening by path cannot stop that, so every access here
//! starts from a handle on the workspace root and resolves the rest with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` (or, where the kernel
//! lacks it, one `openat(O_NOFOLLOW)` per component); the last component is then used only
//! through `*at` calls on its folder's handle, which never follow it. A symlink anywhere is
//! refused; so is a regular file with more than one hard link (git never makes one in a work
//! tree, so it can only be a command's way to reach a file elsewhere); so is `.git` in any case.

use super::error::{ToolError, ToolErrorKind};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once `openat2` turned out to be missing (ENOSYS) or filtered (EPERM): walk instead.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// A path beneath the workspace root: plain components only, none of them `.git` in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePath {
    parts: Vec<OsString>,
    /// `/`-separated, `.` for the root; for messages and the protected-path check.
    pub relative: String,
}

impl FilePath {
    /// `path` relative to the root; `..`, absolute paths and `.git` (any case) are refused.
    pub fn new(path: &Path) -> Result<Self, ToolError> {
        let shown = path.display().to_string();
        let mut parts = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) if is_dot_git(part) => {
                    return Err(denied(format!(
                        "`{shown}` is inside .git (in any letter case), which the tools may not touch"
                    )));
                }
                Component::Normal(part) => parts.push(part.to_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(denied(format!(
                        "`{shown}` uses `..`; give a path inside the workspace without it"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(denied(format!(
                        "`{shown}` is absolute; give a path relative to the workspace root"
                    )));
                }
            }
        }
        let relative = parts
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        Ok(FilePath {
            relative: if relative.is_empty() {
                ".".to_owned()
            } else {
                relative
            },
            parts,
        })
    }

    /// The path on disk beneath `root`, for walking by name (what is found is opened here again).
    pub fn under(&self, root: &Path) -> std::path::PathBuf {
        let mut path = root.to_path_buf();
        path.extend(&self.parts);
        path
    }

    /// The folder's components and the last name; None for the root.
    fn split(&self) -> Option<(&[OsString], &OsStr)> {
        let (last, folder) = self.parts.split_last()?;
        Some((folder, last))
    }
}

/// `.git`, `.GIT`, `.Git`…: one folder on a case-insensitive file system, and a path git refuses.
pub fn is_dot_git(name: &OsStr) -> bool {
    name.as_bytes().eq_ignore_ascii_case(b".git")
}

/// What a path is, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File,
    Dir,
    /// A FIFO, socket or device.
    Other,
}

/// A handle on the workspace root that all access goes through.
pub struct Confined {
    root: OwnedFd,
    /// False: resolve by walking even where `openat2` exists (what older kernels get).
    openat2: bool,
}

impl Confined {
    /// Open the root; `root` is Replan's own canonical path, not the model's.
    pub fn open(root: &Path) -> Result<Self, ToolError> {
        let name = c_name(root.as_os_str(), ".")?;
        // SAFETY: a valid C string; the descriptor returned is owned below.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        let root = owned(fd).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Failed,
                format!("the workspace `{}` cannot be opened: {e}", root.display()),
            )
        })?;
        Ok(Confined {
            root,
            openat2: true,
        })
    }

    /// What `path` is; a symlink anywhere on it is refused.
    pub fn kind(&self, path: &FilePath) -> Result<Kind, ToolError> {
        let Some((folder, name)) = path.split() else {
            return Ok(Kind::Dir);
        };
        let parent = match self.folder(folder, false) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Kind::Missing),
            Err(e) => return Err(refusal(path, "read", &e)),
        };
        match stat_at(&parent, name, &path.relative)? {
            None => Ok(Kind::Missing),
            Some(stat) => match stat.st_mode & libc::S_IFMT {
                libc::S_IFREG => Ok(Kind::File),
                libc::S_IFDIR => Ok(Kind::Dir),
                libc::S_IFLNK => Err(symlink_refused(path)),
                _ => Ok(Kind::Other),
            },
        }
    }

    /// The folder at `path`, opened for walking or listing.
    pub fn open_dir(&self, path: &FilePath) -> Result<OwnedFd, ToolError> {
        self.folder(&path.parts, false)
            .map_err(|e| refusal(path, "open", &e))
    }

    /// A regular file with a single link, opened for reading. A FIFO, socket or device is
    /// refused without blocking on it.
    pub fn open_file(&self, path: &FilePath) -> Result<File, ToolError> {
        let Some((folder, name)) = path.split() else {
            return Err(is_a_directory(path));
        };
        let parent = self
            .folder(folder, false)
            .map_err(|e| refusal(path, "read", &e))?;
        match stat_at(&parent, name, &path.relative)? {
            None => return Err(refusal(path, "read", &enoent())),
            Some(stat) => check_single_regular(path, &stat, "read")?,
        }
        let c = c_name(name, &path.relative)?;
        // SAFETY: valid descriptor and C string. O_NOFOLLOW: a symlink swapped in since the stat
        // fails with ELOOP; O_NONBLOCK: a FIFO swapped in does not block.
        let fd = unsafe {
            libc::openat(
                parent.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY
                    | libc::O_NOFOLLOW
                    | libc::O_NONBLOCK
                    | libc::O_NOCTTY
                    | libc::O_CLOEXEC,
            )
        };
        let fd = owned(fd).map_err(|e| refusal(path, "read", &e))?;
        check_single_regular(path, &fstat(&fd, &path.relative)?, "read")?;
        Ok(File::from(fd))
    }

    /// The file's whole content as UTF-8 text; binary content is refused.
    pub fn read_text(&self, path: &FilePath) -> Result<String, ToolError> {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut self.open_file(path)?, &mut bytes)
            .map_err(|e| refusal(path, "read", &e))?;
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return Err(ToolError::new(
                ToolErrorKind::Failed,
                format!(
                    "`{}` is a binary file; only text files can be read or edited",
                    path.relative
                ),
            ));
        }
        String::from_utf8(bytes).map_err(|_| {
            ToolError::new(
                ToolErrorKind::Failed,
                format!("`{}` is not valid UTF-8 text", path.relative),
            )
        })
    }

    /// Create or replace the file with `content` atomically (a reader never sees half of it),
    /// creating missing folders. Returns whether the file existed.
    pub fn write(&self, path: &FilePath, content: &[u8]) -> Result<bool, ToolError> {
        let Some((folder, name)) = path.split() else {
            return Err(is_a_directory(path));
        };
        let parent = self
            .folder(folder, true)
            .map_err(|e| refusal(path, "create the folder of", &e))?;
        let mode = match stat_at(&parent, name, &path.relative)? {
            None => None,
            Some(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    format!("`{}` is a directory; give a file path", path.relative),
                ));
            }
            Some(stat) => {
                check_single_regular(path, &stat, "write")?;
                Some(stat.st_mode & 0o7777)
            }
        };
        let (temporary, file) = create_temporary(&parent, mode.unwrap_or(0o666), path)?;
        let c_temporary = c_name(&temporary, &path.relative)?;
        let written = write_all(file, content, mode).and_then(|()| {
            let target = c_name(name, &path.relative).map_err(std::io::Error::other)?;
            // SAFETY: valid descriptors and C strings. Both names are single components of the
            // same folder handle: the rename replaces whatever entry is there (a symlink swapped
            // in is replaced, not followed).
            let done = unsafe {
                libc::renameat(
                    parent.as_raw_fd(),
                    c_temporary.as_ptr(),
                    parent.as_raw_fd(),
                    target.as_ptr(),
                )
            };
            if done == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
        if let Err(e) = written {
            // SAFETY: valid descriptor and C string; unlinkat never follows the name.
            unsafe { libc::unlinkat(parent.as_raw_fd(), c_temporary.as_ptr(), 0) };
            return Err(refusal(path, "write", &e));
        }
        Ok(mode.is_some())
    }

    /// Delete the file (never a symlink, a folder or a file with other hard links).
    pub fn remove(&self, path: &FilePath) -> Result<(), ToolError> {
        let Some((folder, name)) = path.split() else {
            return Err(is_a_directory(path));
        };
        let parent = self
            .folder(folder, false)
            .map_err(|e| refusal(path, "delete", &e))?;
        match stat_at(&parent, name, &path.relative)? {
            None => return Err(refusal(path, "delete", &enoent())),
            Some(stat) => check_single_regular(path, &stat, "delete")?,
        }
        let c = c_name(name, &path.relative)?;
        // SAFETY: valid descriptor and C string; unlinkat never follows the name.
        if unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(refusal(path, "delete", &std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The folder made of `parts` beneath the root, created if `create` and missing.
    fn folder(&self, parts: &[OsString], create: bool) -> std::io::Result<OwnedFd> {
        match open_beneath(&self.root, parts, self.openat2) {
            Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                let mut current = self.root.try_clone()?;
                for part in parts {
                    let one = std::slice::from_ref(part);
                    current = match open_beneath(&current, one, self.openat2) {
                        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                            make_dir(&current, part)?;
                            open_beneath(&current, one, self.openat2)?
                        }
                        other => other?,
                    };
                }
                Ok(current)
            }
            other => other,
        }
    }
}

/// The folder `parts` beneath `dir`, following no symlink and never leaving `dir`.
fn open_beneath(dir: &OwnedFd, parts: &[OsString], openat2: bool) -> std::io::Result<OwnedFd> {
    if parts.is_empty() {
        return dir.try_clone();
    }
    if openat2 && !NO_OPENAT2.load(Ordering::Relaxed) {
        match openat2_dir(dir.as_raw_fd(), parts) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            other => return other,
        }
    }
    walk_dir(dir, parts)
}

fn openat2_dir(dir: RawFd, parts: &[OsString]) -> std::io::Result<OwnedFd> {
    let joined: Vec<u8> = parts
        .iter()
        .map(|p| p.as_bytes())
        .collect::<Vec<_>>()
        .join(&b'/');
    let path = CString::new(joined).map_err(|_| nul_error())?;
    // SAFETY: open_how is plain data; zeroed then filled, as the kernel requires.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // A rename anywhere on the system during the lookup makes the kernel answer EAGAIN.
    for _ in 0..64 {
        // SAFETY: valid descriptor, C string and open_how of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        match owned(fd) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
            other => return other,
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::EAGAIN))
}

/// Without `openat2`: one component at a time, each opened with O_NOFOLLOW from its parent's
/// handle, so no symlink is followed and `..` never reaches the kernel.
pub(crate) fn walk_dir(dir: &OwnedFd, parts: &[OsString]) -> std::io::Result<OwnedFd> {
    let mut current = dir.try_clone()?;
    for part in parts {
        let name = CString::new(part.as_bytes()).map_err(|_| nul_error())?;
        if part.as_bytes().contains(&b'/') || part == ".." || part == "." {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: valid descriptor and C string.
        let fd = unsafe {
            libc::openat(
                current.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        current = owned(fd).map_err(|e| {
            // O_DIRECTORY may answer ENOTDIR for a symlink; name it as what it is.
            if e.raw_os_error() == Some(libc::ENOTDIR)
                && lstat_mode(&current, &name) == Some(libc::S_IFLNK)
            {
                std::io::Error::from_raw_os_error(libc::ELOOP)
            } else {
                e
            }
        })?;
    }
    Ok(current)
}

fn make_dir(dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
    let c = CString::new(name.as_bytes()).map_err(|_| nul_error())?;
    // SAFETY: valid descriptor and C string; mkdirat never follows the name.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) } == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EEXIST) {
        Ok(())
    } else {
        Err(error)
    }
}

/// A new file beside the target with an unguessable name, created exclusively: nothing a
/// command planted (a symlink, a hard link, a file) can be opened in its place.
fn create_temporary(
    parent: &OwnedFd,
    mode: u32,
    path: &FilePath,
) -> Result<(OsString, File), ToolError> {
    for _ in 0..16 {
        let name = OsString::from(format!(".replan-{:016x}.tmp", fastrand::u64(..)));
        let c = c_name(&name, &path.relative)?;
        // SAFETY: valid descriptor and C string.
        let fd = unsafe {
            libc::openat(
                parent.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        match owned(fd) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(e) => return Err(refusal(path, "write", &e)),
        }
    }
    Err(ToolError::new(
        ToolErrorKind::Failed,
        format!(
            "could not write `{}`: no free temporary name beside it",
            path.relative
        ),
    ))
}

/// Write the content; an existing file's mode is kept exactly (the umask narrowed the create).
fn write_all(mut file: File, content: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    file.write_all(content)?;
    if let Some(mode) = mode {
        // SAFETY: valid descriptor.
        if unsafe { libc::fchmod(file.as_raw_fd(), mode as libc::mode_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The entry `name` of `dir`, not followed; None when it does not exist.
fn stat_at(dir: &OwnedFd, name: &OsStr, shown: &str) -> Result<Option<libc::stat>, ToolError> {
    let c = c_name(name, shown)?;
    // SAFETY: stat is plain data filled by the kernel.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, C string and out pointer.
    let done = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if done == 0 {
        return Ok(Some(stat));
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(super::blocking::io_error(shown, "read", &error))
    }
}

fn lstat_mode(dir: &OwnedFd, name: &CString) -> Option<libc::mode_t> {
    // SAFETY: as in stat_at.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    let done = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (done == 0).then_some(stat.st_mode & libc::S_IFMT)
}

fn fstat(fd: &OwnedFd, shown: &str) -> Result<libc::stat, ToolError> {
    // SAFETY: as in stat_at.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        let error = std::io::Error::last_os_error();
        return Err(super::blocking::io_error(shown, "read", &error));
    }
    Ok(stat)
}

fn check_single_regular(path: &FilePath, stat: &libc::stat, doing: &str) -> Result<(), ToolError> {
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG if stat.st_nlink > 1 => Err(denied(format!(
            "`{}` is a hard link ({} names share the file), so it may be another file such as \
             .git/config under a second name; the file tools do not {doing} hard links (git \
             never makes them in a work tree)",
            path.relative, stat.st_nlink
        ))),
        libc::S_IFREG => Ok(()),
        libc::S_IFLNK => Err(symlink_refused(path)),
        libc::S_IFDIR => Err(is_a_directory(path)),
        _ => Err(denied(format!(
            "`{}` is not a regular file (a FIFO, socket or device); only regular files can be \
             read or written",
            path.relative
        ))),
    }
}

/// An error from resolving or using `path`, in the tools' words.
fn refusal(path: &FilePath, doing: &str, error: &std::io::Error) -> ToolError {
    match error.raw_os_error() {
        Some(libc::ELOOP) => symlink_refused(path),
        Some(libc::EXDEV) => denied(format!(
            "`{}` resolves outside the workspace; the file tools stay beneath its root",
            path.relative
        )),
        Some(libc::ENOENT) => ToolError::new(
            ToolErrorKind::NotFound,
            format!("`{}` does not exist in the workspace", path.relative),
        ),
        Some(libc::ENOTDIR) => ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "could not {doing} `{}`: a part of the path is a file, not a folder",
                path.relative
            ),
        ),
        _ => super::blocking::io_error(&path.relative, doing, error),
    }
}

fn symlink_refused(path: &FilePath) -> ToolError {
    denied(format!(
        "`{}` is or goes through a symlink; the file tools do not follow symlinks (read or \
         change the file at its real path)",
        path.relative
    ))
}

fn is_a_directory(path: &FilePath) -> ToolError {
    ToolError::new(
        ToolErrorKind::InvalidArguments,
        format!(
            "`{}` is a directory; give a file path (use list_files to see its contents)",
            path.relative
        ),
    )
}

fn denied(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::Denied, message)
}

fn c_name(name: &OsStr, shown: &str) -> Result<CString, ToolError> {
    CString::new(name.as_bytes()).map_err(|_| {
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("`{shown}` contains a NUL byte; give a path without it"),
        )
    })
}

fn nul_error() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EINVAL)
}

fn enoent() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::ENOENT)
}

fn owned(fd: impl Into<i64>) -> std::io::Result<OwnedFd> {
    let fd = fd.into();
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(path: &str) -> Vec<OsString> {
        path.split('/').map(OsString::from).collect()
    }

    fn root(dir: &Path) -> OwnedFd {
        Confined::open(dir).unwrap().root
    }

    #[test]
    fn dot_git_in_any_case_dot_dot_and_absolute_paths_are_refused() {
        for path in [
            ".git/config",
            ".GIT/config",
            "a/.Git",
            "a/../b",
            "/etc/passwd",
        ] {
            let error = FilePath::new(Path::new(path)).unwrap_err();
            assert_eq!(error.kind, ToolErrorKind::Denied, "{path}: {error}");
        }
        assert_eq!(
            FilePath::new(Path::new("./a/.gitignore")).unwrap().relative,
            "a/.gitignore"
        );
    }

    #[test]
    fn the_walk_without_openat2_refuses_symlinked_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("real/inner")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        std::os::unix::fs::symlink("/", dir.path().join("real/up")).unwrap();
        let root = root(dir.path());
        assert!(walk_dir(&root, &parts("real/inner")).is_ok());
        for path in ["alias", "alias/inner", "real/up", "real/up/etc"] {
            let error = walk_dir(&root, &parts(path)).unwrap_err();
            assert_eq!(error.raw_os_error(), Some(libc::ELOOP), "{path}: {error}");
        }
        assert_eq!(
            walk_dir(&root, &parts("..")).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn openat2_refuses_symlinked_folders_where_the_kernel_has_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("real/inner")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        let root = root(dir.path());
        match openat2_dir(root.as_raw_fd(), &parts("alias/inner")) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {}
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}"),
            Ok(_) => panic!("openat2 followed a symlink"),
        }
    }

    /// The same rules through both resolutions: `openat2`, and the walk older kernels get.
    #[test]
    fn both_resolutions_refuse_symlinks_and_hard_links_and_create_folders() {
        for openat2 in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("real")).unwrap();
            std::fs::write(dir.path().join("real/a.txt"), "a").unwrap();
            std::fs::hard_link(dir.path().join("real/a.txt"), dir.path().join("b.txt")).unwrap();
            std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
            std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
            let mut confined = Confined::open(dir.path()).unwrap();
            confined.openat2 = openat2;
            let at = |p: &str| FilePath::new(Path::new(p)).unwrap();
            assert!(!confined.write(&at("new/deep/c.txt"), b"c").unwrap());
            assert_eq!(confined.read_text(&at("new/deep/c.txt")).unwrap(), "c");
            for path in ["out/x.txt", "out/new/x.txt", "alias/a.txt", "alias"] {
                let error = confined.write(&at(path), b"x").unwrap_err();
                assert_eq!(
                    error.kind,
                    ToolErrorKind::Denied,
                    "{openat2} {path}: {error}"
                );
                assert!(
                    error.message.contains("symlink"),
                    "{openat2} {path}: {error}"
                );
            }
            for path in ["alias/a.txt", "out/x.txt"] {
                let error = confined.open_file(&at(path)).unwrap_err();
                assert_eq!(
                    error.kind,
                    ToolErrorKind::Denied,
                    "{openat2} {path}: {error}"
                );
            }
            let error = confined.open_file(&at("b.txt")).unwrap_err();
            assert!(error.message.contains("hard link"), "{openat2}: {error}");
            let error = confined.remove(&at("real/a.txt")).unwrap_err();
            assert!(error.message.contains("hard link"), "{openat2}: {error}");
            assert_eq!(
                confined.kind(&at("real/missing")).unwrap(),
                Kind::Missing,
                "{openat2}"
            );
            assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn a_write_keeps_the_mode_and_leaves_no_temporary_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o751)).unwrap();
        let confined = Confined::open(dir.path()).unwrap();
        let path = FilePath::new(Path::new("run.sh")).unwrap();
        assert!(confined.write(&path, b"new").unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["run.sh"]);
    }
}
