//! `examples/workflows/replan-split.yml`: the job that runs the model can read but not write,
//! the job that writes holds no LLM key and runs nothing but `replan publish`.

use serde_json::Value;

use super::tools::repo_root;

fn split_workflow() -> (String, Value) {
    let text = std::fs::read_to_string(repo_root().join("examples/workflows/replan-split.yml"))
        .expect("read the split workflow");
    let value = serde_saphyr::from_str(&text).expect("the split workflow is YAML");
    (text, value)
}

fn steps(job: &Value) -> &Vec<Value> {
    job["steps"].as_array().expect("the job has steps")
}

fn step_using<'a>(job: &'a Value, action: &str) -> &'a Value {
    steps(job)
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action)))
        .unwrap_or_else(|| panic!("a step uses {action}"))
}

#[test]
fn split_workflow_agent_job_reads_only_and_uploads_the_bundle() {
    let (_, w) = split_workflow();
    assert_eq!(
        w["permissions"],
        serde_json::json!({}),
        "nothing granted by default"
    );
    let agent = &w["jobs"]["agent"];
    assert_eq!(
        agent["permissions"],
        serde_json::json!({"contents": "read", "issues": "read"})
    );
    assert_eq!(
        step_using(agent, "actions/checkout@")["with"]["persist-credentials"],
        false
    );
    let replan = step_using(agent, "replan-dev/replan@");
    let bundle = replan["with"]["bundle"]
        .as_str()
        .expect("runs with a bundle");
    let key = replan["with"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_str)
        .find(|v| v.contains("secrets."))
        .expect("the LLM key comes from a secret");
    assert!(key.contains("KEY"), "{key}");
    let upload = step_using(agent, "actions/upload-artifact@");
    assert_eq!(upload["with"]["path"], bundle, "uploads the bundle");
}

#[test]
fn split_workflow_publish_job_writes_without_a_key_or_code_from_the_checkout() {
    let (_, w) = split_workflow();
    let publish = &w["jobs"]["publish"];
    assert_eq!(publish["needs"], "agent");
    let permissions = publish["permissions"].as_object().expect("permissions");
    for scope in ["contents", "issues", "pull-requests"] {
        assert_eq!(permissions[scope], "write", "{scope}");
    }
    assert!(!permissions.contains_key("models"), "no models permission");
    let job_text = serde_json::to_string(publish).unwrap();
    assert!(!job_text.contains("KEY"), "no LLM key: {job_text}");
    assert!(
        steps(publish).iter().all(|s| s.get("run").is_none()),
        "no script runs in the publish job"
    );
    assert!(
        steps(publish)
            .iter()
            .all(|s| s["uses"].as_str().is_none_or(|u| !u.starts_with("./"))),
        "no action from the checkout"
    );
    let artifact =
        step_using(&w["jobs"]["agent"], "actions/upload-artifact@")["with"]["name"].clone();
    let download = step_using(publish, "actions/download-artifact@");
    assert_eq!(download["with"]["name"], artifact);
    let replan = step_using(publish, "replan-dev/replan@");
    assert_eq!(replan["with"]["publish"], download["with"]["path"]);
    assert!(replan["with"].get("bundle").is_none());
}
