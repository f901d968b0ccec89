//! Keeping tool output within a byte budget: the head and the tail survive, the middle is
//! replaced by a marker, because the end of a build log usually says what went wrong.

/// Collects a stream of bytes, keeping at most `cap` of them (half head, half tail).
#[derive(Debug)]
pub struct CappedBuffer {
    cap: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl CappedBuffer {
    pub fn new(cap: usize) -> Self {
        CappedBuffer {
            cap,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let head_cap = self.cap / 2;
        let mut rest = bytes;
        if self.head.len() < head_cap {
            let take = rest.len().min(head_cap - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        let tail_cap = self.cap - head_cap;
        self.tail.extend(rest.iter().copied());
        while self.tail.len() > tail_cap {
            self.tail.pop_front();
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// The kept text, with `… N bytes omitted …` where the middle was dropped.
    pub fn render(&self) -> String {
        let kept = self.head.len() + self.tail.len();
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            text.push_str(&format!("\n… {} bytes omitted …\n", self.total - kept));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// Cap a finished text the same way.
pub fn cap_text(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut buffer = CappedBuffer::new(cap);
    buffer.push(text.as_bytes());
    buffer.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(cap_text("hello", 10), "hello");
    }

    #[test]
    fn long_output_keeps_head_and_tail_with_a_marker() {
        let mut buffer = CappedBuffer::new(10);
        for chunk in ["0123", "456789", "abcdefghij", "XYZ"] {
            buffer.push(chunk.as_bytes());
        }
        assert_eq!(buffer.total(), 23);
        assert_eq!(buffer.render(), "01234\n… 13 bytes omitted …\nijXYZ");
    }
}
