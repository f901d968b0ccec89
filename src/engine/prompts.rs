//! Prompt templates: English markdown in `prompts/`, compiled in, overridable per repository by
//! `.github/replan/prompts/<name>.md`. Placeholders are `{name}`; a placeholder the caller does not
//! fill is an error, so a typo in an override cannot silently send a broken prompt.
//!
//! Untrusted text (issue bodies, comments) reaches these functions already sanitized by the trigger
//! (`trigger::sanitize_untrusted`: hidden markup and invisible characters removed); nothing here
//! sanitizes or delimits it further.

use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Where a repository keeps its prompt overrides, relative to the workspace root.
pub const OVERRIDE_DIR: &str = ".github/replan/prompts";

const BUILT_IN: &[(&str, &str)] = &[
    ("system", include_str!("../../prompts/system.md")),
    (
        "planning_rules",
        include_str!("../../prompts/planning_rules.md"),
    ),
    (
        "planning_folded",
        include_str!("../../prompts/planning_folded.md"),
    ),
    (
        "planning_folded_quality",
        include_str!("../../prompts/planning_folded_quality.md"),
    ),
    (
        "execute_folded_rules",
        include_str!("../../prompts/execute_folded_rules.md"),
    ),
    (
        "execute_separate_rules",
        include_str!("../../prompts/execute_separate_rules.md"),
    ),
    (
        "reflection_folded",
        include_str!("../../prompts/reflection_folded.md"),
    ),
    ("escalation", super::replan::ESCALATION_TEMPLATE),
    (
        "planning_single",
        include_str!("../../prompts/planning_single.md"),
    ),
    (
        "planning_phase",
        include_str!("../../prompts/planning_phase.md"),
    ),
    (
        "phase_goal_understanding",
        include_str!("../../prompts/phase_goal_understanding.md"),
    ),
    (
        "phase_task_decomposition",
        include_str!("../../prompts/phase_task_decomposition.md"),
    ),
    (
        "phase_action_sequence",
        include_str!("../../prompts/phase_action_sequence.md"),
    ),
    (
        "decision_format",
        include_str!("../../prompts/decision_format.md"),
    ),
    (
        "decision_goal_understanding",
        include_str!("../../prompts/decision_goal_understanding.md"),
    ),
    (
        "decision_task_decomposition",
        include_str!("../../prompts/decision_task_decomposition.md"),
    ),
    (
        "decision_action_sequence",
        include_str!("../../prompts/decision_action_sequence.md"),
    ),
    (
        "decision_plan",
        include_str!("../../prompts/decision_plan.md"),
    ),
    (
        "decision_execution",
        include_str!("../../prompts/decision_execution.md"),
    ),
    (
        "decision_reflection",
        include_str!("../../prompts/decision_reflection.md"),
    ),
    (
        "quality_judge",
        include_str!("../../prompts/quality_judge.md"),
    ),
    ("execute", include_str!("../../prompts/execute.md")),
    (
        "execute_tool_reask",
        include_str!("../../prompts/execute_tool_reask.md"),
    ),
    ("reflection", include_str!("../../prompts/reflection.md")),
    ("task_judge", include_str!("../../prompts/task_judge.md")),
    ("task_split", include_str!("../../prompts/task_split.md")),
    (
        "task_alternatives",
        include_str!("../../prompts/task_alternatives.md"),
    ),
    ("completion", include_str!("../../prompts/completion.md")),
    ("legacy", include_str!("../../prompts/legacy.md")),
];

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{([a-z][a-z0-9_]*)\}").expect("static regex"));

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PromptError {
    #[error("no prompt template named `{0}`")]
    UnknownTemplate(String),
    #[error(
        "prompt template `{template}` uses the unknown placeholder {{{placeholder}}}; known here: {known}"
    )]
    UnknownPlaceholder {
        template: String,
        placeholder: String,
        known: String,
    },
    #[error("cannot read the prompt override {path}: {message}")]
    Override { path: String, message: String },
}

/// Token budget of each template: the largest whole request it may make on the bundled sample
/// issue (system prompt, messages, tool calls, tool specs and response schema, at 4 characters a
/// token); `tests/all/engine/budgets.rs` fails when the sample issue exceeds one. Parts rendered
/// into another template (`planning_rules`, `execute_*_rules`, `decision_format`, ...) count in
/// their parent's budget; `reflection_folded` is the note a folded reflection adds to a turn.
pub const BUDGETS: &[(&str, usize)] = &[
    ("planning_single", 1_990),
    ("planning_phase", 1_990),
    ("decision_goal_understanding", 1_300),
    ("decision_task_decomposition", 1_650),
    ("decision_action_sequence", 1_800),
    ("decision_plan", 2_200),
    ("decision_execution", 1_250),
    ("decision_reflection", 1_300),
    ("escalation", 2_000),
    ("quality_judge", 1_000),
    ("execute", 1_400),
    ("reflection", 490),
    ("reflection_folded", 200),
    ("task_judge", 850),
    ("task_split", 1_500),
    ("task_alternatives", 1_500),
    // Room for one answer per review thread after a review round.
    ("completion", 1_500),
    ("legacy", 1_500),
];

/// The template a request of `purpose` was rendered from (as the engine names its calls).
pub fn template_of_purpose(purpose: &str, cfg: &crate::config::Config) -> Option<&'static str> {
    let head = purpose.split('.').next().unwrap_or(purpose);
    let rest = purpose
        .strip_prefix(head)
        .unwrap_or("")
        .trim_start_matches('.');
    Some(match head {
        "planning" if rest.is_empty() => "planning_single",
        "planning" if matches!(rest, "refinement" | "validation_retry") => {
            match cfg.planning.mode {
                crate::config::PlanningMode::SingleCall => "planning_single",
                crate::config::PlanningMode::PerPhase => "planning_phase",
            }
        }
        "planning" => "planning_phase",
        "replan_decision" if rest.ends_with("escalation") => "escalation",
        "replan_decision" => match rest {
            "goal_understanding" => "decision_goal_understanding",
            "task_decomposition" => "decision_task_decomposition",
            "action_sequence" if cfg.planning.mode == crate::config::PlanningMode::SingleCall => {
                "decision_plan"
            }
            "action_sequence" => "decision_action_sequence",
            "execution" => "decision_execution",
            "reflection" => "decision_reflection",
            _ => return None,
        },
        "quality_judge" => "quality_judge",
        "execute" => "execute",
        "reflection" => "reflection",
        "judge" => "task_judge",
        "task_split" => "task_split",
        "task_alternatives" => "task_alternatives",
        "completion" => "completion",
        "legacy" => "legacy",
        _ => return None,
    })
}

/// The templates of one run: built-in, or the repository's override when it has one; and the
/// repository's instructions the rendered prompts carry.
#[derive(Debug, Clone, Default)]
pub struct Prompts {
    overrides: BTreeMap<String, String>,
    instructions: std::sync::Arc<super::instructions::RepoInstructions>,
}

impl Prompts {
    pub fn built_in() -> Self {
        Self::default()
    }

    /// Load overrides from `<workspace>/.github/replan/prompts/<name>.md` for every known name.
    pub fn with_overrides(workspace: &Path) -> Result<Self, PromptError> {
        let dir: PathBuf = workspace.join(OVERRIDE_DIR);
        let mut overrides = BTreeMap::new();
        for (name, _) in BUILT_IN {
            let path = dir.join(format!("{name}.md"));
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    overrides.insert((*name).to_string(), text);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(PromptError::Override {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(Prompts {
            overrides,
            ..Prompts::default()
        })
    }

    /// These templates with the repository's instructions.
    pub fn with_instructions(
        mut self,
        instructions: super::instructions::RepoInstructions,
    ) -> Self {
        self.instructions = std::sync::Arc::new(instructions);
        self
    }

    pub fn instructions(&self) -> &super::instructions::RepoInstructions {
        &self.instructions
    }

    pub fn template(&self, name: &str) -> Result<&str, PromptError> {
        if let Some(t) = self.overrides.get(name) {
            return Ok(t);
        }
        BUILT_IN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| PromptError::UnknownTemplate(name.to_string()))
    }

    /// Fill `{placeholder}`s. Values are inserted verbatim and never re-scanned.
    pub fn render(&self, name: &str, values: &[(&str, &str)]) -> Result<String, PromptError> {
        render_template(name, self.template(name)?, values)
    }
}

pub fn render_template(
    name: &str,
    template: &str,
    values: &[(&str, &str)],
) -> Result<String, PromptError> {
    let mut out = String::with_capacity(template.len() + 256);
    let mut last = 0;
    for caps in PLACEHOLDER.captures_iter(template) {
        let whole = caps.get(0).expect("group 0");
        let key = &caps[1];
        let Some((_, value)) = values.iter().find(|(k, _)| *k == key) else {
            return Err(PromptError::UnknownPlaceholder {
                template: name.to_string(),
                placeholder: key.to_string(),
                known: values
                    .iter()
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        out.push_str(&template[last..whole.start()]);
        out.push_str(value);
        last = whole.end();
    }
    out.push_str(&template[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_placeholders_and_leaves_json_braces_alone() {
        let out = render_template("t", "A {x} {\"k\": 1} {}", &[("x", "{y}")]).unwrap();
        assert_eq!(out, "A {y} {\"k\": 1} {}");
    }

    #[test]
    fn unknown_placeholder_is_an_error_naming_it() {
        let err = render_template("t", "A {nope}", &[("x", "1")]).unwrap_err();
        assert!(err.to_string().contains("{nope}"), "{err}");
    }

    #[test]
    fn repository_override_replaces_the_built_in_template() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(OVERRIDE_DIR);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("completion.md"), "custom {goal}").unwrap();
        let prompts = Prompts::with_overrides(dir.path()).unwrap();
        assert_eq!(
            prompts.render("completion", &[("goal", "G")]).unwrap(),
            "custom G"
        );
        assert!(
            prompts
                .template("planning_rules")
                .unwrap()
                .contains("Planning Process")
        );
    }

    #[test]
    fn every_prompt_file_is_built_in_and_overridable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(OVERRIDE_DIR);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("escalation.md"), "limit hit in {phase}").unwrap();
        let prompts = Prompts::with_overrides(dir.path()).unwrap();
        assert_eq!(
            prompts.template("escalation").unwrap(),
            "limit hit in {phase}"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        for file in std::fs::read_dir(root).unwrap() {
            let name = file
                .unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if name == "structured_reask" || name == "structured_cutoff" {
                continue; // the LLM layer's own re-ask text, used below the engine
            }
            assert!(
                Prompts::built_in().template(&name).is_ok(),
                "prompts/{name}.md is not compiled in"
            );
        }
    }
}
