//! The one forge decorator: [`Layered`] forwards every [`Forge`] method, in this file only,
//! through a [`ForgeLayer`]'s hooks. Redaction (`outbound`), split-trust recording (`bundle`) and
//! remembering the opened pull request (`app`) are layers, so none of them can forget a method:
//! a method added to `Forge` is forwarded here once, for all of them.

use super::{
    Comment, CommentRef, Forge, ForgeResult, Permission, PullRequestRef, PullRequestRequest,
    Reaction, ReactionTarget, ReviewThreadRef, Thread,
};
use crate::trigger::{ForgeKind, ReviewThread, ThreadRef};
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

    async fn comments(&self, next: &dyn Forge, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        next.comments(thread).await
    }

    async fn comment(&self, next: &dyn Forge, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        next.comment(at).await
    }

    async fn find_pull_request(
        &self,
        next: &dyn Forge,
        key: &str,
    ) -> ForgeResult<Option<PullRequestRef>> {
        next.find_pull_request(key).await
    }

    async fn post_comment(
        &self,
        next: &dyn Forge,
        thread: &ThreadRef,
        body: &str,
    ) -> ForgeResult<Comment> {
        next.post_comment(thread, body).await
    }

    async fn update_comment(
        &self,
        next: &dyn Forge,
        at: CommentRef<'_>,
        body: &str,
    ) -> ForgeResult<()> {
        next.update_comment(at, body).await
    }

    async fn react(
        &self,
        next: &dyn Forge,
        target: ReactionTarget<'_>,
        reaction: Reaction,
    ) -> ForgeResult<()> {
        next.react(target, reaction).await
    }

    async fn open_pull_request(
        &self,
        next: &dyn Forge,
        request: &PullRequestRequest,
    ) -> ForgeResult<PullRequestRef> {
        next.open_pull_request(request).await
    }

    async fn update_pull_request_section(
        &self,
        next: &dyn Forge,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        next.update_pull_request_section(pull_request, section)
            .await
    }

    async fn reply_to_review_thread(
        &self,
        next: &dyn Forge,
        at: ReviewThreadRef<'_>,
        body: &str,
    ) -> ForgeResult<()> {
        next.reply_to_review_thread(at, body).await
    }

    async fn resolve_review_thread(
        &self,
        next: &dyn Forge,
        at: ReviewThreadRef<'_>,
    ) -> ForgeResult<()> {
        next.resolve_review_thread(at).await
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

    fn next(&self) -> &dyn Forge {
        self.inner.as_ref()
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

    async fn thread(&self, thread: &ThreadRef) -> ForgeResult<Thread> {
        self.inner.thread(thread).await
    }

    async fn comments(&self, thread: &ThreadRef) -> ForgeResult<Vec<Comment>> {
        self.layer.comments(self.next(), thread).await
    }

    async fn comment(&self, at: CommentRef<'_>) -> ForgeResult<Option<Comment>> {
        self.layer.comment(self.next(), at).await
    }

    async fn own_login(&self) -> Option<String> {
        self.inner.own_login().await
    }

    async fn post_comment(&self, thread: &ThreadRef, body: &str) -> ForgeResult<Comment> {
        let body = self.layer.outgoing(body);
        self.layer.post_comment(self.next(), thread, &body).await
    }

    async fn update_comment(&self, at: CommentRef<'_>, body: &str) -> ForgeResult<()> {
        let body = self.layer.outgoing(body);
        self.layer.update_comment(self.next(), at, &body).await
    }

    async fn permission(&self, user: &str) -> ForgeResult<Permission> {
        self.inner.permission(user).await
    }

    async fn branch_tip(&self, branch: &str) -> ForgeResult<Option<String>> {
        self.inner.branch_tip(branch).await
    }

    async fn ci_failures(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Vec<super::ci::CiFailure>> {
        self.inner.ci_failures(run).await
    }

    async fn confirm_ci_run(
        &self,
        run: &crate::trigger::CiRun,
    ) -> ForgeResult<Option<crate::trigger::CiRun>> {
        self.inner.confirm_ci_run(run).await
    }

    async fn latest_ci_run(&self, branch: &str) -> ForgeResult<Option<crate::trigger::CiRun>> {
        self.inner.latest_ci_run(branch).await
    }

    async fn react(&self, target: ReactionTarget<'_>, reaction: Reaction) -> ForgeResult<()> {
        self.layer.react(self.next(), target, reaction).await
    }

    async fn open_pull_request(&self, request: &PullRequestRequest) -> ForgeResult<PullRequestRef> {
        let request = PullRequestRequest {
            head: request.head.clone(),
            base: request.base.clone(),
            title: self.layer.outgoing(&request.title),
            body: self.layer.outgoing(&request.body),
        };
        self.layer.open_pull_request(self.next(), &request).await
    }

    async fn update_pull_request_section(
        &self,
        pull_request: &PullRequestRef,
        section: &str,
    ) -> ForgeResult<()> {
        let section = self.layer.outgoing(section);
        self.layer
            .update_pull_request_section(self.next(), pull_request, &section)
            .await
    }

    async fn find_pull_request(&self, key: &str) -> ForgeResult<Option<PullRequestRef>> {
        self.layer.find_pull_request(self.next(), key).await
    }

    async fn review_threads(&self, pull_request: u64) -> ForgeResult<Vec<ReviewThread>> {
        self.inner.review_threads(pull_request).await
    }

    async fn reply_to_review_thread(&self, at: ReviewThreadRef<'_>, body: &str) -> ForgeResult<()> {
        let body = self.layer.outgoing(body);
        self.layer
            .reply_to_review_thread(self.next(), at, &body)
            .await
    }

    async fn resolve_review_thread(&self, at: ReviewThreadRef<'_>) -> ForgeResult<()> {
        self.layer.resolve_review_thread(self.next(), at).await
    }
}
