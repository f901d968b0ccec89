//! The reporter for local runs: a progress bar on a terminal and readable notices.

use super::checklist::{self, ChecklistContext};
use super::{Notice, Reporter, notice};
use crate::history::SessionState;
use async_trait::async_trait;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::sync::Mutex;

pub struct TerminalReporter {
    bar: ProgressBar,
    ctx: ChecklistContext,
    /// Notices are printed here (stdout by default; a buffer in tests).
    out: Mutex<Box<dyn Write + Send>>,
}

impl TerminalReporter {
    pub fn new(ctx: ChecklistContext) -> Self {
        Self::with_output(ctx, Box::new(std::io::stdout()))
    }

    pub fn with_output(ctx: ChecklistContext, out: Box<dyn Write + Send>) -> Self {
        // indicatif hides itself when stderr is not a terminal, so CI logs stay clean.
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} tasks  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        TerminalReporter {
            bar,
            ctx,
            out: Mutex::new(out),
        }
    }

    fn print(&self, text: &str) {
        self.bar.suspend(|| {
            if let Ok(mut out) = self.out.lock() {
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
        });
    }
}

#[async_trait]
impl Reporter for TerminalReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        if let Some(plan) = &state.plan {
            let (done, total) = checklist::progress(plan, &|id| state.task_state(id));
            self.bar.set_length(total as u64);
            self.bar.set_position(done as u64);
            self.bar
                .set_message(format!("plan #{}", state.plan_version));
        }
        None
    }

    async fn notice(&self, _state: &SessionState, notice: &Notice) -> Option<String> {
        let body = notice::render(notice, chrono::Utc::now());
        // The hidden marker means nothing on a terminal.
        let text = body.split_once('\n').map(|(_, rest)| rest).unwrap_or(&body);
        self.print(text);
        None
    }

    async fn finish(&self, state: &SessionState) {
        self.bar.finish_and_clear();
        let text = checklist::render(state, &self.ctx);
        let text = text.split_once('\n').map(|(_, rest)| rest).unwrap_or(&text);
        self.print(text);
    }
}
