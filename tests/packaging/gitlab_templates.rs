//! Split trust in the GitLab templates (`dist/gitlab/*.gitlab-ci.yml`): a job that runs Replan's
//! cycle (the model) refuses to start with `GITLAB_TOKEN`, passes the process only the read-only
//! token, records into a bundle and keeps no token in the remote URL; a job that publishes holds
//! no LLM key, runs nothing but `replan publish` of the bundle the agent job made, with its
//! digest. GitLab project variables outrank job variables, so the secrets are kept apart by
//! environment scope: each kind of job names its environment.

use std::collections::BTreeMap;

use serde_json::Value;

use super::tools::repo_root;

fn templates() -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(repo_root().join("dist/gitlab")).expect("read dist/gitlab") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("read a template");
        let value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is YAML: {e}", path.display()));
        found.insert(
            path.file_name().unwrap().to_string_lossy().into_owned(),
            value,
        );
    }
    found
}

fn script(job: &Value) -> Vec<String> {
    job["script"]
        .as_array()
        .map(|lines| {
            lines
                .iter()
                .map(|l| l.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn environment(job: &Value) -> &str {
    job["environment"]["name"].as_str().unwrap_or_default()
}

/// Every rule broken by one template (or a child pipeline Replan writes), as `file: job: what`.
pub fn violations(name: &str, template: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let Some(jobs) = template.as_object() else {
        return vec![format!("{name}: not a mapping")];
    };
    for (job_name, job) in jobs.iter().filter(|(_, j)| j.get("script").is_some()) {
        let mut broken = |what: String| found.push(format!("{name}: {job_name}: {what}"));
        let lines = script(job);
        let text = serde_json::to_string(job).unwrap();
        let runs = lines.iter().any(|l| l.contains("replan run"));
        let publishes = lines.iter().any(|l| l.contains("replan publish"));
        if runs {
            if !lines[0].contains(r#"[ -n "${GITLAB_TOKEN:-}" ]"#) || !lines[0].contains("exit 1") {
                broken("runs the model without first refusing a GITLAB_TOKEN".into());
            }
            if lines
                .iter()
                .any(|l| l.contains("replan run") && !l.contains("--bundle"))
            {
                broken("runs the model without --bundle".into());
            }
            if text.contains("$GITLAB_TOKEN") || text.contains("${GITLAB_TOKEN}") {
                broken("hands GITLAB_TOKEN to the model's job".into());
            }
            if job["variables"]["FF_GIT_URLS_WITHOUT_TOKENS"] != "true" {
                broken("lets the runner put the job token in the remote URL".into());
            }
            if environment(job) != "replan-agent" {
                broken("not in the environment replan-agent (the LLM key's scope)".into());
            }
            let paths = job["artifacts"]["paths"].to_string();
            if !paths.contains("replan-bundle.digest") {
                broken("leaves no replan-bundle.digest beside its bundle".into());
            }
            if !job["artifacts"]["reports"]["dotenv"].is_null() {
                broken(
                    "a dotenv report lets the model's job set the publish job's variables".into(),
                );
            }
        }
        if publishes {
            if runs || text.to_ascii_lowercase().contains("api_key\"") {
                broken("publishes and runs the model or names an LLM key".into());
            }
            if !lines[0].contains("ANTHROPIC_API_KEY") || !lines[0].contains("exit 1") {
                broken("publishes without first refusing an LLM key".into());
            }
            if lines.len() != 2 || !lines[1].starts_with("replan publish ") {
                broken(format!("runs more than `replan publish`: {lines:?}"));
            }
            if !lines[1].contains(r#"--digest "$(cat replan-bundle.digest)""#) {
                broken("publishes without the agent's bundle digest".into());
            }
            if environment(job) != "replan-publish" {
                broken("not in the environment replan-publish (GITLAB_TOKEN's scope)".into());
            }
            let agent = job["needs"][0]["job"].as_str().unwrap_or_default();
            match jobs.get(agent) {
                Some(a) if script(a).iter().any(|l| l.contains("replan run --")) => {}
                _ => broken(format!("needs `{agent}`, not a job that records a bundle")),
            }
        }
        if !runs && !publishes && lines.iter().any(|l| l.contains("replan")) {
            broken("runs Replan in neither role".into());
        }
    }
    found
}

#[test]
fn every_gitlab_template_keeps_the_write_token_away_from_the_model() {
    let templates = templates();
    for expected in [
        "replan.gitlab-ci.yml",
        "replan-split.gitlab-ci.yml",
        "replan-fanout.gitlab-ci.yml",
    ] {
        assert!(templates.contains_key(expected), "{expected} ships");
    }
    for (name, template) in &templates {
        assert_eq!(violations(name, template), Vec::<String>::new());
        let jobs = template.as_object().unwrap().values();
        let lines: Vec<String> = jobs.flat_map(script).collect();
        assert!(lines.iter().any(|l| l.contains("replan run")), "{name}");
        assert!(lines.iter().any(|l| l.contains("replan publish")), "{name}");
    }
}

/// The default template is split trust too: the same jobs as replan-split.gitlab-ci.yml.
#[test]
fn the_default_gitlab_template_is_the_split_one() {
    let templates = templates();
    assert_eq!(
        templates["replan.gitlab-ci.yml"],
        templates["replan-split.gitlab-ci.yml"]
    );
}

/// The child pipeline Replan writes for a wave follows the same rules.
#[test]
fn the_generated_child_pipeline_keeps_the_write_token_away_from_the_model() {
    let ids = ["task_1".to_owned(), "task_2".to_owned()];
    let yaml = replan::app::gitlab_wave(&ids).unwrap();
    let pipeline: Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(violations("child", &pipeline), Vec::<String>::new());
}

/// The rules catch the single job the templates shipped before split trust.
#[test]
fn the_rules_catch_a_model_job_with_the_write_token() {
    let old: Value = serde_saphyr::from_str(
        r#"
replan:
  variables:
    GIT_STRATEGY: fetch
  script:
    - replan run
publish:
  needs: [replan]
  script:
    - ./prepare.sh
    - replan publish dir
"#,
    )
    .unwrap();
    let broken = violations("old", &old);
    for expected in [
        "old: replan: runs the model without first refusing a GITLAB_TOKEN",
        "old: replan: runs the model without --bundle",
        "old: replan: lets the runner put the job token in the remote URL",
        "old: publish: publishes without first refusing an LLM key",
        "old: publish: publishes without the agent's bundle digest",
    ] {
        assert!(
            broken.iter().any(|b| b == expected),
            "{expected}\n{broken:#?}"
        );
    }
}
