//! The GitLab child pipeline of one wave (`--pipeline-out FILE`): per ready subtask an agent job
//! and a publish job, then the join's pair, whose publish job writes the next wave. Built as data
//! and serialised, then parsed back, so an id can never produce YAML that means something else.
//!
//! Split trust, as in the shipped templates: an agent job runs the model with a read-only token
//! (`REPLAN_READ_TOKEN`) and refuses to start when the write token `GITLAB_TOKEN` reaches it; its
//! bundle is published by a job that holds `GITLAB_TOKEN`, refuses to start with an LLM key, and
//! runs nothing but `replan publish`. The next wave's file is written by that publish job from
//! the published matrix, never by a job that ran the model: GitLab runs it as configuration.

use crate::app::exit::CliError;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The image the generated jobs run in: the plan job's `REPLAN_IMAGE`.
const DEFAULT_IMAGE: &str = "ghcr.io/replan-dev/replan:v1";

/// The file the join's publish job writes for the next wave, as the fan-out template names it.
pub const NEXT_WAVE_FILE: &str = "replan-wave.yml";
/// The agent jobs' bundle directory and the file beside it that carries its digest (written by
/// `replan run --bundle`; not a dotenv report, which would let the agent job set any variable of
/// the publish job, `CI_SERVER_URL` included).
pub const BUNDLE_DIR: &str = "replan-bundle";
pub const DIGEST_FILE: &str = "replan-bundle.digest";

/// The first line of every agent job's script: the write token must not reach the model's job.
pub const AGENT_GUARD: &str = r#"if [ -n "${GITLAB_TOKEN:-}" ]; then echo "Replan: GITLAB_TOKEN reaches a job that runs the model; give it the environment scope replan-publish (Settings > CI/CD > Variables) so only the publish jobs get it" >&2; exit 1; fi"#;
/// The first line of every publish job's script: no LLM key where the write token is.
pub const PUBLISH_GUARD: &str = r#"if [ -n "${ANTHROPIC_API_KEY:-}${OPENAI_API_KEY:-}" ]; then echo "Replan: an LLM key reaches a publish job; give it the environment scope replan-agent (Settings > CI/CD > Variables) so only the agent jobs get it" >&2; exit 1; fi"#;

/// `replan run <args> --bundle DIR` with the read-only token as the process's GITLAB_TOKEN.
fn agent_command(args: &str) -> String {
    format!(r#"GITLAB_TOKEN="${{REPLAN_READ_TOKEN:-}}" replan run {args} --bundle {BUNDLE_DIR}"#)
}

fn publish_command(extra: &str) -> String {
    format!(r#"replan publish {BUNDLE_DIR} --digest "$(cat {DIGEST_FILE})"{extra}"#)
}

fn image() -> Value {
    json!({ "name": "$REPLAN_IMAGE", "entrypoint": [""] })
}

/// A job that runs the model: read-only, its bundle and digest as artifacts, no artifact of an
/// earlier job (another job's bundle or digest) in its checkout.
fn agent_job(stage: &str, variables: Value, args: &str) -> Value {
    let mut variables = variables;
    variables["FF_GIT_URLS_WITHOUT_TOKENS"] = json!("true");
    json!({
        "stage": stage,
        "image": image(),
        "interruptible": false,
        "environment": { "name": "replan-agent", "action": "prepare" },
        "dependencies": [],
        "variables": variables,
        "script": [AGENT_GUARD, agent_command(args)],
        "artifacts": {
            "paths": [format!("{BUNDLE_DIR}/"), DIGEST_FILE],
            "expire_in": "1 day",
        },
    })
}

/// The job that publishes `agent`'s bundle with the write token.
fn publish_job(stage: &str, agent: &str, extra: &str) -> Value {
    json!({
        "stage": stage,
        "image": image(),
        "interruptible": false,
        "environment": { "name": "replan-publish", "action": "prepare" },
        "needs": [{ "job": agent, "artifacts": true }],
        "variables": { "FF_GIT_URLS_WITHOUT_TOKENS": "true" },
        "script": [PUBLISH_GUARD, publish_command(extra)],
    })
}

pub fn child_pipeline(ids: &[String], env: &BTreeMap<String, String>) -> Result<String, CliError> {
    let image_name = env
        .get("REPLAN_IMAGE")
        .filter(|v| !v.trim().is_empty())
        .map_or(DEFAULT_IMAGE, String::as_str);
    let mut doc = serde_json::Map::new();
    doc.insert(
        "variables".into(),
        json!({ "REPLAN_IMAGE": image_name, "GIT_STRATEGY": "fetch", "GIT_DEPTH": "0" }),
    );
    if ids.is_empty() {
        // The join completed the thread; the next-wave trigger still needs a pipeline to start.
        doc.insert("stages".into(), json!(["done"]));
        doc.insert(
            "replan-done".into(),
            json!({
                "stage": "done",
                "image": image(),
                "variables": { "GIT_STRATEGY": "none" },
                "script": ["echo 'Replan: no further subtasks; the thread continued without another wave'"],
            }),
        );
        return render(doc);
    }
    doc.insert(
        "stages".into(),
        json!([
            "subtasks",
            "publish-subtasks",
            "join",
            "publish-join",
            "next"
        ]),
    );
    for id in ids {
        let agent = format!("replan-subtask-{id}");
        doc.insert(
            agent.clone(),
            agent_job(
                "subtasks",
                json!({ "REPLAN_SUBTASK": id }),
                r#"--stage subtask --subtask "$REPLAN_SUBTASK""#,
            ),
        );
        doc.insert(
            format!("replan-publish-subtask-{id}"),
            publish_job("publish-subtasks", &agent, ""),
        );
    }
    let mut join = agent_job("join", json!({}), "--stage join");
    // Like `fail-fast: false`: a failed subtask job is the join's to handle (it runs again).
    join["when"] = json!("always");
    doc.insert("replan-join".into(), join);
    let mut publish_join = publish_job(
        "publish-join",
        "replan-join",
        &format!(" --pipeline-out {NEXT_WAVE_FILE}"),
    );
    publish_join["artifacts"] = json!({ "paths": [NEXT_WAVE_FILE], "expire_in": "1 day" });
    doc.insert("replan-publish-join".into(), publish_join);
    doc.insert(
        "replan-next-wave".into(),
        json!({
            "stage": "next",
            "needs": ["replan-publish-join"],
            "trigger": {
                "include": [{ "artifact": NEXT_WAVE_FILE, "job": "replan-publish-join" }],
                "strategy": "depend",
                "forward": { "pipeline_variables": true },
            },
        }),
    );
    render(doc)
}

/// YAML text of `doc`, checked by parsing it back.
fn render(doc: serde_json::Map<String, Value>) -> Result<String, CliError> {
    let jobs: Vec<String> = doc
        .keys()
        .filter(|k| k.starts_with("replan-"))
        .cloned()
        .collect();
    let yaml = serde_saphyr::to_string(&Value::Object(doc))
        .map_err(|e| CliError::failure(format!("could not write the child pipeline: {e}")))?;
    let parsed: Value = serde_saphyr::from_str(&yaml)
        .map_err(|e| CliError::failure(format!("the child pipeline does not parse back: {e}")))?;
    if let Some(lost) = jobs.iter().find(|job| parsed.get(job.as_str()).is_none()) {
        return Err(CliError::failure(format!(
            "the child pipeline lost the job `{lost}` when parsed back"
        )));
    }
    Ok(format!(
        "# Generated by Replan: per ready subtask an agent job and its publish job, then the join's.\n{yaml}"
    ))
}
