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
use crate::tools::git_wire::Opened;
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
    /// The next save's push, opened ahead (beside the planning, or after a save between
    /// tasks): the remote's side starts long before the save needs it. A branch that moves
    /// meanwhile only fails the update, as any push that starts from a stale value does, and
    /// `git push` takes over.
    next_push: std::sync::Mutex<Option<tokio::task::JoinHandle<Option<Opened>>>>,
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
            next_push: std::sync::Mutex::new(None),
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
        let publisher = self.publisher.clone();
        let me = self.me.clone();
        runtime.spawn(async move {
            let opened = tokio::task::spawn_blocking(move || {
                publisher.prepare(&repo);
                open(&repo, &name, publisher.as_ref())
            })
            .await;
            if let Ok(Ok(snapshots)) = opened {
                let packs = snapshots.packs_next();
                saved.1 = Some(snapshots);
                drop(saved);
                if let (true, Some(me)) = (packs, me.upgrade()) {
                    me.open_next_push();
                }
            }
        });
    }

    /// Start the push of the next save (see `next_push`).
    fn open_next_push(self: &Arc<Self>) {
        let me = self.clone();
        let opening = tokio::spawn(async move { me.publisher.open_push(&me.workspace).await });
        let previous = self
            .next_push
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(opening);
        if let Some(previous) = previous {
            previous.abort();
        }
    }

    /// The push opened ahead, or one opened now.
    async fn take_push(&self) -> Option<Opened> {
        let ahead = self
            .next_push
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = ahead
            && let Ok(Some(opened)) = handle.await
        {
            return Some(opened);
        }
        self.publisher.open_push(&self.workspace).await
    }

    /// A save between tasks, skipped while the last one is younger than the interval.
    async fn save_between_tasks(&self, state: &SessionState) {
        self.seen_done
            .fetch_max(state.tasks_done(), std::sync::atomic::Ordering::Relaxed);
        if !self.saved_recently() {
            self.save(state).await;
            let next = self
                .saved
                .lock()
                .await
                .1
                .as_ref()
                .is_some_and(Snapshots::packs_next);
            if let (true, false, Some(me)) = (next, no_task_left_to_run(state), self.me.upgrade()) {
                me.open_next_push();
            }
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
        let publisher = self.publisher.clone();
        tracing::debug!("work branch `{branch}`: save started");
        // When the commit will come with a pack to send, the push opened ahead is taken (or one
        // opened now, beside the staging and the commit).
        let packs = known.as_ref().is_some_and(Snapshots::packs_next);
        let opening = async { if packs { self.take_push().await } else { None } };
        let committing = tokio::task::spawn_blocking(move || {
            let mut snapshots = match known {
                Some(known) => known,
                None => open(&repo, &name, publisher.as_ref())?,
            };
            let commit = snapshots.commit(&repo, &message, &author)?;
            Ok::<_, crate::tools::ToolError>((snapshots, commit))
        });
        let (committed, opened) = tokio::join!(committing, opening);
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
                let (snapshots, pushed) = self.advance_and_push(snapshots, &commit, opened).await;
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
        opened: Option<Opened>,
    ) -> (Option<Snapshots>, Result<(), String>) {
        let branch = work_branch(&self.thread);
        let outgoing = snapshots.take_outgoing();
        let (repo, name, id) = (self.workspace.clone(), branch.clone(), commit.to_owned());
        let advance = tokio::task::spawn_blocking(move || {
            let moved = snapshots.advance(&repo, &name, &id);
            (snapshots, moved)
        });
        let push = self.publisher.publish_commit(
            &self.workspace,
            commit,
            &branch,
            outgoing.as_ref(),
            opened,
        );
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
            Ok((mut snapshots, Ok(()))) => {
                snapshots.pushed(pushed.is_ok());
                Some(snapshots)
            }
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

/// The snapshots of `branch`, packing each commit when the publisher can send the pack.
fn open(
    repo: &std::path::Path,
    branch: &str,
    publisher: &dyn Publisher,
) -> Result<Snapshots, crate::tools::ToolError> {
    if publisher.sends_packs() {
        Snapshots::open_for_push(repo, branch)
    } else {
        Snapshots::open(repo, branch)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::history_sink::BeforeCommit as _;
    use crate::report::Notice;
    use crate::tools::ToolError;
    use crate::tools::git_wire::{Outgoing, Remote};
    use std::path::Path;
    use std::time::Instant;

    struct Quiet;

    #[async_trait]
    impl Reporter for Quiet {
        async fn progress(&self, _: &SessionState) -> Option<String> {
            None
        }
        async fn notice(&self, _: &SessionState, _: &Notice) -> Option<String> {
            None
        }
        async fn finish(&self, _: &SessionState) {}
    }

    /// Pushes packs to a bare repository on this machine, noting when each push was opened.
    struct Timed {
        remote: PathBuf,
        opened: std::sync::Mutex<Vec<Instant>>,
    }

    #[async_trait]
    impl Publisher for Timed {
        async fn publish(&self, _: &Path, _: &str) -> Result<(), ToolError> {
            Err(ToolError::new(
                crate::tools::ToolErrorKind::Failed,
                "the test pushes packs only",
            ))
        }
        fn pushes_commits(&self) -> bool {
            true
        }
        fn sends_packs(&self) -> bool {
            true
        }
        async fn open_push(&self, _: &Path) -> Option<Opened> {
            self.opened.lock().unwrap().push(Instant::now());
            Remote::Local(self.remote.clone()).open().await.ok()
        }
        async fn publish_commit(
            &self,
            repo: &Path,
            commit: &str,
            branch: &str,
            outgoing: Option<&Outgoing>,
            opened: Option<Opened>,
        ) -> Result<(), ToolError> {
            match (outgoing.filter(|o| o.commit == commit), opened) {
                (Some(outgoing), Some(opened)) => opened
                    .push(branch, outgoing)
                    .await
                    .map_err(|e| ToolError::new(crate::tools::ToolErrorKind::Failed, e)),
                _ => self.publish(repo, branch).await,
            }
        }
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = crate::tools::git::isolated_git(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    #[tokio::test]
    async fn the_first_save_pushes_through_the_session_opened_beside_the_planning() {
        let tmp = tempfile::tempdir().unwrap();
        let (work, remote) = (tmp.path().join("work"), tmp.path().join("remote.git"));
        std::fs::create_dir_all(&work).unwrap();
        git(
            tmp.path(),
            &["init", "-q", "--bare", remote.to_str().unwrap()],
        );
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("a.txt"), "a\n").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "a"]);
        git(&work, &["push", "-q", remote.to_str().unwrap(), "main"]);
        let publisher = Arc::new(Timed {
            remote: remote.clone(),
            opened: std::sync::Mutex::new(Vec::new()),
        });
        let thread = ThreadRef::issue(7);
        let reporter = WorkBranchReporter::new(
            Arc::new(Quiet),
            work.clone(),
            thread,
            publisher.clone(),
            CommitAuthor::default(),
            0,
            std::time::Duration::from_secs(600),
        );
        // The planning: the snapshots are opened and the push started meanwhile.
        let until = Instant::now() + std::time::Duration::from_secs(3);
        while publisher.opened.lock().unwrap().is_empty() && Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        std::fs::write(work.join("done.txt"), "task 1\n").unwrap();
        let save = Instant::now();
        reporter.before_commit(None).await;
        let branch = work_branch(&thread);
        let on_remote = git(&remote, &["show", &format!("{branch}:done.txt")]);
        assert_eq!(on_remote, "task 1");
        let opened = publisher.opened.lock().unwrap().clone();
        assert_eq!(opened.len(), 1, "one push, opened ahead");
        assert!(opened[0] < save, "opened before the save started");
    }
}
