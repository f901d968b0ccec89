//! A finished pipeline on GitLab, read through the API (`read_api`): the branch's tip, the failed
//! jobs with the ends of their traces, a webhook's pipeline read back from the project, and a
//! merge request's newest pipeline for the scheduled sweep.

use super::client::{GitLabClient, encode_segment};
use crate::forge::ci::{CiFailure, LOG_TAIL_BYTES, MAX_FAILED_JOBS};
use crate::forge::{ForgeError, ForgeResult};
use crate::trigger::{CiRun, CiVerdict};

pub async fn branch_tip(client: &GitLabClient, branch: &str) -> ForgeResult<Option<String>> {
    let path = client.project_path(&format!("/repository/branches/{}", encode_segment(branch)));
    match client
        .get(&path, &format!("reading branch `{branch}`"))
        .await
    {
        Ok(response) => Ok(response.json["commit"]["id"].as_str().map(str::to_owned)),
        Err(ForgeError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

pub async fn ci_failures(client: &GitLabClient, run: &CiRun) -> ForgeResult<Vec<CiFailure>> {
    let Some(pipeline) = run.run_id else {
        return Ok(Vec::new());
    };
    let path = client.project_path(&format!(
        "/pipelines/{pipeline}/jobs?scope[]=failed&per_page=100"
    ));
    let jobs = client
        .get_all(
            &path,
            &format!("listing the failed jobs of pipeline {pipeline}"),
        )
        .await?;
    let mut failures = Vec::new();
    for job in jobs
        .iter()
        .filter(|j| j["status"].as_str() == Some("failed"))
        .filter(|j| j["allow_failure"].as_bool() != Some(true))
        .take(MAX_FAILED_JOBS)
    {
        let name = job["name"].as_str().unwrap_or("unnamed job").to_owned();
        let log_tail = match job["id"].as_u64() {
            Some(id) => {
                let path = client.project_path(&format!("/jobs/{id}/trace"));
                let what = format!("reading the trace of job {id}");
                match client.get_text_tail(&path, LOG_TAIL_BYTES, &what).await {
                    Ok(text) => text,
                    Err(e) => format!("(the trace could not be read: {e})"),
                }
            }
            None => String::new(),
        };
        failures.push(CiFailure {
            job: name,
            url: job["web_url"].as_str().map(str::to_owned),
            log_tail,
        });
    }
    Ok(failures)
}

/// Pipelines started by a trigger or by another pipeline: Replan's own are, and their end says
/// nothing about the merge request's code.
pub fn started_by_replan_or_a_pipeline(source: &str) -> bool {
    matches!(source, "trigger" | "pipeline" | "parent_pipeline")
}

/// The newest pipeline of merge request `iid` (GitLab lists them newest first), when it has
/// finished with a verdict: the run the scheduled sweep continues the thread with.
pub async fn latest_merge_request_pipeline(
    client: &GitLabClient,
    iid: u64,
    branch: &str,
) -> ForgeResult<Option<CiRun>> {
    let path = client.project_path(&format!("/merge_requests/{iid}/pipelines?per_page=1"));
    let response = client
        .get(
            &path,
            &format!("listing the pipelines of merge request !{iid}"),
        )
        .await?;
    let Some(pipeline) = response.json.as_array().and_then(|list| list.first()) else {
        return Ok(None);
    };
    Ok(finished_run(pipeline, branch))
}

/// A pipeline as the API shows it → the run on `branch`, when it finished with a verdict and
/// was not started by a trigger or another pipeline.
fn finished_run(pipeline: &serde_json::Value, branch: &str) -> Option<CiRun> {
    if pipeline["source"]
        .as_str()
        .is_some_and(started_by_replan_or_a_pipeline)
    {
        return None;
    }
    let run = CiRun {
        branch: branch.to_owned(),
        conclusion: pipeline["status"].as_str()?.to_owned(),
        run_id: Some(pipeline["id"].as_u64()?),
        check_suite_id: None,
        url: pipeline["web_url"].as_str().map(str::to_owned),
        head_sha: pipeline["sha"].as_str()?.to_owned(),
        workflow_path: None,
        workflow_name: None,
        report: None,
    };
    (run.verdict() != CiVerdict::Inconclusive).then_some(run)
}

/// The pipeline a webhook payload names, read back from this project: `None` unless the project
/// has it, it ran on the commit (and branch) the payload claims and it finished. Its status
/// and page are the API's, not the payload's.
pub async fn read_back(client: &GitLabClient, claimed: &CiRun) -> ForgeResult<Option<CiRun>> {
    let Some(id) = claimed.run_id else {
        return Ok(None);
    };
    let path = client.project_path(&format!("/pipelines/{id}"));
    let pipeline = match client.get(&path, &format!("reading pipeline {id}")).await {
        Ok(response) => response.json,
        Err(ForgeError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    // A merge request pipeline runs on `refs/merge-requests/<iid>/head`; the commit ties it to
    // the branch, whose tip the round compares it with.
    let git_ref = pipeline["ref"].as_str().unwrap_or_default();
    let same_ref = git_ref == claimed.branch || git_ref.starts_with("refs/merge-requests/");
    if !same_ref || pipeline["sha"].as_str() != Some(claimed.head_sha.as_str()) {
        return Ok(None);
    }
    Ok(finished_run(&pipeline, &claimed.branch))
}
