//! The zlib streams of git objects (loose objects and pack entries) that a save writes.
//!
//! A compressor costs more than the objects a save writes: miniz_oxide allocates and zeroes
//! about 300 KiB of state for each one (and again on each reset), while a save's commit, trees and
//! changed files are mostly a few hundred bytes. Small bodies are therefore written as stored
//! (uncompressed) deflate blocks, which git reads like any other zlib stream; only bodies that
//! compression would make noticeably smaller on the wire go through one compressor, reused.

use flate2::{Compress, Compression, FlushCompress, Status};

/// Bodies shorter than this are stored: deflate would save at most a few KiB of a push.
pub const STORE_BELOW: usize = 4096;

/// The largest stored deflate block (its length is 16 bits): a stored body fits one.
const MAX_STORED_BLOCK: usize = 0xffff;
const _: () = assert!(STORE_BELOW - 1 <= MAX_STORED_BLOCK);

/// Writes zlib streams, keeping the compressor of the first body large enough to need one.
#[derive(Default)]
pub struct ZlibWriter {
    compressor: Option<Compress>,
}

impl ZlibWriter {
    /// Appends the zlib stream of `parts` (concatenated) to `out`.
    pub fn append(&mut self, out: &mut Vec<u8>, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len < STORE_BELOW {
            append_stored(out, parts);
        } else {
            self.append_compressed(out, parts, len);
        }
    }

    fn append_compressed(&mut self, out: &mut Vec<u8>, parts: &[&[u8]], len: usize) {
        let compressor = self.compressor.get_or_insert_with(|| {
            // `fast`: a push is waited for; the remote repacks later anyway.
            Compress::new(Compression::fast(), true)
        });
        compressor.reset();
        // Room for the worst case (incompressible data grows by a few bytes per 16 KiB).
        out.reserve(len + len / 1000 + 64);
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let flush = if last {
                FlushCompress::Finish
            } else {
                FlushCompress::None
            };
            let mut input: &[u8] = part;
            loop {
                if out.capacity() - out.len() < 64 {
                    out.reserve(out.capacity().max(4096));
                }
                let before = compressor.total_in();
                let status = compressor
                    .compress_vec(input, out, flush)
                    .expect("deflate into a Vec does not fail");
                input = &input[(compressor.total_in() - before) as usize..];
                match status {
                    Status::StreamEnd => break,
                    _ if !last && input.is_empty() => break,
                    _ => {}
                }
            }
        }
    }
}

/// A zlib stream of one stored deflate block: the two-byte header (deflate, 32 KiB window,
/// fastest level, check bits), the final block's header with its length, the data, and the
/// Adler-32 of the data. Only bodies under [`STORE_BELOW`] come here, so one block holds them.
fn append_stored(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len = u16::try_from(len).expect("stored bodies fit one block");
    out.reserve(2 + 5 + usize::from(len) + 4);
    out.extend_from_slice(&[0x78, 0x01]);
    out.push(1); // BFINAL, BTYPE 00: the last block, stored.
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    let mut adler = adler2::Adler32::new();
    for part in parts {
        out.extend_from_slice(part);
        adler.write_slice(part);
    }
    out.extend_from_slice(&adler.checksum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn inflate(stream: &[u8]) -> Vec<u8> {
        let mut data = Vec::new();
        let mut decoder = flate2::read::ZlibDecoder::new(stream);
        decoder.read_to_end(&mut data).expect("a valid zlib stream");
        // Nothing after the stream's end.
        assert_eq!(decoder.total_in() as usize, stream.len());
        data
    }

    #[test]
    fn every_size_and_split_inflates_back_to_the_parts_joined() {
        let mut writer = ZlibWriter::default();
        let text: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for len in [
            0,
            1,
            5,
            STORE_BELOW - 1,
            STORE_BELOW,
            MAX_STORED_BLOCK,
            MAX_STORED_BLOCK + 1,
            2 * MAX_STORED_BLOCK + 3,
            200_000,
        ] {
            let body = &text[..len];
            for split in [0, len / 3, len] {
                let (head, tail) = body.split_at(split);
                let mut out = b"before".to_vec();
                writer.append(&mut out, &[head, tail]);
                assert_eq!(&out[..6], b"before");
                assert_eq!(inflate(&out[6..]), body, "{len} bytes split at {split}");
            }
        }
    }

    #[test]
    fn small_bodies_are_stored_and_large_ones_compressed() {
        let mut writer = ZlibWriter::default();
        let small = vec![b'x'; STORE_BELOW - 1];
        let mut out = Vec::new();
        writer.append(&mut out, &[&small]);
        // Header, one block header, the data, the checksum: no compressor was made.
        assert_eq!(out.len(), 2 + 5 + small.len() + 4);
        assert!(writer.compressor.is_none());
        let large = vec![b'x'; STORE_BELOW];
        let mut out = Vec::new();
        writer.append(&mut out, &[&large]);
        assert!(out.len() < 100, "{} bytes", out.len());
        assert!(writer.compressor.is_some());
    }
}
