//! The forge every part of a run writes through: each text it sends is redacted first.

use super::redact;
use crate::forge::{
    Comment, Forge, ForgeError, Permission, PullRequestRef, PullRequestRequest, Reaction, Thread,
};
use crate::trigger::gate::Permission as GatePermission;
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use std::sync::Arc;

/// Wraps a forge so that comments, notes and pull/merge request titles and bodies are redacted
/// on their way out, whoever composed them (reporters, the model's tools, refusal replies).
pub struct RedactingForge {
    inner: Arc<dyn Forge>,
}

impl RedactingForge {
    /// `forge` wrapped; wrapping twice is harmless.
    pub fn wrap(forge: Arc<dyn Forge>) -> Arc<dyn Forge> {
        Arc::new(RedactingForge { inner: forge })
    }
}

#[async_trait]
impl Forge for RedactingForge {
    fn kind(&self) -> ForgeKind {
        self.inner.kind()
    }

    fn run_url(&self) -> Option<String> {
        self.inner.run_url()
    }

    async fn thread(&self, thread: &ThreadRef) -> Result<Thread, ForgeError> {
        self.inner.thread(thread).await
    }

    async fn comments(&self, thread: &ThreadRef) -> Result<Vec<Comment>, ForgeError> {
        self.inner.comments(thread).await
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> Result<Comment, ForgeError> {
        self.inner.post_comment(thread, &redact(body)).await
    }

    async fn update_comment(
        &self,
        thread: &ThreadRef,
        comment_id: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        self.inner
            .update_comment(thread, comment_id, &redact(body))
            .await
    }

    async fn permission(&self, user: &str) -> Result<Permission, ForgeError> {
        self.inner.permission(user).await
    }

    async fn react(
        &self,
        thread: &ThreadRef,
        comment_id: Option<&str>,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        self.inner.react(thread, comment_id, reaction).await
    }

    async fn open_pull_request(
        &self,
        request: &PullRequestRequest,
    ) -> Result<PullRequestRef, ForgeError> {
        let redacted = PullRequestRequest {
            head: request.head.clone(),
            base: request.base.clone(),
            title: redact(&request.title),
            body: redact(&request.body),
        };
        self.inner.open_pull_request(&redacted).await
    }

    async fn gate_permission(&self, user: &str) -> GatePermission {
        self.inner.gate_permission(user).await
    }

    async fn comment(&self, thread: &ThreadRef, id: &str) -> Result<Option<Comment>, ForgeError> {
        self.inner.comment(thread, id).await
    }

    async fn own_login(&self) -> Option<String> {
        self.inner.own_login().await
    }

    async fn find_comment(
        &self,
        thread: &ThreadRef,
        key: &str,
    ) -> Result<Option<Comment>, ForgeError> {
        self.inner.find_comment(thread, key).await
    }

    async fn find_pull_request(&self, key: &str) -> Result<Option<PullRequestRef>, ForgeError> {
        self.inner.find_pull_request(key).await
    }
}
