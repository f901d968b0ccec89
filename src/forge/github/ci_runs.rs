//! A finished CI run on GitHub, read through the API: the branch's tip, a workflow run's failed
//! jobs with the ends of their logs (`actions: read`), a check suite's failed check runs with
//! their output (`checks: read`).

use super::client::{GitHubClient, Op};
use crate::forge::ci::{CiFailure, LOG_TAIL_BYTES, MAX_FAILED_JOBS};
use crate::forge::{ForgeError, ForgeResult};
use crate::trigger::CiRun;
use serde_json::Value;

const ACTIONS_READ: &str = "actions: read";
const CHECKS_READ: &str = "checks: read";
const CONTENTS_READ: &str = "contents: read";

fn failed(conclusion: Option<&str>) -> bool {
    matches!(
        conclusion,
        Some("failure" | "timed_out" | "startup_failure" | "action_required")
    )
}

async fn get(client: &GitHubClient, path: String, op: Op<'_>) -> ForgeResult<Value> {
    let get = client.octocrab().get::<Value, _, ()>(path, None);
    client.call(op, get).await
}

pub async fn branch_tip(client: &GitHubClient, branch: &str) -> ForgeResult<Option<String>> {
    let what = format!("reading branch `{branch}`");
    let op = Op {
        what: &what,
        permission: CONTENTS_READ,
    };
    let path = client.repo_path(&format!("/git/ref/heads/{branch}"));
    match get(client, path, op).await {
        Ok(body) => Ok(body
            .pointer("/object/sha")
            .and_then(Value::as_str)
            .map(str::to_owned)),
        Err(ForgeError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

pub async fn ci_failures(client: &GitHubClient, run: &CiRun) -> ForgeResult<Vec<CiFailure>> {
    match (run.run_id, run.check_suite_id) {
        (Some(id), _) => workflow_jobs(client, id).await,
        (None, Some(suite)) => check_runs(client, suite).await,
        (None, None) => Ok(Vec::new()),
    }
}

async fn workflow_jobs(client: &GitHubClient, run_id: u64) -> ForgeResult<Vec<CiFailure>> {
    let what = format!("listing the jobs of workflow run {run_id}");
    let op = Op {
        what: &what,
        permission: ACTIONS_READ,
    };
    let path = client.repo_path(&format!("/actions/runs/{run_id}/jobs?per_page=100"));
    let body = get(client, path, op).await?;
    let jobs = body["jobs"].as_array().cloned().unwrap_or_default();
    let mut failures = Vec::new();
    for job in jobs
        .iter()
        .filter(|j| failed(j["conclusion"].as_str()))
        .take(MAX_FAILED_JOBS)
    {
        let name = job["name"].as_str().unwrap_or("unnamed job").to_owned();
        let log_tail = match job["id"].as_u64() {
            Some(id) => {
                let path = client.repo_path(&format!("/actions/jobs/{id}/logs"));
                match client.api().get_text_tail(&path, LOG_TAIL_BYTES).await {
                    Ok(text) => text,
                    // The job's name still says what failed; the log's absence is said.
                    Err(e) => format!("(the log could not be read: {e})"),
                }
            }
            None => String::new(),
        };
        failures.push(CiFailure {
            job: name,
            url: job["html_url"].as_str().map(str::to_owned),
            log_tail,
        });
    }
    Ok(failures)
}

async fn check_runs(client: &GitHubClient, suite: u64) -> ForgeResult<Vec<CiFailure>> {
    let what = format!("listing the check runs of check suite {suite}");
    let op = Op {
        what: &what,
        permission: CHECKS_READ,
    };
    let path = client.repo_path(&format!("/check-suites/{suite}/check-runs?per_page=100"));
    let body = get(client, path, op).await?;
    let runs = body["check_runs"].as_array().cloned().unwrap_or_default();
    Ok(runs
        .iter()
        .filter(|r| failed(r["conclusion"].as_str()))
        .take(MAX_FAILED_JOBS)
        .map(|r| {
            let output = &r["output"];
            let text: Vec<&str> = ["title", "summary", "text"]
                .iter()
                .filter_map(|k| output[*k].as_str())
                .filter(|t| !t.trim().is_empty())
                .collect();
            let text = text.join("\n");
            let start = text.len().saturating_sub(LOG_TAIL_BYTES);
            let start = (start..=text.len())
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(text.len());
            CiFailure {
                job: r["name"].as_str().unwrap_or("unnamed check").to_owned(),
                url: r["html_url"].as_str().map(str::to_owned),
                log_tail: text[start..].to_owned(),
            }
        })
        .collect())
}
