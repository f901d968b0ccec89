//! `action.yml` checked the way a runner would use it (actionlint reads workflows, not action
//! manifests): inputs declared and used, every input the binary reads (`ACTION_INPUTS`) passed
//! as `INPUT_*`, outputs mapped to step outputs, no expression pasted into a script; and its run
//! step executed with hostile input text to show the text reaches the binary as data.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

use super::tools::repo_root;
use replan::config::ACTION_INPUTS;

const OUTPUTS: [&str; 10] = [
    "status",
    "plan_version",
    "tasks_done",
    "tasks_total",
    "pull_request",
    "history_commit",
    "matrix",
    "bundle_digest",
    "matrix_2",
    "matrices",
];

fn manifest_text() -> String {
    std::fs::read_to_string(repo_root().join("action.yml")).expect("read action.yml")
}

fn manifest() -> Value {
    serde_saphyr::from_str(&manifest_text()).expect("action.yml is valid YAML")
}

fn inputs(m: &Value) -> &serde_json::Map<String, Value> {
    m["inputs"].as_object().expect("inputs: is a mapping")
}

fn steps(m: &Value) -> &Vec<Value> {
    assert_eq!(m["runs"]["using"], "composite");
    m["runs"]["steps"].as_array().expect("runs.steps is a list")
}

fn step<'a>(m: &'a Value, id: &str) -> &'a Value {
    steps(m)
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("a step with id {id}"))
}

fn expressions(text: &str) -> Vec<String> {
    let re = Regex::new(r"\$\{\{\s*(.*?)\s*\}\}").expect("regex");
    re.captures_iter(text).map(|c| c[1].to_owned()).collect()
}

#[test]
fn action_inputs_used_in_steps_are_declared_and_every_declared_input_is_used() {
    let m = manifest();
    let declared: BTreeSet<&str> = inputs(&m).keys().map(String::as_str).collect();
    let steps_text = serde_json::to_string(steps(&m)).expect("steps serialise");
    let input_ref = Regex::new(r"\binputs\.([A-Za-z0-9_-]+)").expect("regex");
    let used: BTreeSet<String> = expressions(&steps_text)
        .iter()
        .flat_map(|e| {
            input_ref
                .captures_iter(e)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    for name in &used {
        assert!(
            declared.contains(name.as_str()),
            "steps use undeclared input {name}"
        );
    }
    for name in &declared {
        assert!(
            used.contains(*name),
            "input {name} is declared but no step uses it"
        );
    }
    for required in [
        "github_token",
        "anthropic_api_key",
        "openai_api_key",
        "config_path",
    ] {
        assert!(declared.contains(required), "input {required} is missing");
    }
    for (name, spec) in inputs(&m) {
        assert!(
            spec["description"].as_str().is_some_and(|d| !d.is_empty()),
            "input {name} has a description"
        );
    }
}

#[test]
fn every_input_the_binary_reads_is_declared_and_passed_as_input_env() {
    let m = manifest();
    let run_env = step(&m, "run")["env"]
        .as_object()
        .expect("the run step has env");
    let names = ACTION_INPUTS
        .iter()
        .map(|(name, _)| *name)
        .chain(["CONFIG_PATH"]);
    for name in names {
        let input = name.to_lowercase();
        assert!(
            inputs(&m).contains_key(&input),
            "action.yml lacks input {input} ({name})"
        );
        assert_eq!(
            run_env
                .get(&format!("INPUT_{name}"))
                .and_then(Value::as_str),
            Some(format!("${{{{ inputs.{input} }}}}").as_str()),
            "the run step passes INPUT_{name} from inputs.{input}"
        );
    }
}

#[test]
fn inputs_listed_in_the_config_reference_exist_in_action_yml() {
    let reference = std::fs::read_to_string(repo_root().join("docs/config-reference.md"))
        .expect("read docs/config-reference.md");
    let m = manifest();
    let mut listed = 0;
    for line in reference.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | key | default | env | input |
        if let Some(input) = cells
            .get(4)
            .map(|c| c.trim_matches('`'))
            .filter(|c| !c.is_empty())
        {
            listed += 1;
            assert!(
                inputs(&m).contains_key(input),
                "reference lists input {input}, action.yml lacks it"
            );
        }
    }
    assert!(
        listed >= ACTION_INPUTS.len(),
        "the reference lists the inputs ({listed} found)"
    );
}

#[test]
fn action_outputs_map_to_the_run_steps_outputs() {
    let m = manifest();
    let outputs = m["outputs"].as_object().expect("outputs: is a mapping");
    let names: BTreeSet<&str> = outputs.keys().map(String::as_str).collect();
    assert_eq!(names, OUTPUTS.into_iter().collect());
    for (name, spec) in outputs {
        assert_eq!(
            spec["value"].as_str(),
            Some(format!("${{{{ steps.run.outputs.{name} }}}}").as_str()),
            "output {name}"
        );
    }
    step(&m, "run");
}

#[test]
fn no_expression_is_pasted_into_a_run_script() {
    let m = manifest();
    for s in steps(&m) {
        if let Some(script) = s["run"].as_str() {
            assert!(
                !script.contains("${{"),
                "step {} pastes an expression into its script",
                s["id"]
            );
            assert_eq!(s["shell"], "bash", "step {} names its shell", s["id"]);
        }
    }
    let install = step(&m, "install")["run"]
        .as_str()
        .expect("install runs a script");
    assert!(
        install.contains("$GITHUB_ACTION_PATH/dist/install.sh"),
        "{install}"
    );
    assert!(repo_root().join("dist/install.sh").is_file());
}

/// The runner's substitution of `${{ ... }}` in a step's env, for the contexts action.yml uses.
fn evaluate(expr: &str, given: &BTreeMap<&str, &str>, m: &Value, binary: &str) -> String {
    if let Some(name) = expr.strip_prefix("inputs.") {
        if let Some(v) = given.get(name) {
            return (*v).to_owned();
        }
        let default = inputs(m)[name]["default"].as_str().unwrap_or_default();
        return match expressions(default).first() {
            Some(inner) => evaluate(inner, given, m, binary),
            None => default.to_owned(),
        };
    }
    match expr {
        "steps.install.outputs.path" => binary.to_owned(),
        "github.token" => "workflow-token".to_owned(),
        other => panic!("the test runner does not know the expression {other}"),
    }
}

#[test]
fn run_step_hands_inputs_to_the_binary_as_data_and_keeps_job_keys() {
    let m = manifest();
    let dir = tempfile::tempdir().expect("temp dir");
    let record = dir.path().join("seen");
    let pwned = dir.path().join("pwned");
    let binary = dir.path().join("replan");
    std::fs::write(
        &binary,
        format!(
            "#!/bin/sh\n{{ printf 'ARGS'; printf ' %s' \"$@\"; echo; env | sort; }} > '{}'\n",
            record.display()
        ),
    )
    .expect("write the fake binary");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let hostile = format!(
        "gpt-4o\"; touch {}; echo \"$(touch {})",
        pwned.display(),
        pwned.display()
    );
    let given: BTreeMap<&str, &str> = [
        ("model", hostile.as_str()),
        ("max_subtasks", "7"),
        ("config_path", "ci/replan config.yml"),
        ("anthropic_api_key", "sk-ant-from-input"),
        ("stage", "subtask"),
        ("subtask", "task_1"),
    ]
    .into();
    let run = step(&m, "run");
    let binary_text = binary.display().to_string();
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(run["run"].as_str().expect("run script"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        // Set by the job: an empty input must not hide it.
        .env("OPENAI_API_KEY", "sk-from-job-env");
    for (name, value) in run["env"].as_object().expect("env") {
        let template = value.as_str().expect("env values are strings");
        let exprs = expressions(template);
        assert_eq!(exprs.len(), 1, "{name} is one expression");
        command.env(name, evaluate(&exprs[0], &given, &m, &binary_text));
    }
    let output = command.output().expect("run the step's script");
    assert!(output.status.success(), "{output:?}");
    let seen = std::fs::read_to_string(&record).expect("the binary ran");
    assert!(!pwned.exists(), "input text was executed as shell");
    let first = seen.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "ARGS run --config ci/replan config.yml --stage subtask --subtask task_1"
    );
    let env: BTreeMap<&str, &str> = seen
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('='))
        .collect();
    assert_eq!(env.get("INPUT_MODEL").copied(), Some(hostile.as_str()));
    assert_eq!(env.get("INPUT_MAX_SUBTASKS").copied(), Some("7"));
    assert_eq!(env.get("INPUT_PROVIDER").copied(), Some(""));
    assert_eq!(env.get("GITHUB_TOKEN").copied(), Some("workflow-token"));
    assert_eq!(
        env.get("ANTHROPIC_API_KEY").copied(),
        Some("sk-ant-from-input")
    );
    assert_eq!(env.get("OPENAI_API_KEY").copied(), Some("sk-from-job-env"));
    assert!(
        !env.keys().any(|k| k.starts_with("REPLAN_INPUT_")),
        "the staging variables for keys are not left for the binary: {env:?}"
    );
}

/// The publish job's step: `replan publish DIR --digest DIGEST`, both values as arguments, and
/// no LLM key exported when none was given.
#[test]
fn run_step_publishes_with_the_agents_digest_as_an_argument() {
    let m = manifest();
    let dir = tempfile::tempdir().expect("temp dir");
    let record = dir.path().join("seen");
    let binary = dir.path().join("replan");
    std::fs::write(
        &binary,
        format!(
            "#!/bin/sh\n{{ printf 'ARGS'; printf ' [%s]' \"$@\"; echo; env | sort; }} > '{}'\n",
            record.display()
        ),
    )
    .expect("write the fake binary");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let digest = "sha256:0123 $(id)";
    let given: BTreeMap<&str, &str> =
        [("publish", "/tmp/replan bundle"), ("bundle_digest", digest)].into();
    let run = step(&m, "run");
    let binary_text = binary.display().to_string();
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(run["run"].as_str().expect("run script"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    for (name, value) in run["env"].as_object().expect("env") {
        let exprs = expressions(value.as_str().expect("env values are strings"));
        command.env(name, evaluate(&exprs[0], &given, &m, &binary_text));
    }
    let output = command.output().expect("run the step's script");
    assert!(output.status.success(), "{output:?}");
    let seen = std::fs::read_to_string(&record).expect("the binary ran");
    assert_eq!(
        seen.lines().next().unwrap_or_default(),
        format!("ARGS [publish] [/tmp/replan bundle] [--digest] [{digest}]")
    );
    assert!(
        !seen
            .lines()
            .any(|l| l.starts_with("ANTHROPIC_API_KEY=") || l.starts_with("OPENAI_API_KEY=")),
        "{seen}"
    );
}
