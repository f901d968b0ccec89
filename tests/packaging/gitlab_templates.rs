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

/// `rules:if` as GitLab evaluates the templates' expressions: clauses joined by `&&`, each
/// `$VAR`, `$VAR == "text"`, `$VAR =~ /regex/`; an unset variable matches no pattern. A file
/// variable is matched by its content (the webhook's JSON for `TRIGGER_PAYLOAD`).
fn rule_matches(expression: &str, vars: &BTreeMap<&str, String>) -> bool {
    expression.split(" && ").all(|clause| {
        let clause = clause.trim();
        let value = |name: &str| vars.get(name.trim_start_matches('$')).cloned();
        if let Some((name, pattern)) = clause.split_once(" =~ ") {
            let pattern = pattern.trim().trim_start_matches('/').trim_end_matches('/');
            let regex = regex::Regex::new(pattern).expect("a valid pattern");
            value(name).is_some_and(|v| regex.is_match(&v))
        } else if let Some((name, text)) = clause.split_once(" == ") {
            value(name).as_deref() == Some(text.trim().trim_matches('"'))
        } else {
            value(clause).is_some_and(|v| !v.is_empty())
        }
    })
}

/// Whether the job is in a pipeline with these variables: the first matching rule decides.
fn job_runs(job: &Value, vars: &BTreeMap<&str, String>) -> bool {
    let rules = job["rules"].as_array().expect("the job has rules");
    rules
        .iter()
        .find(|rule| rule["if"].as_str().is_some_and(|e| rule_matches(e, vars)))
        .is_some_and(|rule| rule["when"].as_str() != Some("never"))
}

/// A webhook delivered to the trigger URL: the pipeline's variables.
fn triggered(payload: &Value) -> BTreeMap<&'static str, String> {
    [
        ("CI_PIPELINE_SOURCE", "trigger".to_owned()),
        // GitLab sends compact JSON.
        ("TRIGGER_PAYLOAD", payload.to_string()),
    ]
    .into()
}

fn gitlab_event(name: &str) -> Value {
    let path = repo_root().join("tests/fixtures/gitlab-events").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Issue 37 on GitLab: a pipeline webhook pointed at the trigger URL starts Replan for a
/// finished pipeline of a Replan merge request branch and for nothing else. Replan's own
/// pipelines (started by the trigger, on the default branch) start no pipeline, so a pipeline
/// webhook cannot make them start one another without end; other events still start Replan.
#[test]
fn pipeline_events_start_replan_only_for_finished_pipelines_of_its_branches() {
    let failed = gitlab_event("pipeline_hook.failed.json");
    let with = |patch: &dyn Fn(&mut Value)| {
        let mut hook = failed.clone();
        patch(&mut hook);
        hook
    };
    let own = with(&|h| {
        h["object_attributes"]["ref"] = "main".into();
        h["object_attributes"]["source"] = "trigger".into();
        h["object_attributes"]["status"] = "success".into();
        h["merge_request"] = Value::Null;
        h["builds"] = serde_json::json!([{"id": 1, "name": "replan-agent", "status": "success"}]);
    });
    let running = with(&|h| {
        h["object_attributes"]["status"] = "running".into();
        h["object_attributes"]["detailed_status"] = "running".into();
        h["builds"] = serde_json::json!([{"id": 1, "name": "test", "status": "running"}]);
    });
    let other_branch = with(&|h| {
        h["object_attributes"]["ref"] = "feature/x".into();
        h["merge_request"] = Value::Null;
    });
    let passed_mr = with(&|h| {
        h["object_attributes"]["ref"] = "refs/merge-requests/1/head".into();
        h["object_attributes"]["status"] = "success".into();
        h["merge_request"]["source_branch"] = "replan/mr-4".into();
    });
    let cases = [
        ("a failed pipeline of replan/issue-23", failed.clone(), true),
        (
            "a passed merge request pipeline of replan/mr-4",
            passed_mr,
            true,
        ),
        ("Replan's own pipeline", own, false),
        ("a running pipeline of replan/issue-23", running, false),
        ("a pipeline of another branch", other_branch, false),
        ("an issue event", gitlab_event("issue_hook.open.json"), true),
        (
            "a comment event",
            gitlab_event("note_hook.issue.json"),
            true,
        ),
    ];
    let templates = templates();
    for name in ["replan.gitlab-ci.yml", "replan-split.gitlab-ci.yml"] {
        for job in ["replan-agent", "replan-publish"] {
            for (what, payload, runs) in &cases {
                assert_eq!(
                    job_runs(&templates[name][job], &triggered(payload)),
                    *runs,
                    "{name}: {job}: {what}"
                );
            }
        }
    }
    // The fan-out template takes no pipeline event at all.
    let plan = &templates["replan-fanout.gitlab-ci.yml"]["replan-plan"];
    assert!(!job_runs(plan, &triggered(&failed)));
    assert!(job_runs(
        plan,
        &triggered(&gitlab_event("issue_hook.open.json"))
    ));
}
