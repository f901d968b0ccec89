//! Two reporters at once: a local run prints to the terminal and also writes its checklist and
//! notices into the local forge (`<local-dir>/threads/issues-N.json`), as a CI run does on the
//! forge, so the next local run finds them.

use super::{Notice, Reporter};
use crate::history::SessionState;
use async_trait::async_trait;
use std::sync::Arc;

pub struct TeeReporter {
    /// Its ids are the ones recorded in history (the forge's comment ids).
    pub primary: Arc<dyn Reporter>,
    pub also: Arc<dyn Reporter>,
}

#[async_trait]
impl Reporter for TeeReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        self.also.progress(state).await;
        self.primary.progress(state).await
    }

    async fn notice(&self, state: &SessionState, notice: &Notice) -> Option<String> {
        self.also.notice(state, notice).await;
        self.primary.notice(state, notice).await
    }

    async fn finish(&self, state: &SessionState) {
        self.also.finish(state).await;
        self.primary.finish(state).await;
    }
}
