//! A reporter that tells no one: the benches measure the cycle, not its reports.

use async_trait::async_trait;
use replan::history::SessionState;
use replan::report::{Notice, Reporter};

pub struct Quiet;

#[async_trait]
impl Reporter for Quiet {
    async fn progress(&self, _state: &SessionState) -> Option<String> {
        None
    }
    async fn notice(&self, _state: &SessionState, _notice: &Notice) -> Option<String> {
        None
    }
    async fn finish(&self, _state: &SessionState) {}
}
