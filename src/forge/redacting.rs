//! The forge exit of the one redactor: every text a run sends to the forge (comments, notes,
//! pull / merge request titles and bodies, whoever composed them: reporters, the model's tools,
//! refusal replies) is redacted with [`crate::outbound::redact`] on its way out.

use super::Forge;
use super::layer::{ForgeLayer, Layered};
use std::sync::Arc;

/// The layer: [`ForgeLayer::outgoing`] is applied by [`Layered`] to every text of every write,
/// so no write method can pass it by.
pub struct Redaction;

impl ForgeLayer for Redaction {
    fn outgoing(&self, text: &str) -> String {
        crate::outbound::redact(text)
    }
}

/// `forge` with redaction on top; wrapping twice is harmless.
pub fn redacting(forge: Arc<dyn Forge>) -> Arc<dyn Forge> {
    Arc::new(Layered::new(forge, Redaction))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::local::LocalForge;
    use crate::forge::{CommentRef, PullRequestRequest};
    use crate::trigger::ThreadRef;
    use std::path::Path;

    fn files_under(dir: &Path) -> Vec<String> {
        let mut texts = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                texts.extend(files_under(&path));
            } else {
                texts.push(String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned());
            }
        }
        texts
    }

    /// Every write of the `Forge` trait, through the stack a run hands out, with a secret in
    /// each text: the forge below stores none of them.
    #[tokio::test]
    async fn no_forge_write_passes_the_redaction_by() {
        let canary = "canary-secret-7d41e09b";
        crate::outbound::add_secrets([canary]);
        let dir = tempfile::tempdir().unwrap();
        let local = Arc::new(LocalForge::new(dir.path()));
        let thread = ThreadRef::issue(1);
        local
            .create_thread(thread, "goal", "body", "me")
            .await
            .unwrap();
        let forge = redacting(redacting(local));
        let text = format!("token {canary} here");
        let posted = forge.post_comment(&thread, &text).await.unwrap();
        forge
            .update_comment(
                CommentRef {
                    thread: &thread,
                    id: &posted.id,
                },
                &text,
            )
            .await
            .unwrap();
        forge
            .open_pull_request(&PullRequestRequest {
                head: "replan/1".into(),
                base: "main".into(),
                title: text.clone(),
                body: text.clone(),
            })
            .await
            .unwrap();
        let stored = files_under(dir.path()).join("\n");
        assert!(stored.contains("token *** here"), "{stored}");
        assert!(!stored.contains(canary), "{stored}");
        assert!(!posted.body.contains(canary));
    }
}
