//! The ready subtasks as the CI matrix: exactly `{"subtask": [ids...]}`, to the `matrix` step
//! output on GitHub and to `--matrix-out FILE`.

use crate::app::exit::CliError;
use std::collections::BTreeMap;
use std::path::Path;

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
        crate::actions::outputs::append(Path::new(path), &[("matrix", json.clone())]).map_err(
            |e| {
                CliError::failure(format!(
                    "could not write the `matrix` output to {path}: {e}"
                ))
            },
        )?;
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
