//! The reporter for CI runs: one checklist comment per thread, created once, found again by its
//! stored id or else by its marker and Replan's own authorship, edited in place (throttled), and
//! notices as separate comments. A comment someone else wrote is never edited.

use super::checklist::{self, ChecklistContext};
use super::markers::CHECKLIST_MARKER;
use super::{Notice, Reporter, notice};
use crate::forge::marker::{find_comment, with_marker};
use crate::forge::{CommentRef, Forge};
use crate::history::SessionState;
use crate::history::effects::{EffectJournal, Intent};
use crate::history::entry::EffectKind;
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
}

pub struct ForgeReporter {
    forge: Arc<dyn Forge>,
    thread: ThreadRef,
    ctx: ChecklistContext,
    redact: Redact,
    min_interval: Duration,
    /// Config `github.bot_login` / `gitlab.bot_login`: who Replan posts as, when set.
    bot_login: Option<String>,
    /// Where a notice's key is recorded before it is posted (None: notices carry no key).
    effects: Option<Arc<dyn EffectJournal>>,
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
            bot_login: None,
            effects: None,
            posted: Mutex::new(Posted::default()),
        }
    }

    /// Minimum time between two edits of the checklist (GitHub's secondary rate limits punish bursts).
    pub fn with_min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// The login Replan posts as, when configured; otherwise the forge is asked.
    pub fn with_bot_login(mut self, login: Option<String>) -> Self {
        self.bot_login = login.filter(|l| !l.trim().is_empty());
        self
    }

    /// Notices become idempotent forge writes: their key is recorded in `effects` before each is
    /// posted, and a notice whose key the history already holds is looked up by its marker first.
    pub fn with_effects(mut self, effects: Arc<dyn EffectJournal>) -> Self {
        self.effects = Some(effects);
        self
    }

    /// Post `body` as a notice comment.
    async fn post_notice(&self, body: &str) -> Option<String> {
        match self.forge.post_comment(&self.thread, body).await {
            Ok(comment) => Some(comment.id),
            Err(e) => {
                tracing::warn!("could not post a notice: {e}");
                None
            }
        }
    }

    /// The notice comment an earlier attempt posted under `key`, when the history says it may
    /// have; else the intent is recorded now. A failed look-up or record still posts: a notice
    /// twice is better than none.
    async fn posted_before(
        &self,
        effects: &dyn EffectJournal,
        state: &SessionState,
        key: &str,
    ) -> Option<String> {
        if state.effect_keys.contains(key) || effects.recorded(key).is_some() {
            match find_comment(self.forge.as_ref(), &self.thread, key).await {
                Ok(Some(comment)) => return Some(comment.id),
                Ok(None) => return None,
                Err(e) => tracing::warn!("could not look for an earlier notice: {e}"),
            }
        }
        let intent = Intent {
            key: key.to_owned(),
            effect: EffectKind::Comment,
            target: None,
        };
        if let Err(e) = effects.record(intent).await {
            tracing::warn!("{e}; posting the notice anyway");
        }
        None
    }

    /// The stored id wins; otherwise the comment with our marker that Replan itself wrote.
    /// `Err` when the comments could not be listed: posting a new checklist then could make a
    /// second one, so the caller holds the body and tries again later.
    async fn existing_id(&self, state: &SessionState) -> Result<Option<String>, ()> {
        if let Some(id) = &state.checklist_comment_id {
            return Ok(Some(id.clone()));
        }
        let comments = self.forge.comments(&self.thread).await.map_err(|e| {
            tracing::warn!("could not list comments to find the checklist: {e}");
        })?;
        let marked: Vec<_> = comments
            .into_iter()
            .filter(|c| c.body.trim_start().starts_with(CHECKLIST_MARKER))
            .collect();
        if marked.is_empty() {
            return Ok(None);
        }
        let own = match &self.bot_login {
            Some(login) => Some(login.clone()),
            None => self.forge.own_login().await,
        };
        let Some(own) = own else {
            tracing::warn!(
                "a comment carries the checklist marker but Replan's own login is unknown (set `bot_login`); posting a new checklist"
            );
            return Ok(None);
        };
        let own = own.trim().trim_start_matches('@');
        Ok(marked
            .into_iter()
            .find(|c| c.author.eq_ignore_ascii_case(own))
            .map(|c| c.id))
    }

    /// Send `body` now; returns the id when the comment was created by this call.
    async fn send(
        &self,
        posted: &mut Posted,
        state: &SessionState,
        body: String,
    ) -> Option<String> {
        if posted.comment_id.is_none() {
            match self.existing_id(state).await {
                Ok(id) => posted.comment_id = id,
                Err(()) => return None,
            }
        }
        let mut created = None;
        match &posted.comment_id {
            Some(id) => {
                if let Err(e) = self
                    .forge
                    .update_comment(
                        CommentRef {
                            thread: &self.thread,
                            id,
                        },
                        &body,
                    )
                    .await
                {
                    tracing::warn!("could not update the checklist comment {id}: {e}");
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
                    return None;
                }
            },
        }
        posted.last_body = Some(body);
        posted.last_update = Some(Instant::now());
        created
    }
}

#[async_trait]
impl Reporter for ForgeReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        let mut posted = self.posted.lock().await;
        let throttled = posted
            .last_update
            .is_some_and(|at| at.elapsed() < self.min_interval);
        // A throttled update is not sent, so it is not rendered either (a fast cycle reports
        // progress after every step); `finish` renders and sends the final state.
        if throttled && posted.comment_id.is_some() {
            return None;
        }
        let body = (self.redact)(&checklist::render(state, &self.ctx));
        if posted.last_body.as_deref() == Some(body.as_str()) {
            return None;
        }
        self.send(&mut posted, state, body).await
    }

    async fn notice(&self, state: &SessionState, notice: &Notice) -> Option<String> {
        let body = (self.redact)(&notice::render(notice, chrono::Utc::now()));
        let Some(effects) = &self.effects else {
            return self.post_notice(&body).await;
        };
        let key = notice::key(&self.thread, state.plan_version, notice);
        if let Some(id) = self.posted_before(effects.as_ref(), state, &key).await {
            tracing::info!(
                "notice already posted as comment {id} by an earlier attempt; not posted again"
            );
            return Some(id);
        }
        self.post_notice(&with_marker(&body, &key)).await
    }

    async fn finish(&self, state: &SessionState) {
        let body = (self.redact)(&checklist::render(state, &self.ctx));
        let mut posted = self.posted.lock().await;
        if posted.last_body.as_deref() != Some(body.as_str()) {
            self.send(&mut posted, state, body).await;
        }
    }
}
