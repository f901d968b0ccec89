//! `replan plan validate FILE`: read a plan from a JSON file and validate it.
//!
//! Three shapes are accepted: a bare plan (`{"goal_understanding", "task_decomposition",
//! "action_plan"}`), a seed 001 planning response (`{"phase": "planning", ...}`), or a wrapper
//! `{"plan": {...}}` (as in a history `plan` entry).

use super::validate::{PlanProblem, ValidationRules, validate};
use super::{Plan, PlanningResponse};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFileForm {
    Bare,
    PlanningResponse,
    Wrapped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    pub path: PathBuf,
    pub form: PlanFileForm,
    pub plan: Plan,
    /// Empty when the plan is valid.
    pub problems: Vec<PlanProblem>,
}

impl ValidationReport {
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.plan.task_decomposition.subtasks.len();
        if self.problems.is_empty() {
            return writeln!(f, "{}: valid plan with {n} subtasks", self.path.display());
        }
        writeln!(
            f,
            "{}: {} problem(s) in a plan with {n} subtasks:",
            self.path.display(),
            self.problems.len()
        )?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: invalid JSON: {message}; fix the syntax at that position", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}:{line}:{column}: not a plan: {message}; expected a plan, a planning response (\"phase\": \"planning\") or {{\"plan\": ...}}", path.display())]
    Shape {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: the planning response holds an error instead of a plan ({kind}: {message}); it needs answers: {}", path.display(), questions.join("; "))]
    PlanningError {
        path: PathBuf,
        kind: String,
        message: String,
        questions: Vec<String>,
    },
    #[error("{}: the planning response has no {missing}; add the {missing} section", path.display())]
    Incomplete {
        path: PathBuf,
        missing: &'static str,
    },
}

/// Read and validate the plan in `path`. A plan with problems is `Ok` with `problems` filled; an
/// unreadable or malformed file is an `Err` naming the file (and line and column for JSON).
pub fn validate_file(
    path: &Path,
    rules: &ValidationRules,
) -> Result<ValidationReport, PlanFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlanFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (form, plan) = parse_plan_text(path, &text)?;
    let problems = validate(&plan, rules).err().unwrap_or_default();
    Ok(ValidationReport {
        path: path.to_path_buf(),
        form,
        plan,
        problems,
    })
}

/// Parse the text of a plan file; `path` is only used in error messages.
pub fn parse_plan_text(path: &Path, text: &str) -> Result<(PlanFileForm, Plan), PlanFileError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PlanFileError::Syntax {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: super::shape::without_position(&e),
        })?;
    let shape = |e: super::shape::ShapeError| PlanFileError::Shape {
        path: path.to_path_buf(),
        line: e.line,
        column: e.column,
        message: e.to_string(),
    };
    let object = value.as_object();
    let has = |key: &str| object.is_some_and(|o| o.contains_key(key));
    if has("plan") && !has("task_decomposition") {
        #[derive(Deserialize)]
        struct Wrapped {
            plan: Plan,
        }
        // Parse the text again (not the value) so shape errors carry line and column.
        let w: Wrapped = super::shape::from_str(text).map_err(shape)?;
        return Ok((PlanFileForm::Wrapped, w.plan));
    }
    if has("phase") || has("error") {
        let r: PlanningResponse = super::shape::from_str(text).map_err(shape)?;
        if let Some(e) = r.error {
            return Err(PlanFileError::PlanningError {
                path: path.to_path_buf(),
                kind: e.kind,
                message: e.message,
                questions: e.clarification_needed,
            });
        }
        let incomplete = |missing| PlanFileError::Incomplete {
            path: path.to_path_buf(),
            missing,
        };
        let plan = Plan {
            goal_understanding: r
                .goal_understanding
                .ok_or_else(|| incomplete("goal_understanding"))?,
            task_decomposition: r
                .task_decomposition
                .ok_or_else(|| incomplete("task_decomposition"))?,
            action_plan: r.action_plan.ok_or_else(|| incomplete("action_plan"))?,
        };
        return Ok((PlanFileForm::PlanningResponse, plan));
    }
    let plan: Plan = super::shape::from_str(text).map_err(shape)?;
    Ok((PlanFileForm::Bare, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE: &str = r#"{
  "goal_understanding": {"main_objective": "Fix the README"},
  "task_decomposition": {"subtasks": [
    {"id": "task_1", "description": "read", "dependencies": []},
    {"id": "task_2", "description": "edit", "dependencies": ["task_1"]}
  ]},
  "action_plan": {"execution_order": ["task_1", "task_2"], "actions": []}
}"#;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn all_three_shapes_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let bare = write(dir.path(), "bare.json", BARE);
        let wrapped = write(dir.path(), "wrapped.json", &format!("{{\"plan\": {BARE}}}"));
        let response = write(
            dir.path(),
            "response.json",
            &BARE.replacen('{', "{\"phase\": \"planning\", \"comment\": \"ok\",", 1),
        );
        let rules = ValidationRules::default();
        for (p, form) in [
            (bare, PlanFileForm::Bare),
            (wrapped, PlanFileForm::Wrapped),
            (response, PlanFileForm::PlanningResponse),
        ] {
            let r = validate_file(&p, &rules).unwrap();
            assert_eq!(r.form, form);
            assert!(r.is_valid(), "{r}");
            assert_eq!(r.plan.task_decomposition.subtasks.len(), 2);
        }
    }

    #[test]
    fn a_syntax_error_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "broken.json",
            "{\n  \"plan\": {\n    \"x\": ,\n}",
        );
        let e = validate_file(&p, &ValidationRules::default()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{}:3:10: invalid JSON: expected value",
                p.display()
            )),
            "{msg}"
        );
    }

    #[test]
    fn a_wrong_shape_names_the_missing_field_path_and_position() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "shape.json",
            "{\"task_decomposition\": {\"subtasks\": []}}",
        );
        let msg = validate_file(&p, &ValidationRules::default())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("shape.json:1:"), "{msg}");
        assert!(msg.contains("`goal_understanding`: missing"), "{msg}");
    }

    #[test]
    fn a_wrong_shape_deep_in_a_planning_response_names_the_whole_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "deep.json",
            r#"{"phase":"planning","goal_understanding":{"main_objective":"x"},"task_decomposition":{"subtasks":[{"id":"a"}]},"action_plan":{}}"#,
        );
        let msg = validate_file(&p, &ValidationRules::default())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`task_decomposition.subtasks[0].description`: missing"),
            "{msg}"
        );
    }

    #[test]
    fn problems_are_reported_not_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "cycle.json",
            &BARE.replace("\"dependencies\": []", "\"dependencies\": [\"task_2\"]"),
        );
        let r = validate_file(&p, &ValidationRules::default()).unwrap();
        assert!(!r.is_valid());
        let text = r.to_string();
        assert!(
            text.contains("dependency cycle task_1 → task_2 → task_1"),
            "{text}"
        );
    }

    #[test]
    fn a_planning_error_response_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "err.json",
            r#"{"phase":"planning","error":{"type":"unclear_goal","message":"unclear","clarification_needed":["Which file?"]}}"#,
        );
        let msg = validate_file(&p, &ValidationRules::default())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("unclear_goal: unclear"), "{msg}");
        assert!(msg.contains("Which file?"), "{msg}");
    }
}
