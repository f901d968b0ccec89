//! Work that survives a fresh checkout: before the history commits a finished task, after
//! finished tasks (at most once per `history.save_work_every_seconds`; once no task is left to
//! run, at once and beside the final review) and at the end of the run the working tree
//! is committed to `replan/work/<thread>` and pushed,
//! and a run that resumes a thread on a clean checkout brings those files back before it goes
//! on. (A CI re-run starts from a new clone; without this the tasks already ticked off would have
//! lost their changes.)

use crate::history::SessionState;
use crate::report::{Notice, Reporter};
use crate::tools::git::{CommitAuthor, Publisher, Snapshots, restore_working_tree};
use crate::trigger::ThreadRef;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex;

/// `replan/work/issue-7`, `replan/work/pr-7`, `replan/work/mr-7`.
pub fn work_branch(thread: &ThreadRef) -> String {
    crate::tools::forge_tools::branch_prefix(thread).replacen("replan/", "replan/work/", 1)
}

/// Restore the thread's work branch into a clean checkout when the thread has a plan. Not only
/// when the history shows finished tasks: with `history.commit_every` batching a killed run may
/// have pushed the branch after a task whose entries never reached the history.
pub async fn restore(workspace: PathBuf, thread: ThreadRef, state: &SessionState) {
    if state.plan.is_none() {
        return;
    }
    let branch = work_branch(&thread);
    let restored =
        tokio::task::spawn_blocking(move || restore_working_tree(&workspace, &branch)).await;
    match restored {
        Ok(Ok(true)) => tracing::info!(
            "restored the changes of the finished tasks from `{}`",
            work_branch(&thread)
        ),
        Ok(Ok(false)) => {}
        Ok(Err(e)) => tracing::warn!(
            "could not restore the finished tasks' changes from `{}`: {}",
            work_branch(&thread),
            e.message
        ),
        Err(e) => tracing::warn!("restoring the work branch stopped: {e}"),
    }
}

/// A reporter that also saves the working tree after tasks finish and when the run ends.
pub struct WorkBranchReporter {
    inner: Arc<dyn Reporter>,
    workspace: PathBuf,
    thread: ThreadRef,
    publisher: Arc<dyn Publisher>,
    author: CommitAuthor,
    /// Tasks done at the last save, and what the saves so far know about the branch; held for
    /// the whole of a save, so whoever needs one waits for the save under way (owned guards: the
    /// last save of the run runs in a task of its own).
    saved: Arc<Mutex<(usize, Option<Snapshots>)>>,
    /// This reporter, for the task that makes the last save beside the run's final steps.
    me: std::sync::Weak<WorkBranchReporter>,
    /// Tasks done as the last progress report saw them: a save before the history commits
    /// holds at least their work, so the end of the run need not save the same tree again.
    seen_done: std::sync::atomic::AtomicUsize,
    /// When the branch was last saved, or the run started: saves between tasks are at most one
    /// per `interval` (each costs a few `git` processes and a push, which would dominate a
    /// fast cycle's overhead), counted from the start so a run shorter than that saves once, at
    /// its end (a run killed before then loses no more than one interval, as between saves).
    last_save: std::sync::Mutex<std::time::Instant>,
    interval: std::time::Duration,
    /// When the snapshot of the last save that reached the forge was taken (see
    /// [`crate::app::history_sink::BeforeCommit::saved_at`]).
    saved_at: std::sync::Mutex<Option<std::time::Instant>>,
}

impl WorkBranchReporter {
    pub fn new(
        inner: Arc<dyn Reporter>,
        workspace: PathBuf,
        thread: ThreadRef,
        publisher: Arc<dyn Publisher>,
        author: CommitAuthor,
        tasks_done: usize,
        interval: std::time::Duration,
    ) -> Arc<Self> {
        let reporter = Arc::new_cyclic(|me| WorkBranchReporter {
            inner,
            workspace,
            thread,
            publisher,
            author,
            saved: Arc::new(Mutex::new((tasks_done, None))),
            me: me.clone(),
            seen_done: std::sync::atomic::AtomicUsize::new(tasks_done),
            last_save: std::sync::Mutex::new(std::time::Instant::now()),
            interval,
            saved_at: std::sync::Mutex::new(None),
        });
        reporter.open_ahead();
        reporter
    }

    /// Find the branch and fill the snapshots' index now, beside the planning, instead of in
    /// the first save, which the history commit of the first finished tasks waits for. A
    /// failure here is left to that save, which opens again and reports it.
    fn open_ahead(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(mut saved) = self.saved.clone().try_lock_owned() else {
            return;
        };
        let (repo, name) = (self.workspace.clone(), work_branch(&self.thread));
        runtime.spawn(async move {
            let opened = tokio::task::spawn_blocking(move || Snapshots::open(&repo, &name)).await;
            if let Ok(Ok(snapshots)) = opened {
                saved.1 = Some(snapshots);
            }
        });
    }

    /// A save between tasks, skipped while the last one is younger than the interval.
    async fn save_between_tasks(&self, state: &SessionState) {
        self.seen_done
            .fetch_max(state.tasks_done(), std::sync::atomic::Ordering::Relaxed);
        if !self.saved_recently() {
            self.save(state).await;
        } else if no_task_left_to_run(state) {
            self.save_beside_the_final_steps(state).await;
        }
    }

    /// No task is left to run: the history will record the finished ones at the end of the run,
    /// after the final review and the completion summary (two model calls). The save they need
    /// starts now and runs beside those calls; the flush that commits them waits for it.
    async fn save_beside_the_final_steps(&self, state: &SessionState) {
        let done = state.tasks_done();
        let Some(me) = self.me.upgrade() else {
            return;
        };
        // Taken here, before the task starts, so a flush that follows cannot slip in first.
        let mut saved = self.saved.clone().lock_owned().await;
        if done <= saved.0 {
            return;
        }
        saved.0 = done;
        tokio::spawn(async move {
            let message = format!(
                "Replan: work on {} after {done} finished task(s)",
                me.thread
            );
            me.commit_and_push(&mut saved, message).await;
        });
    }

    /// The last save (or the start of the run) is younger than the interval.
    fn saved_recently(&self) -> bool {
        self.last_save
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            < self.interval
    }

    async fn save(&self, state: &SessionState) {
        let done = state.tasks_done();
        let mut saved = self.saved.lock().await;
        if done <= saved.0 {
            return;
        }
        saved.0 = done;
        let message = format!(
            "Replan: work on {} after {done} finished task(s)",
            self.thread
        );
        self.commit_and_push(&mut saved, message).await;
    }

    /// Commit the working tree to the work branch and push it when it changed.
    async fn commit_and_push(&self, saved: &mut (usize, Option<Snapshots>), message: String) {
        let started = std::time::Instant::now();
        *self.last_save.lock().unwrap_or_else(|e| e.into_inner()) = started;
        let branch = work_branch(&self.thread);
        let (repo, name, author, known) = (
            self.workspace.clone(),
            branch.clone(),
            self.author.clone(),
            saved.1.take(),
        );
        tracing::debug!("work branch `{branch}`: save started");
        let committed = tokio::task::spawn_blocking(move || {
            let mut snapshots = match known {
                Some(known) => known,
                None => Snapshots::open(&repo, &name)?,
            };
            let commit = snapshots.commit(&repo, &message, &author)?;
            Ok::<_, crate::tools::ToolError>((snapshots, commit))
        })
        .await;
        let pushed = match committed {
            Ok(Ok((snapshots, None))) => {
                saved.1 = Some(snapshots);
                Ok(())
            }
            Ok(Ok((snapshots, Some(commit)))) => {
                tracing::debug!(
                    "work branch `{branch}`: {commit} committed after {} ms",
                    started.elapsed().as_millis()
                );
                let (snapshots, pushed) = self.advance_and_push(snapshots, &commit).await;
                saved.1 = snapshots;
                pushed
            }
            Ok(Err(e)) => Err(format!(
                "could not save the work to `{branch}`: {}",
                e.message
            )),
            Err(e) => Err(format!("saving the work branch stopped: {e}")),
        };
        tracing::debug!(
            "work branch `{branch}`: save ended after {} ms",
            started.elapsed().as_millis()
        );
        match pushed {
            Ok(()) => *self.saved_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(started),
            Err(message) => tracing::warn!("{message}"),
        }
    }

    /// Move the local work branch to `commit` and push it: both at once when the publisher pushes
    /// the commit itself (a `git` process less on the way to the history commit that waits for
    /// this push). The snapshots are dropped when the branch could not be moved, so the next save
    /// starts again from wherever the branch is.
    async fn advance_and_push(
        &self,
        mut snapshots: Snapshots,
        commit: &str,
    ) -> (Option<Snapshots>, Result<(), String>) {
        let branch = work_branch(&self.thread);
        let (repo, name, id) = (self.workspace.clone(), branch.clone(), commit.to_owned());
        let advance = tokio::task::spawn_blocking(move || {
            let moved = snapshots.advance(&repo, &name, &id);
            (snapshots, moved)
        });
        let push = self
            .publisher
            .publish_commit(&self.workspace, commit, &branch);
        let (advanced, pushed) = if self.publisher.pushes_commits() {
            tokio::join!(advance, push)
        } else {
            let advanced = advance.await;
            match &advanced {
                Ok((_, Ok(()))) => (advanced, push.await),
                _ => (advanced, Ok(())),
            }
        };
        let snapshots = match advanced {
            Ok((snapshots, Ok(()))) => Some(snapshots),
            Ok((_, Err(e))) => {
                return (
                    None,
                    Err(format!(
                        "could not save the work to `{branch}`: {}",
                        e.message
                    )),
                );
            }
            Err(e) => return (None, Err(format!("saving the work branch stopped: {e}"))),
        };
        let pushed =
            pushed.map_err(|e| format!("could not push the work branch `{branch}`: {}", e.message));
        (snapshots, pushed)
    }
}

/// The history is about to record finished tasks: their files reach the work branch first,
/// whenever the last save was.
#[async_trait]
impl crate::app::history_sink::BeforeCommit for WorkBranchReporter {
    async fn before_commit(&self, done_at: Option<std::time::Instant>) {
        let mut saved = self.saved.lock().await;
        // The save that held the lock (the one beside the final steps) may have covered them.
        if let (Some(done), Some(at)) = (done_at, self.saved_at())
            && at >= done
        {
            return;
        }
        // The working tree now holds every task reported done so far.
        saved.0 = saved
            .0
            .max(self.seen_done.load(std::sync::atomic::Ordering::Relaxed));
        let message = format!(
            "Replan: work on {} before the history records finished tasks",
            self.thread
        );
        self.commit_and_push(&mut saved, message).await;
    }

    fn saved_at(&self) -> Option<std::time::Instant> {
        *self.saved_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn saved_recently(&self) -> bool {
        WorkBranchReporter::saved_recently(self)
    }
}

#[async_trait]
impl Reporter for WorkBranchReporter {
    async fn progress(&self, state: &SessionState) -> Option<String> {
        self.save_between_tasks(state).await;
        self.inner.progress(state).await
    }

    async fn notice(&self, state: &SessionState, notice: &Notice) -> Option<String> {
        self.inner.notice(state, notice).await
    }

    async fn finish(&self, state: &SessionState) {
        self.save(state).await;
        self.inner.finish(state).await
    }
}

/// Every subtask of the plan has finished or cannot run: no more task work in this run unless
/// the plan changes.
fn no_task_left_to_run(state: &SessionState) -> bool {
    state
        .plan
        .as_ref()
        .is_some_and(|plan| crate::engine::step::next_runnable(plan, state).is_none())
}
