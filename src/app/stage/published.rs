//! `replan publish DIR --pipeline-out FILE`: the next GitLab wave, written by the publish job
//! from the matrix the bundle carries. GitLab runs the file as pipeline configuration, so it is
//! never taken from a job that ran the model: only the subtask ids cross over, each checked as a
//! plain name, and the jobs around them are Replan's own.

use super::matrix::check_id;
use super::output_file::write_file;
use super::pipeline::child_pipeline;
use crate::app::exit::CliError;
use std::collections::BTreeMap;
use std::path::Path;

/// More jobs than any plan Replan makes (`max_subtasks` caps plans far below this).
const MAX_WAVE: usize = 64;

/// The ready subtask ids the bundle's step outputs name when its stage fanned out, else none.
fn published_ids(dir: &Path) -> Result<Vec<String>, CliError> {
    let path = dir.join(crate::app::bundle::OUTPUTS);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let outputs: BTreeMap<String, String> =
        crate::actions::outputs::parse(&text).into_iter().collect();
    if outputs.get("status").map(String::as_str) != Some("fanned_out") {
        return Ok(Vec::new());
    }
    let refused = |why: &str| {
        CliError::failure(format!(
            "{}: {why}; the bundle's `matrix` output must be {{\"subtask\": [ids...]}} as `replan run --stage` writes it",
            path.display()
        ))
    };
    let matrix: serde_json::Value = outputs
        .get("matrix")
        .and_then(|m| serde_json::from_str(m).ok())
        .ok_or_else(|| refused("the stage fanned out without a readable `matrix`"))?;
    let ids: Vec<String> = matrix
        .get("subtask")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| refused("the matrix has no `subtask` list"))?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| refused("a subtask id is not a string"))?;
    if ids.len() > MAX_WAVE {
        return Err(refused(&format!(
            "{} subtasks in one wave, more than {MAX_WAVE}",
            ids.len()
        )));
    }
    for id in &ids {
        check_id(id)?;
    }
    Ok(ids)
}

/// Write the next wave's child pipeline for the bundle in `dir` to `path`.
pub fn write_next_wave(
    dir: &Path,
    env: &BTreeMap<String, String>,
    path: &Path,
) -> Result<(), CliError> {
    let ids = published_ids(dir)?;
    write_file(path, &child_pipeline(&ids, env)?, "--pipeline-out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn bundle_with_outputs(outputs: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::app::bundle::OUTPUTS), outputs).unwrap();
        dir
    }

    fn output(name: &str, value: &str) -> String {
        format!("{name}<<EOF_R\n{value}\nEOF_R\n")
    }

    fn jobs(dir: &Path) -> Result<Vec<String>, CliError> {
        let out = dir.join("wave.yml");
        write_next_wave(dir, &BTreeMap::new(), &out)?;
        let parsed: Value = serde_saphyr::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        Ok(parsed
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("replan-"))
            .cloned()
            .collect())
    }

    #[test]
    fn a_fanned_out_bundle_gives_an_agent_and_a_publish_job_per_subtask() {
        let dir = bundle_with_outputs(
            &(output("status", "fanned_out") + &output("matrix", r#"{"subtask":["task_1"]}"#)),
        );
        assert_eq!(
            jobs(dir.path()).unwrap(),
            [
                "replan-subtask-task_1",
                "replan-publish-subtask-task_1",
                "replan-join",
                "replan-publish-join",
                "replan-next-wave"
            ]
        );
    }

    #[test]
    fn a_bundle_that_did_not_fan_out_gives_the_done_pipeline() {
        let dir = bundle_with_outputs(
            &(output("status", "completed") + &output("matrix", r#"{"subtask":["task_1"]}"#)),
        );
        assert_eq!(jobs(dir.path()).unwrap(), ["replan-done"]);
    }

    #[test]
    fn a_hostile_matrix_writes_no_pipeline() {
        let many: Vec<String> = (0..65).map(|i| format!("t{i}")).collect();
        for matrix in [
            r#"{"subtask":["$(id)"]}"#.to_owned(),
            r#"{"subtask":["a\nscript: [evil]"]}"#.to_owned(),
            r#"{"subtask":[7]}"#.to_owned(),
            r#"{"other":[]}"#.to_owned(),
            "not json".to_owned(),
            serde_json::json!({ "subtask": many }).to_string(),
        ] {
            let dir =
                bundle_with_outputs(&(output("status", "fanned_out") + &output("matrix", &matrix)));
            assert!(jobs(dir.path()).is_err(), "{matrix}");
            assert!(!dir.path().join("wave.yml").exists(), "{matrix}");
        }
    }
}
