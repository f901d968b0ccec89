//! git's pkt-line framing (`Documentation/gitprotocol-common`): four hex digits of length (the
//! four included), then the data; `0000` is a flush.

/// The largest data a pkt-line carries.
const MAX_DATA: usize = 65516;

pub const FLUSH: &[u8] = b"0000";

/// One pkt-line holding `data` (at most [`MAX_DATA`] bytes: the commands and reports of a push
/// are short lines).
pub fn encode(data: &[u8]) -> Vec<u8> {
    debug_assert!(data.len() <= MAX_DATA);
    let mut line = format!("{:04x}", data.len() + 4).into_bytes();
    line.extend_from_slice(data);
    line
}

/// What a pkt-line read yielded.
#[derive(Debug, PartialEq, Eq)]
pub enum Pkt {
    Data(Vec<u8>),
    Flush,
}

/// Read one pkt-line from `input`; `None` at the end of the input or on a malformed length.
pub fn read(input: &mut impl std::io::Read) -> Option<Pkt> {
    let mut head = [0u8; 4];
    input.read_exact(&mut head).ok()?;
    let len = usize::from_str_radix(std::str::from_utf8(&head).ok()?, 16).ok()?;
    match len {
        0 => Some(Pkt::Flush),
        // 0001 (delim) and 0002 (response end) belong to protocol v2, which a push never speaks.
        1..=4 => None,
        _ => {
            let mut data = vec![0u8; len - 4];
            input.read_exact(&mut data).ok()?;
            Some(Pkt::Data(data))
        }
    }
}

/// Data lines up to the next flush (its newline, if any, trimmed); `None` when the input ends
/// first.
pub fn read_until_flush(input: &mut impl std::io::Read) -> Option<Vec<Vec<u8>>> {
    let mut lines = Vec::new();
    loop {
        match read(input)? {
            Pkt::Flush => return Some(lines),
            Pkt::Data(mut data) => {
                if data.last() == Some(&b'\n') {
                    data.pop();
                }
                lines.push(data);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_as_written_up_to_the_flush() {
        let mut wire = encode(b"unpack ok\n");
        assert_eq!(&wire[..4], b"000e");
        wire.extend(encode(b"ok refs/heads/a"));
        wire.extend_from_slice(FLUSH);
        wire.extend(encode(b"after"));
        let mut input = wire.as_slice();
        assert_eq!(
            read_until_flush(&mut input).unwrap(),
            vec![b"unpack ok".to_vec(), b"ok refs/heads/a".to_vec()]
        );
        assert_eq!(read(&mut input), Some(Pkt::Data(b"after".to_vec())));
        assert_eq!(read(&mut input), None, "the end of the input");
        assert_eq!(read(&mut &b"zzzz"[..]), None, "not a length");
        assert_eq!(read_until_flush(&mut &encode(b"cut off")[..]), None);
    }
}
