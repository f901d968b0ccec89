//! GitHub Actions and Checks reads: a workflow run's jobs, a job's log (a 302 to a signed URL on
//! another host, as GitHub answers; that host refuses any request carrying credentials), and a
//! check suite's check runs.

use serde_json::{Value, json};

use super::State;
use super::json::not_found;
use crate::support::server::{FakeRequest, FakeResponse, TestServer};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Job {
    pub id: u64,
    pub name: String,
    /// `success`, `failure`, ...
    pub conclusion: String,
    pub log: String,
}

#[derive(Default)]
pub struct Actions {
    /// Workflow run id → its jobs.
    pub runs: BTreeMap<u64, Vec<Job>>,
    /// Check suite id → its check runs (GitHub's JSON).
    pub check_runs: BTreeMap<u64, Vec<Value>>,
}

/// The host signed log URLs point at; it answers only requests without credentials.
pub struct BlobHost {
    pub server: TestServer,
    pub logs: Arc<Mutex<BTreeMap<u64, String>>>,
}

impl BlobHost {
    pub fn start() -> Self {
        let logs: Arc<Mutex<BTreeMap<u64, String>>> = Arc::default();
        let served = logs.clone();
        let server = TestServer::start(Arc::new(move |request: FakeRequest| {
            if request.header("authorization").is_some() {
                return FakeResponse::text(400, "credentials sent to the signed URL host");
            }
            let id = request
                .path
                .strip_prefix("/logs/")
                .and_then(|id| id.parse::<u64>().ok());
            match (id, request.query_param("sig")) {
                (Some(id), Some(_)) => match served.lock().unwrap().get(&id) {
                    Some(log) => FakeResponse::text(200, log),
                    None => FakeResponse::text(404, "BlobNotFound"),
                },
                _ => FakeResponse::text(403, "AuthenticationFailed"),
            }
        }));
        BlobHost { server, logs }
    }
}

pub fn route(state: &mut State, rest: &[&str]) -> FakeResponse {
    match rest {
        ["actions", "runs", id, "jobs"] => {
            let Some(jobs) = id
                .parse()
                .ok()
                .and_then(|id: u64| state.actions.runs.get(&id))
            else {
                return not_found();
            };
            let repo = state.full_name();
            let jobs: Vec<Value> = jobs
                .iter()
                .map(|job| {
                    json!({
                        "id": job.id,
                        "run_id": id.parse::<u64>().unwrap_or_default(),
                        "name": job.name,
                        "status": "completed",
                        "conclusion": job.conclusion,
                        "html_url": format!("https://github.com/{repo}/actions/runs/{id}/job/{}", job.id),
                    })
                })
                .collect();
            FakeResponse::json(200, &json!({"total_count": jobs.len(), "jobs": jobs}))
        }
        ["actions", "jobs", id, "logs"] => {
            let known = id.parse::<u64>().ok().filter(|id| {
                state
                    .actions
                    .runs
                    .values()
                    .flatten()
                    .any(|job| job.id == *id)
            });
            match (known, &state.blob_url) {
                (Some(id), Some(blob)) => FakeResponse::empty(302)
                    .with_header("location", &format!("{blob}/logs/{id}?sig=signed-{id}")),
                _ => not_found(),
            }
        }
        ["check-suites", id, "check-runs"] => {
            match id
                .parse()
                .ok()
                .and_then(|id: u64| state.actions.check_runs.get(&id))
            {
                Some(runs) => {
                    FakeResponse::json(200, &json!({"total_count": runs.len(), "check_runs": runs}))
                }
                None => not_found(),
            }
        }
        _ => not_found(),
    }
}
