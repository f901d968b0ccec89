//! A finished CI run on the thread's pull request branch (issue 37): a pass is the thread's
//! final verification, a failure the next cycle's input, at most `verify.ci_rounds` times.
//!
//! Nothing is written for a run that is not on Replan's branch: the forge must confirm the run
//! (`Forge::confirm_ci_run`: GitLab reads a webhook's pipeline back), the branch must be the one
//! the thread's history records its pull request being opened from, the run must be of that
//! branch's tip in this repository, and not of Replan's own workflow.

use super::context::Ctx;
use crate::app::exit::CliError;
use crate::app::outputs::{self, RunOutputs, status_name};
use crate::forge::Forge;
use crate::forge::ci::CiFailure;
use crate::history::entry::{CiResult, EffectKind, Entry, EntryBody, RunStatus};
use crate::history::store::LoadedThread;
use crate::history::{HistoryBackend, SCHEMA_VERSION};
use crate::report::Reporter;
use crate::report::checklist::ChecklistContext;
use crate::trigger::{CiRun, CiVerdict, ThreadRef};
use std::fmt::Write as _;

/// What the CI run leads to.
pub(super) enum Round {
    /// Not Replan's branch (or a run already recorded): nothing is written.
    NotOurs(String),
    /// Recorded, with the checklist updated; no cycle.
    Recorded,
    /// A failure to fix: the run with its report, for the cycle.
    Fix(CiRun),
}

/// Bytes of the whole report handed to the model (all jobs together).
const REPORT_CAP: usize = 16 * 1024;

pub(super) async fn prepare(
    ctx: &Ctx,
    forge: &dyn Forge,
    backend: &dyn HistoryBackend,
    reporter: &dyn Reporter,
    thread: ThreadRef,
    run: &CiRun,
    history: &LoadedThread,
) -> Result<Round, CliError> {
    // The event's word is checked against the forge's own record of the run first; everything
    // below reads the run the forge reports.
    let run = &match forge.confirm_ci_run(run).await {
        Ok(Some(confirmed)) => confirmed,
        Ok(None) => {
            return Ok(Round::NotOurs(format!(
                "the repository has no finished run {} of {} on `{}`",
                run.run_id.map(|id| id.to_string()).unwrap_or_default(),
                run.head_sha,
                run.branch
            )));
        }
        Err(e) => {
            return Ok(Round::NotOurs(format!(
                "could not read the CI run on `{}` back from the forge: {e}",
                run.branch
            )));
        }
    };
    if let Some(reason) = not_ours(ctx, forge, thread, run, history).await {
        return Ok(Round::NotOurs(reason));
    }
    let state = &history.state;
    let used = state
        .ci_results
        .iter()
        .filter(|r| r.round > 0 && r.branch == run.branch)
        .count() as u32;
    let limit = ctx.config.verify.ci_rounds;
    let mut result = CiResult {
        branch: run.branch.clone(),
        conclusion: run.conclusion.clone(),
        passed: run.verdict() == CiVerdict::Passed,
        head_sha: run.head_sha.clone(),
        run_url: run.url.clone(),
        failed_jobs: Vec::new(),
        round: 0,
    };
    if result.passed {
        tracing::info!(
            "CI passed on `{}` ({}): {thread} is verified",
            run.branch,
            run.head_sha
        );
        let status = crate::engine::evidence::final_state::status_after_ci(&result);
        record(ctx, backend, reporter, thread, result, status).await?;
        return Ok(Round::Recorded);
    }
    let failures = match forge.ci_failures(run).await {
        Ok(failures) => failures,
        Err(e) => {
            ctx.workflow
                .warning(&format!("could not read what failed in the CI run: {e}"));
            Vec::new()
        }
    };
    result.failed_jobs = failures.iter().map(|f| f.job.clone()).collect();
    if used >= limit {
        ctx.workflow.warning(&format!(
            "CI failed on `{}` after {used} fixing round(s); `verify.ci_rounds` is {limit}: \
             waiting for a person",
            run.branch
        ));
        record(ctx, backend, reporter, thread, result, None).await?;
        return Ok(Round::Recorded);
    }
    result.round = used + 1;
    let mut fix = run.clone();
    fix.report = Some(report(run, &failures, result.round, limit));
    tracing::info!(
        "CI failed on `{}`: fixing round {}/{limit} for {thread}",
        run.branch,
        result.round
    );
    append(
        ctx,
        backend,
        thread,
        vec![EntryBody::CiResult(Box::new(result))],
    )
    .await?;
    Ok(Round::Fix(fix))
}

/// Why this run is not one Replan acts on, if it is not.
async fn not_ours(
    ctx: &Ctx,
    forge: &dyn Forge,
    thread: ThreadRef,
    run: &CiRun,
    history: &LoadedThread,
) -> Option<String> {
    if let (Some(own), Some(path)) = (own_workflow_path(&ctx.env), &run.workflow_path)
        && own == *path
    {
        return Some(format!("the run is of Replan's own workflow `{path}`"));
    }
    let opened_here = history.intents.values().any(|intent| {
        intent.effect == EffectKind::PullRequest && intent.target.as_deref() == Some(&run.branch)
    });
    if !opened_here {
        return Some(format!(
            "`{}` is not the branch of a pull request Replan opened for {thread}",
            run.branch
        ));
    }
    let seen = history.state.ci_results.iter().any(|r| {
        r.branch == run.branch
            && r.head_sha == run.head_sha
            && r.run_url == run.url
            && r.conclusion == run.conclusion
    });
    if seen {
        return Some(format!(
            "the CI run of {} on `{}` is recorded already",
            run.head_sha, run.branch
        ));
    }
    match forge.branch_tip(&run.branch).await {
        Ok(Some(tip)) if tip == run.head_sha => None,
        Ok(Some(tip)) => Some(format!(
            "the run is of {}, but `{}` is at {tip} now (a newer push has its own run)",
            run.head_sha, run.branch
        )),
        Ok(None) => Some(format!("`{}` does not exist in the repository", run.branch)),
        Err(e) => Some(format!("could not read `{}`: {e}", run.branch)),
    }
}

/// `owner/repo/.github/workflows/replan.yml@refs/heads/main` → `.github/workflows/replan.yml`.
fn own_workflow_path(env: &std::collections::BTreeMap<String, String>) -> Option<String> {
    let reference = env.get("GITHUB_WORKFLOW_REF")?;
    let path = reference.split('@').next()?;
    let mut parts = path.splitn(3, '/');
    let (_, _, rest) = (parts.next()?, parts.next()?, parts.next()?);
    Some(rest.to_owned())
}

/// The model's input: which jobs failed and how their logs end, redacted and capped.
fn report(run: &CiRun, failures: &[CiFailure], round: u32, limit: u32) -> String {
    let mut out = format!(
        "CI failed on the pull request branch `{}` (commit {}, conclusion `{}`{}); fixing round \
         {round} of {limit}. Fix the cause; the changes are pushed to the same pull request.\n",
        run.branch,
        run.head_sha,
        run.conclusion,
        run.url
            .as_deref()
            .map(|u| format!(", {u}"))
            .unwrap_or_default()
    );
    if failures.is_empty() {
        out.push_str("The failing jobs could not be read.\n");
    }
    for failure in failures {
        let _ = write!(
            out,
            "\nFailed job: {}\nEnd of its log:\n```\n{}\n```\n",
            failure.job,
            failure.log_tail.trim_end().replace("```", "'''")
        );
    }
    let mut out = crate::outbound::redact(&out);
    if out.len() > REPORT_CAP {
        let mut cut = out.len() - REPORT_CAP;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = format!("(the start is cut)\n{}", &out[cut..]);
    }
    out
}

async fn append(
    ctx: &Ctx,
    backend: &dyn HistoryBackend,
    thread: ThreadRef,
    bodies: Vec<EntryBody>,
) -> Result<(), CliError> {
    let entries: Vec<Entry> = bodies
        .into_iter()
        .map(|body| Entry {
            v: SCHEMA_VERSION,
            seq: 0,
            ts: chrono::Utc::now(),
            run_id: ctx.run_id.clone(),
            body,
        })
        .collect();
    backend
        .append(&thread, &entries)
        .await
        .map(drop)
        .map_err(|e| CliError::failure(format!("could not record the CI result on {thread}: {e}")))
}

/// Appends the result (and, for a pass, the thread's end), shows it in the checklist and the
/// step outputs.
async fn record(
    ctx: &Ctx,
    backend: &dyn HistoryBackend,
    reporter: &dyn Reporter,
    thread: ThreadRef,
    result: CiResult,
    status: Option<RunStatus>,
) -> Result<(), CliError> {
    let mut bodies = vec![EntryBody::CiResult(Box::new(result))];
    if let Some(status) = status {
        bodies.push(EntryBody::RunFinished {
            status,
            usage: Default::default(),
            pull_request: None,
            structured_output: None,
        });
    }
    append(ctx, backend, thread, bodies).await?;
    let loaded = super::context::load_thread(backend, &thread).await?;
    let state = loaded.state;
    reporter.progress(&state).await;
    reporter.finish(&state).await;
    let status = status.or(state.last_status).unwrap_or(RunStatus::Completed);
    let (done, total) = (
        state.tasks_done(),
        state
            .plan
            .as_ref()
            .map_or(0, |p| p.task_decomposition.subtasks.len()),
    );
    outputs::write(
        &ctx.env,
        &RunOutputs {
            status: status_name(status),
            plan_version: state.plan_version,
            tasks_done: done,
            tasks_total: total,
            pull_request: None,
            history_commit: None,
        },
        Some((
            &state,
            status,
            &ChecklistContext {
                run_url: None,
                model: ctx.config.llm.model.clone(),
                per_thread: crate::history::ledger::ThreadCap::configured(&ctx.config.llm.budget),
            },
        )),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_workflow_is_read_from_the_workflow_ref() {
        let env = [(
            "GITHUB_WORKFLOW_REF".to_owned(),
            "octo/widgets/.github/workflows/replan.yml@refs/heads/main".to_owned(),
        )]
        .into();
        assert_eq!(
            own_workflow_path(&env).as_deref(),
            Some(".github/workflows/replan.yml")
        );
    }
}
