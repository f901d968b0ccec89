//! Remembers the pull request a run opened (for the `pull_request` step output): a forge layer
//! over the run's forge.

use crate::forge::layer::ForgeLayer;
use crate::forge::{Forge, ForgeResult, PullRequestRef, PullRequestRequest};
use async_trait::async_trait;
use std::sync::Mutex;

#[derive(Default)]
pub struct PrRecorder {
    opened: Mutex<Option<PullRequestRef>>,
}

impl PrRecorder {
    pub fn opened(&self) -> Option<PullRequestRef> {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn remember(&self, pr: &PullRequestRef) {
        *self.opened.lock().unwrap_or_else(|e| e.into_inner()) = Some(pr.clone());
    }
}

#[async_trait]
impl ForgeLayer for PrRecorder {
    async fn open_pull_request(
        &self,
        next: &dyn Forge,
        request: &PullRequestRequest,
    ) -> ForgeResult<PullRequestRef> {
        let opened = next.open_pull_request(request).await?;
        self.remember(&opened);
        Ok(opened)
    }

    /// One found again counts as opened by this run (it is this run's effect, resumed).
    async fn find_pull_request(
        &self,
        next: &dyn Forge,
        key: &str,
    ) -> ForgeResult<Option<PullRequestRef>> {
        let found = next.find_pull_request(key).await?;
        if let Some(pr) = &found {
            self.remember(pr);
        }
        Ok(found)
    }
}
