//! The end of a long text answer (a CI job's log): only the last bytes are kept, however long
//! the answer, so a log of any size costs a bounded amount of memory.

/// The last `keep` bytes of the body (lossy UTF-8, cut at a line start when one is near).
pub async fn read_tail(
    mut response: reqwest::Response,
    keep: usize,
) -> Result<String, reqwest::Error> {
    let mut tail: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                tail.extend_from_slice(&chunk);
                if tail.len() > keep {
                    tail.drain(..tail.len() - keep);
                    cut = true;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(e),
        }
    }
    let text = String::from_utf8_lossy(&tail).into_owned();
    Ok(match (cut, text.find('\n')) {
        (true, Some(newline)) if newline + 1 < text.len() => text[newline + 1..].to_owned(),
        _ => text,
    })
}
