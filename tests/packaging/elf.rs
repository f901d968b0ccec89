//! Just enough ELF64 reading to tell a static executable from a dynamically linked one, so the
//! check does not depend on `file` or `ldd` being installed.

use std::path::Path;

const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;

/// How an executable gets its libraries.
#[derive(Debug, PartialEq, Eq)]
pub struct Linkage {
    /// The program interpreter (dynamic loader) it asks for, e.g. `/lib64/ld-linux-x86-64.so.2`.
    pub interpreter: Option<String>,
    /// Shared libraries it needs (DT_NEEDED entries), by string-table offset count.
    pub needed_libraries: usize,
}

impl Linkage {
    /// Static, including static-pie (which keeps a dynamic section for its own relocations but
    /// needs no loader and no library).
    pub fn is_static(&self) -> bool {
        self.interpreter.is_none() && self.needed_libraries == 0
    }
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes")) as usize
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads the program headers of a little-endian ELF64 file.
pub fn linkage(path: &Path) -> Linkage {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        bytes.len() > 64 && bytes[..4] == *b"\x7fELF",
        "{} is not an ELF file",
        path.display()
    );
    assert_eq!(bytes[4], 2, "{} is not ELF64", path.display());
    assert_eq!(bytes[5], 1, "{} is not little-endian", path.display());
    let phoff = u64_at(&bytes, 0x20) as usize;
    let phentsize = u16_at(&bytes, 0x36);
    let phnum = u16_at(&bytes, 0x38);
    let mut linkage = Linkage {
        interpreter: None,
        needed_libraries: 0,
    };
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let p_type = u32_at(&bytes, ph);
        let offset = u64_at(&bytes, ph + 8) as usize;
        let filesz = u64_at(&bytes, ph + 32) as usize;
        let segment = &bytes[offset..offset + filesz];
        match p_type {
            PT_INTERP => {
                let text = segment.split(|&b| b == 0).next().unwrap_or_default();
                linkage.interpreter = Some(String::from_utf8_lossy(text).into_owned());
            }
            PT_DYNAMIC => {
                for entry in segment.chunks_exact(16) {
                    match u64_at(entry, 0) {
                        DT_NULL => break,
                        DT_NEEDED => linkage.needed_libraries += 1,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    linkage
}
