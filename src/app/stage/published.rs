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

/// The most subtasks one wave's child pipeline runs: the two matrices a wave of the shipped
/// GitHub workflow runs, as many as a plan of the default `planning.max_subtasks` can make ready.
const MAX_WAVE: usize = 2 * super::matrix::PER_MATRIX;

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
    // `matrix`, then `matrix_2`, ... while they last (a wave split to fit the platforms).
    let mut ids: Vec<String> = Vec::new();
    for n in 1.. {
        let name = super::matrix::output_name(n);
        let Some(text) = outputs.get(&name) else {
            if n == 1 {
                return Err(refused("the stage fanned out without a readable `matrix`"));
            }
            break;
        };
        let matrix: serde_json::Value = serde_json::from_str(text)
            .map_err(|_| refused(&format!("the `{name}` output is not JSON")))?;
        let part: Vec<String> = matrix
            .get("subtask")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| refused("the matrix has no `subtask` list"))?
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| refused("a subtask id is not a string"))?;
        ids.extend(part);
        if ids.len() > MAX_WAVE {
            break;
        }
    }
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
    fn a_wave_split_into_two_matrices_gives_jobs_for_both() {
        let dir = bundle_with_outputs(
            &(output("status", "fanned_out")
                + &output("matrix", r#"{"subtask":["task_1"]}"#)
                + &output("matrix_2", r#"{"subtask":["task_2"]}"#)
                + &output("matrices", "2")),
        );
        let jobs = jobs(dir.path()).unwrap();
        assert!(
            jobs.contains(&"replan-subtask-task_1".to_owned()),
            "{jobs:?}"
        );
        assert!(
            jobs.contains(&"replan-subtask-task_2".to_owned()),
            "{jobs:?}"
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
        let many: Vec<String> = (0..=MAX_WAVE).map(|i| format!("t{i}")).collect();
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
