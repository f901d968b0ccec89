//! Split trust in every shipped GitHub workflow (`examples/workflows/*.yml`, the project's own
//! `.github/workflows/*.yml`): checkouts keep no token; a job that runs the model or holds the
//! LLM key has no write permission; a job with a write permission holds no LLM key and runs no
//! model; a publish job runs nothing but its checkout, the bundle's download and
//! `replan publish`, with the digest of the agent job that made the bundle.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::tools::repo_root;

/// `path relative to the repository → parsed workflow`, for the shipped workflows.
pub fn shipped_workflows() -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    for dir in [".github/workflows", "examples/workflows"] {
        for entry in std::fs::read_dir(repo_root().join(dir)).expect("read the workflow dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
                let text = std::fs::read_to_string(&path).expect("read a workflow");
                let value = serde_saphyr::from_str(&text)
                    .unwrap_or_else(|e| panic!("{} is YAML: {e}", path.display()));
                let name = path.strip_prefix(repo_root()).unwrap_or(&path);
                found.insert(name.display().to_string(), value);
            }
        }
    }
    found
}

fn steps(job: &Value) -> Vec<&Value> {
    job["steps"]
        .as_array()
        .map(|s| s.iter().collect())
        .unwrap_or_default()
}

fn uses(step: &Value, action: &str) -> bool {
    step["uses"].as_str().is_some_and(|u| u.starts_with(action))
}

/// A step of Replan's action that runs a cycle (not `publish`): the model runs in its job.
fn runs_the_model(step: &Value) -> bool {
    uses(step, "replan-dev/replan@") && step["with"].get("publish").is_none()
}

fn publishes(step: &Value) -> bool {
    uses(step, "replan-dev/replan@") && step["with"].get("publish").is_some()
}

/// The job's permissions as `scope → level` (`write-all` / `read-all` spelled out as `*`); the
/// workflow's when the job sets none.
fn permissions(workflow: &Value, job: &Value) -> BTreeMap<String, String> {
    let granted = job.get("permissions").unwrap_or(&workflow["permissions"]);
    match granted {
        Value::String(all) => {
            BTreeMap::from([("*".to_owned(), all.trim_end_matches("-all").to_owned())])
        }
        Value::Object(scopes) => scopes
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect(),
        // No `permissions` anywhere: the repository's default, which may be write.
        _ => BTreeMap::from([("*".to_owned(), "write".to_owned())]),
    }
}

/// Secrets, API keys and GitHub Models (the workflow token as the LLM key) in the job.
fn holds_an_llm_key(job: &Value, granted: &BTreeMap<String, String>) -> bool {
    let text = serde_json::to_string(job).expect("a job serialises");
    granted.contains_key("models")
        || text.contains("secrets.")
        || text.to_ascii_lowercase().contains("api_key")
}

/// Every rule broken by one workflow, as `file: job: what`.
pub fn violations(name: &str, workflow: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let Some(jobs) = workflow["jobs"].as_object() else {
        return vec![format!("{name}: no jobs")];
    };
    for (job_name, job) in jobs {
        let mut broken = |what: String| found.push(format!("{name}: {job_name}: {what}"));
        let granted = permissions(workflow, job);
        let writes = granted.values().any(|level| level == "write");
        for step in steps(job)
            .into_iter()
            .filter(|s| uses(s, "actions/checkout@"))
        {
            if step["with"]["persist-credentials"] != Value::Bool(false) {
                broken("a checkout without `persist-credentials: false`".into());
            }
        }
        let model = steps(job).into_iter().any(runs_the_model);
        if let Some(called) = job["uses"].as_str() {
            // A reusable workflow's jobs are checked as shipped workflows of their own; the
            // caller must pass them no secret (the agent job alone may hold the key).
            if job.get("secrets").is_some() {
                broken(format!("passes secrets to {called}"));
            }
            continue;
        }
        if (model || holds_an_llm_key(job, &granted)) && writes {
            broken(format!(
                "runs the model or holds the LLM key with write permissions {granted:?}"
            ));
        }
        if !steps(job).into_iter().any(publishes) {
            continue;
        }
        if model || holds_an_llm_key(job, &granted) {
            broken("publishes and runs the model or holds the LLM key".into());
        }
        for step in steps(job) {
            if step.get("run").is_some() {
                broken("a `run:` step in a publish job".into());
            }
            if step["uses"].as_str().is_some_and(|u| u.starts_with("./")) {
                broken("an action from the checkout in a publish job".into());
            }
        }
        found.extend(
            digest_problems(jobs, job)
                .into_iter()
                .map(|p| format!("{name}: {job_name}: {p}")),
        );
    }
    found
}

/// The publish step's `bundle_digest` is `needs.<agent>.outputs.bundle_digest`, the agent job exports
/// the output of its Replan step, and the bundle the publish job downloads is the one it uploads.
fn digest_problems(jobs: &serde_json::Map<String, Value>, publish: &Value) -> Vec<String> {
    let step = steps(publish).into_iter().find(|s| publishes(s)).unwrap();
    let digest = step["with"]["bundle_digest"].as_str().unwrap_or_default();
    let Some(agent_name) = digest
        .strip_prefix("${{ needs.")
        .and_then(|rest| rest.strip_suffix(".outputs.bundle_digest }}"))
    else {
        return vec![format!(
            "the publish step's digest is `{digest}`, not the agent job's bundle_digest"
        )];
    };
    let Some(agent) = jobs.get(agent_name) else {
        return vec![format!(
            "the digest names the job {agent_name}, which does not exist"
        )];
    };
    let needed = match &publish["needs"] {
        Value::String(one) => one == agent_name,
        Value::Array(all) => all.iter().any(|n| n == agent_name),
        _ => false,
    };
    let mut problems = Vec::new();
    if !needed {
        problems.push(format!("does not need {agent_name}"));
    }
    let Some(replan) = steps(agent).into_iter().find(|s| runs_the_model(s)) else {
        return vec![format!("{agent_name} runs no Replan cycle")];
    };
    let exported = format!(
        "${{{{ steps.{}.outputs.bundle_digest }}}}",
        replan["id"].as_str().unwrap_or("<no id>")
    );
    if agent["outputs"]["bundle_digest"].as_str() != Some(exported.as_str()) {
        problems.push(format!(
            "{agent_name} does not export its Replan step's bundle_digest"
        ));
    }
    let artifact = |job: &Value, action: &str| {
        steps(job)
            .into_iter()
            .find(|s| uses(s, action))
            .map(|s| (s["with"]["name"].clone(), s["with"]["path"].clone()))
    };
    let uploaded = artifact(agent, "actions/upload-artifact@");
    let downloaded = artifact(publish, "actions/download-artifact@");
    if uploaded.is_none() || uploaded.as_ref().map(|u| &u.0) != downloaded.as_ref().map(|d| &d.0) {
        problems.push(format!(
            "downloads {downloaded:?}, not the bundle {agent_name} uploads ({uploaded:?})"
        ));
    }
    if uploaded.map(|u| u.1) != replan["with"].get("bundle").cloned() {
        problems.push(format!("{agent_name} does not upload its bundle directory"));
    }
    if downloaded.map(|d| d.1) != step["with"].get("publish").cloned() {
        problems.push("publishes another directory than it downloads".into());
    }
    problems
}

#[test]
fn every_shipped_workflow_keeps_write_credentials_away_from_the_model() {
    let workflows = shipped_workflows();
    let broken: Vec<String> = workflows
        .iter()
        .flat_map(|(name, w)| violations(name, w))
        .collect();
    assert_eq!(broken, Vec::<String>::new());
    // The rules above are not vacuous: the examples do run the model and publish.
    let all_steps: Vec<&Value> = workflows
        .iter()
        .filter(|(name, _)| name.starts_with("examples/"))
        .flat_map(|(_, w)| w["jobs"].as_object().unwrap().values())
        .flat_map(steps)
        .collect();
    assert!(all_steps.iter().filter(|s| runs_the_model(s)).count() >= 2);
    assert!(all_steps.iter().filter(|s| publishes(s)).count() >= 2);
}

/// The rules catch what the workflows shipped before split trust did.
#[test]
fn the_rules_catch_a_token_in_git_config_and_a_writing_model_job() {
    let single_job: Value = serde_saphyr::from_str(
        r#"
permissions:
  contents: write
  issues: write
jobs:
  replan:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: true
      - id: replan
        uses: replan-dev/replan@v1
        with:
          anthropic_api_key: ${{ secrets.ANTHROPIC_API_KEY }}
  publish:
    needs: replan
    permissions:
      contents: write
    steps:
      - uses: actions/checkout@v5
      - run: ./publish.sh
      - uses: replan-dev/replan@v1
        with:
          publish: dir
"#,
    )
    .unwrap();
    let broken = violations("old.yml", &single_job);
    for expected in [
        "old.yml: replan: a checkout without `persist-credentials: false`",
        "old.yml: replan: runs the model or holds the LLM key with write permissions",
        "old.yml: publish: a checkout without `persist-credentials: false`",
        "old.yml: publish: a `run:` step in a publish job",
        "old.yml: publish: the publish step's digest is ``",
    ] {
        assert!(
            broken.iter().any(|b| b.starts_with(expected)),
            "{expected}\n{broken:#?}"
        );
    }
}

#[test]
fn reusable_workflows_the_examples_call_are_shipped_beside_them() {
    for (name, workflow) in shipped_workflows() {
        for job in workflow["jobs"].as_object().unwrap().values() {
            let Some(called) = job["uses"].as_str() else {
                continue;
            };
            let file = called
                .strip_prefix("$/.github/workflows/")
                .or_else(|| called.strip_prefix("./.github/workflows/"))
                .unwrap_or_else(|| {
                    panic!("{name} calls {called}, not a workflow of its own repository")
                });
            let dir = Path::new(&name).parent().unwrap();
            assert!(
                repo_root().join(dir).join(file).is_file(),
                "{name} calls {called}: copy it beside the caller"
            );
        }
    }
}

/// `replan-split.yml` became `replan.yml`: nothing points at the old file.
#[test]
fn no_reference_to_the_removed_split_workflow() {
    let mut texts = vec!["README.md".to_owned(), "action.yml".to_owned()];
    for dir in [
        "docs",
        "examples/workflows",
        "dist/gitlab",
        "tests/packaging",
    ] {
        for entry in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            texts.push(
                path.strip_prefix(repo_root())
                    .unwrap()
                    .display()
                    .to_string(),
            );
        }
    }
    let old = ["workflows/", "replan-split.yml"].concat();
    for file in texts {
        let text = std::fs::read_to_string(repo_root().join(&file)).unwrap_or_default();
        assert!(!text.contains(&old), "{file} mentions {old}");
    }
}
