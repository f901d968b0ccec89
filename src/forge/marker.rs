//! Idempotency markers: a hidden `<!-- replan:key=… -->` line in the body of everything Replan
//! creates on a forge (comments, notes, pull and merge requests), so that a write whose outcome is
//! unknown — an answer lost to a 5xx or a time-out, a job killed right after the call — can be
//! found again instead of repeated.

use super::{Comment, Forge, ForgeResult};
use crate::trigger::ThreadRef;
use sha2::{Digest, Sha256};

const PREFIX: &str = "<!-- replan:key=";
const SUFFIX: &str = " -->";

/// A key from the parts that make an effect the same effect (thread, tool, arguments).
pub fn key_for(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    hex::encode(&hasher.finalize()[..12])
}

/// The hidden line for `key`.
pub fn marker(key: &str) -> String {
    format!("{PREFIX}{key}{SUFFIX}")
}

/// `body` with the marker of `key` as its last line (once).
pub fn with_marker(body: &str, key: &str) -> String {
    let marker = marker(key);
    if body.contains(&marker) {
        body.to_owned()
    } else {
        format!("{}\n\n{marker}", body.trim_end())
    }
}

/// The key of the marker in `body`, if it has one.
pub fn key_in(body: &str) -> Option<&str> {
    let start = body.find(PREFIX)? + PREFIX.len();
    let rest = &body[start..];
    let end = rest.find(SUFFIX)?;
    let key = &rest[..end];
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(key)
}

/// The comment on `thread` whose body carries the marker of `key`: one an earlier attempt posted.
/// It reads [`Forge::comments`], so a forge layer that adds comments (a bundle's recorded ones)
/// is searched too.
pub async fn find_comment(
    forge: &dyn Forge,
    thread: &ThreadRef,
    key: &str,
) -> ForgeResult<Option<Comment>> {
    let comments = forge.comments(thread).await?;
    Ok(comments.into_iter().find(|c| key_in(&c.body) == Some(key)))
}

/// A reply in a review thread, unless the thread already holds the reply with the same key (an
/// earlier attempt's: a retried run or publish). `Ok(false)` when it was there already. A body
/// without a key is posted as it is.
pub async fn reply_once(
    forge: &dyn Forge,
    at: super::ReviewThreadRef<'_>,
    body: &str,
) -> ForgeResult<bool> {
    if let Some(key) = key_in(body) {
        let threads = forge.review_threads(at.pull_request).await?;
        let posted = threads
            .iter()
            .filter(|t| t.id == at.thread)
            .flat_map(|t| &t.comments)
            .any(|c| key_in(&c.body) == Some(key));
        if posted {
            tracing::info!(
                "the reply in review thread {} was posted by an earlier attempt",
                at.thread
            );
            return Ok(false);
        }
    }
    forge.reply_to_review_thread(at, body).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_body_gives_its_key_back() {
        let key = key_for(&["issue#3", "post_comment", "{\"body\":\"hi\"}"]);
        assert_eq!(key.len(), 24);
        let body = with_marker("hello\n", &key);
        assert_eq!(body, format!("hello\n\n<!-- replan:key={key} -->"));
        assert_eq!(with_marker(&body, &key), body);
        assert_eq!(key_in(&body), Some(key.as_str()));
        assert_eq!(key_in("no marker"), None);
        assert_eq!(key_in("<!-- replan:key=<script> -->"), None);
        assert_ne!(
            key,
            key_for(&["issue#3", "post_comment", "{\"body\":\"ho\"}"])
        );
    }
}
