//! Remembers the pull request a run opened (for the `pull_request` step output) while passing
//! every call through to the real forge.

use crate::forge::{
    Comment, Forge, ForgeError, Permission, PullRequestRef, PullRequestRequest, Reaction, Thread,
};
use crate::trigger::gate::Permission as GatePermission;
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

pub struct PrRecorder {
    inner: Arc<dyn Forge>,
    opened: Mutex<Option<PullRequestRef>>,
}

impl PrRecorder {
    pub fn new(inner: Arc<dyn Forge>) -> Self {
        PrRecorder {
            inner,
            opened: Mutex::new(None),
        }
    }

    pub fn opened(&self) -> Option<PullRequestRef> {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl Forge for PrRecorder {
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
        self.inner.post_comment(thread, body).await
    }

    async fn update_comment(
        &self,
        thread: &ThreadRef,
        comment_id: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        self.inner.update_comment(thread, comment_id, body).await
    }

    async fn permission(&self, user: &str) -> Result<Permission, ForgeError> {
        self.inner.permission(user).await
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
        let opened = self.inner.open_pull_request(request).await?;
        *self.opened.lock().unwrap_or_else(|e| e.into_inner()) = Some(opened.clone());
        Ok(opened)
    }

    async fn find_comment(
        &self,
        thread: &ThreadRef,
        key: &str,
    ) -> Result<Option<Comment>, ForgeError> {
        self.inner.find_comment(thread, key).await
    }

    /// One found again counts as opened by this run (it is this run's effect, resumed).
    async fn find_pull_request(&self, key: &str) -> Result<Option<PullRequestRef>, ForgeError> {
        let found = self.inner.find_pull_request(key).await?;
        if let Some(pr) = &found {
            *self.opened.lock().unwrap_or_else(|e| e.into_inner()) = Some(pr.clone());
        }
        Ok(found)
    }
}
