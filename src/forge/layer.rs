//! The one forge decorator: [`Layered`] forwards every [`Forge`] method, in this file only,
//! through a [`ForgeLayer`]'s hooks. Redaction (`outbound`), split-trust recording (`bundle`) and
//! remembering the opened pull request (`app`) are layers, so none of them can forget a method:
//! a method added to `Forge` is forwarded here once, for all of them.

use super::Thread;
use super::{Comment, Forge, ForgeError, Permission, PullRequestRef, PullRequestRequest, Reaction};
use crate::trigger::gate::Permission as GatePermission;
use crate::trigger::{ForgeKind, ThreadRef};
use async_trait::async_trait;
use std::sync::Arc;

/// What a decorator adds to the forge below it (`next`). Every hook defaults to passing the call
/// on unchanged; a layer overrides the ones it needs.
#[async_trait]
pub trait ForgeLayer: Send + Sync {
    /// Every text Replan asks the forge to write (comment bodies, pull request titles and
    /// bodies) passes here before the write hooks see it.
    fn outgoing(&self, text: &str) -> String {
        text.to_owned()
    }

    async fn comments(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
    ) -> Result<Vec<Comment>, ForgeError> {
        next.comments(thread).await
    }

    async fn comment(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        id: &str,
    ) -> Result<Option<Comment>, ForgeError> {
        next.comment(thread, id).await
    }

    async fn find_comment(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        key: &str,
    ) -> Result<Option<Comment>, ForgeError> {
        next.find_comment(thread, key).await
    }

    async fn find_pull_request(
        &self,
        next: &dyn Forge,
        key: &str,
    ) -> Result<Option<PullRequestRef>, ForgeError> {
        next.find_pull_request(key).await
    }

    async fn post_comment(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        next.post_comment(thread, body).await
    }

    async fn update_comment(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        comment_id: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        next.update_comment(thread, comment_id, body).await
    }

    async fn react(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        comment_id: Option<&str>,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        next.react(thread, comment_id, reaction).await
    }

    async fn open_pull_request(
        &self,
        next: &dyn Forge,
        request: &PullRequestRequest,
    ) -> Result<PullRequestRef, ForgeError> {
        next.open_pull_request(request).await
    }
}

/// A forge with a layer on top.
pub struct Layered<L> {
    inner: Arc<dyn Forge>,
    layer: L,
}

impl<L: ForgeLayer> Layered<L> {
    pub fn new(inner: Arc<dyn Forge>, layer: L) -> Self {
        Layered { inner, layer }
    }

    pub fn layer(&self) -> &L {
        &self.layer
    }
}

#[async_trait]
impl<L: ForgeLayer> Forge for Layered<L> {
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
        self.layer.comments(self.inner.as_ref(), thread).await
    }

    async fn comment(&self, thread: &ThreadRef, id: &str) -> Result<Option<Comment>, ForgeError> {
        self.layer.comment(self.inner.as_ref(), thread, id).await
    }

    async fn own_login(&self) -> Option<String> {
        self.inner.own_login().await
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> Result<Comment, ForgeError> {
        let body = self.layer.outgoing(body);
        self.layer
            .post_comment(self.inner.as_ref(), thread, &body)
            .await
    }

    async fn update_comment(
        &self,
        thread: &ThreadRef,
        comment_id: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        let body = self.layer.outgoing(body);
        self.layer
            .update_comment(self.inner.as_ref(), thread, comment_id, &body)
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
        self.layer
            .react(self.inner.as_ref(), thread, comment_id, reaction)
            .await
    }

    async fn open_pull_request(
        &self,
        request: &PullRequestRequest,
    ) -> Result<PullRequestRef, ForgeError> {
        let request = PullRequestRequest {
            head: request.head.clone(),
            base: request.base.clone(),
            title: self.layer.outgoing(&request.title),
            body: self.layer.outgoing(&request.body),
        };
        self.layer
            .open_pull_request(self.inner.as_ref(), &request)
            .await
    }

    async fn find_comment(
        &self,
        thread: &ThreadRef,
        key: &str,
    ) -> Result<Option<Comment>, ForgeError> {
        self.layer
            .find_comment(self.inner.as_ref(), thread, key)
            .await
    }

    async fn find_pull_request(&self, key: &str) -> Result<Option<PullRequestRef>, ForgeError> {
        self.layer.find_pull_request(self.inner.as_ref(), key).await
    }

    async fn gate_permission(&self, user: &str) -> GatePermission {
        self.inner.gate_permission(user).await
    }
}
