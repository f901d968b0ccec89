//! A finished pipeline on GitLab, read through the API: the branch's tip and the failed jobs
//! with the ends of their traces (`read_api`).

use super::client::{GitLabClient, encode_segment};
use crate::forge::ci::{CiFailure, LOG_TAIL_BYTES, MAX_FAILED_JOBS};
use crate::forge::{ForgeError, ForgeResult};
use crate::trigger::CiRun;

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
