//! Server-sent events as they arrive in chunks: the `data` of each event, its lines joined,
//! once the blank line that ends it has come. Event names, ids and comments are not needed by
//! the LLM wire formats (each data line says its own type) and are skipped.

#[derive(Debug, Default)]
pub struct Events {
    /// Bytes of a line not yet ended.
    pending: Vec<u8>,
    /// Data lines of the event being read.
    data: Vec<String>,
}

impl Events {
    /// The events that `chunk` completes.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut done = Vec::new();
        for &byte in chunk {
            if byte != b'\n' {
                self.pending.push(byte);
                continue;
            }
            let mut line = std::mem::take(&mut self.pending);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(data) = self.line(&line) {
                done.push(data);
            }
        }
        done
    }

    /// The last event when the stream ends without the blank line that would close it.
    pub fn finish(&mut self) -> Option<String> {
        let line = std::mem::take(&mut self.pending);
        if !line.is_empty() {
            self.line(&line);
        }
        self.line(b"")
    }

    fn line(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            return (!self.data.is_empty()).then(|| std::mem::take(&mut self.data).join("\n"));
        }
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            self.data.push(String::from_utf8_lossy(value).into_owned());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings_come_out_whole() {
        let mut events = Events::default();
        let mut seen = events.push(b"event: a\r\ndata: {\"x\":");
        assert!(seen.is_empty());
        seen.extend(events.push(b" 1}\r\n\r\n: comment\n\ndata: two\ndata: lines\n"));
        seen.extend(events.push(b"\ndata:last"));
        assert_eq!(seen, ["{\"x\": 1}", "two\nlines"]);
        assert_eq!(events.finish().as_deref(), Some("last"));
        assert_eq!(events.finish(), None);
    }
}
