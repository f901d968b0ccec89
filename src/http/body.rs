//! Reading a response body up to a cap, chunk by chunk, so an endless or huge answer is refused
//! after at most `cap` bytes in memory.

/// The body, or `Err(Some(declared))`/`Err(None)` when it is larger than `cap` (by its
/// `Content-Length` or by what arrived). Transport errors come back as `Ok(Err(..))`.
pub async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Result<Vec<u8>, reqwest::Error>, Option<u64>> {
    if let Some(declared) = response.content_length()
        && declared > cap as u64
    {
        return Err(Some(declared));
    }
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > cap {
                    return Err(None);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(Ok(bytes)),
            Err(e) => return Ok(Err(e)),
        }
    }
}
