//! The ready subtasks as CI matrices: each exactly `{"subtask": [ids...]}`, at most
//! [`PER_MATRIX`] ids each, to the step outputs `matrix`, `matrix_2`, ... (and their count,
//! `matrices`) on GitHub; the whole list to `--matrix-out FILE`.

use crate::app::exit::CliError;
use std::collections::BTreeMap;
use std::path::Path;

/// The most subtasks one matrix holds: GitHub runs at most 256 jobs from one matrix, GitLab at
/// most 200 from one `parallel:matrix`; one size fits both, and a wave of more ready subtasks is
/// split into as many matrices as it needs.
pub const PER_MATRIX: usize = 200;

/// The step output that holds the `n`th matrix (1-based): `matrix`, then `matrix_2`, ...
pub fn output_name(n: usize) -> String {
    if n == 1 {
        "matrix".to_owned()
    } else {
        format!("matrix_{n}")
    }
}

/// `ids` as matrices of at most [`PER_MATRIX`] each, in order; one empty matrix for none.
pub fn split(ids: &[String]) -> Vec<String> {
    if ids.is_empty() {
        return vec![matrix_json(ids)];
    }
    ids.chunks(PER_MATRIX).map(matrix_json).collect()
}

/// `{"subtask":["task_1","task_2"]}`.
pub fn matrix_json(ids: &[String]) -> String {
    serde_json::json!({ "subtask": ids }).to_string()
}

/// Subtask ids come from the model and end up in job names, branch names and command lines:
/// only plain names pass.
pub fn check_id(id: &str) -> Result<(), CliError> {
    let plain = !id.is_empty()
        && id.len() <= 64
        && !id.starts_with(['-', '.'])
        && !id.ends_with(".lock")
        && !id.contains("..")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "the subtask id `{}` cannot name a CI job or a branch: ids are 1-64 letters, digits, `_`, `-` or `.`; ask for a `/replan tasks` with plain ids",
            id.escape_default()
        )))
    }
}

pub fn write(
    env: &BTreeMap<String, String>,
    ids: &[String],
    matrix_out: Option<&Path>,
) -> Result<(), CliError> {
    let json = matrix_json(ids);
    tracing::info!("ready subtasks for the next jobs: {json}");
    if let Some(path) = env.get("GITHUB_OUTPUT").filter(|p| !p.is_empty()) {
        let matrices = split(ids);
        let mut outputs: Vec<(String, String)> = matrices
            .iter()
            .enumerate()
            .map(|(i, m)| (output_name(i + 1), m.clone()))
            .collect();
        outputs.push(("matrices".to_owned(), matrices.len().to_string()));
        let outputs: Vec<(&str, String)> = outputs
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        crate::actions::outputs::append(Path::new(path), &outputs).map_err(|e| {
            CliError::failure(format!(
                "could not write the `matrix` outputs to {path}: {e}"
            ))
        })?;
    }
    if let Some(path) = matrix_out {
        super::output_file::write_file(path, &json, "--matrix-out")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_exactly_the_subtask_list() {
        let ids = vec!["task_1".to_owned(), "task_2".to_owned()];
        assert_eq!(matrix_json(&ids), r#"{"subtask":["task_1","task_2"]}"#);
    }

    #[test]
    fn a_wave_is_split_into_matrices_that_fit_both_platforms() {
        let ids: Vec<String> = (1..=401).map(|i| format!("task_{i}")).collect();
        let sizes: Vec<usize> = split(&ids)
            .iter()
            .map(|m| {
                let v: serde_json::Value = serde_json::from_str(m).unwrap();
                v["subtask"].as_array().unwrap().len()
            })
            .collect();
        assert_eq!(sizes, [200, 200, 1]);
        assert_eq!(split(&[]), [r#"{"subtask":[]}"#]);
        assert_eq!(output_name(1), "matrix");
        assert_eq!(output_name(3), "matrix_3");
    }

    #[test]
    fn ids_that_could_inject_are_refused() {
        for bad in ["", "a b", "x;rm -rf", "$(id)", "-f", "a..b", "x.lock", "é"] {
            let e = check_id(bad).unwrap_err();
            assert!(
                e.message.contains("cannot name a CI job"),
                "{bad}: {}",
                e.message
            );
        }
        check_id("task_1.a-b").unwrap();
    }
}
