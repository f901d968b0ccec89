//! The reporter for CI runs: one checklist comment per thread, created once, found again by its
//! marker or stored id, edited in place (throttled), and notices as separate comments.

use super::checklist::{self, ChecklistContext};
use super::markers::CHECKLIST_MARKER;
use super::{Notice, Reporter, notice};
use crate::forge::Forge;
use crate::history::SessionState;
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// Applied to every body before it leaves the process, so no secret reaches a comment.
pub type Redact = Arc<dyn Fn(&str) -> String + Send + Sync>;

#[derive(Default)]
struct Posted {
    comment_id: Option<String>,
    last_body: Option<String>,
    last_update: Option<Instant>,
    /// A newer body that the throttle held back; `finish` sends it.
    held: Option<String>,
}

pub struct ForgeReporter {
    forge: Arc<dyn Forge>,
    thread: ThreadRef,
    ctx: ChecklistContext,
    redact: Redact,
    min_interval: Duration,
    posted: Mutex<Posted>,
}

impl ForgeReporter {
    pub fn new(
        forge: Arc<dyn Forge>,
        thread: ThreadRef,
        ctx: ChecklistContext,
        redact: Redact,
    ) -> Self {
        ForgeReporter {
            forge,
            thread,
            ctx,
            redact,
            min_interval: Duration::from_secs(3),
            posted: Mutex::new(Posted::default()),
        }
    }

    /// Minimum time between two edits of the checklist (GitHub's secondary rate limits punish bursts).
    pub fn with_min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// The stored id wins; otherwise look for our marker among the thread's comments.
    async fn existing_id(&self, state: &SessionState) -> Option<String> {
        if let Some(id) = &state.checklist_comment_id {
            return Some(id.clone());
        }
        match self.forge.comments(&self.thread).await {
            Ok(comments) => comments
                .into_iter()
                .find(|c| c.body.trim_start().starts_with(CHECKLIST_MARKER))
                .map(|c| c.id),
            Err(e) => {
                tracing::warn!("could not list comments to find the checklist: {e}");
                None
            }
        }
    }

    /// Send `body` now; returns the id when the comment was created by this call.
    async fn send(
        &self,
        posted: &mut Posted,
        state: &SessionState,
        body: String,
    ) -> Option<String> {
        if posted.comment_id.is_none() {
            posted.comment_id = self.existing_id(state).await;
        }
        let mut created = None;
        match &posted.comment_id {
            Some(id) => {
                if let Err(e) = self.forge.update_comment(&self.thread, id, &body).await {
                    tracing::warn!("could not update the checklist comment {id}: {e}");
                    posted.held = Some(body);
                    return None;
                }
            }
            None => match self.forge.post_comment(&self.thread, &body).await {
                Ok(comment) => {
                    posted.comment_id = Some(comment.id.clone());
                    created = Some(comment.id);
                }
                Err(e) => {
                    tracing::warn!("could not post the checklist comment: {e}");
                    posted.held = Some(body);
                    return None;
                }
            },
        }
        posted.last_body = Some(body);
        posted.last_update = Some(Instant::now());
        posted.held = None;
        created
    }
}

#[async_trait]
impl Reporter for ForgeReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        let body = (self.redact)(&checklist::render(state, &self.ctx));
        let mut posted = self.posted.lock().await;
        if posted.last_body.as_deref() == Some(body.as_str()) {
            posted.held = None;
            return None;
        }
        let throttled = posted
            .last_update
            .is_some_and(|at| at.elapsed() < self.min_interval);
        if throttled && posted.comment_id.is_some() {
            posted.held = Some(body);
            return None;
        }
        self.send(&mut posted, state, body).await
    }

    async fn notice(&self, _state: &SessionState, notice: &Notice) -> Option<String> {
        let body = (self.redact)(&notice::render(notice, chrono::Utc::now()));
        match self.forge.post_comment(&self.thread, &body).await {
            Ok(comment) => Some(comment.id),
            Err(e) => {
                tracing::warn!("could not post a notice: {e}");
                None
            }
        }
    }

    async fn finish(&self, state: &SessionState) {
        let body = (self.redact)(&checklist::render(state, &self.ctx));
        let mut posted = self.posted.lock().await;
        if posted.last_body.as_deref() != Some(body.as_str()) {
            self.send(&mut posted, state, body).await;
        }
    }
}
