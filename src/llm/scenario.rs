//! Scenario files: scripted LLM replies for `replan demo`, unit tests and the test HTTP server.
//!
//! ```yaml
//! mode: ordered            # or: matched
//! steps:
//!   - when: { purpose: "planning", contains: "goal understanding" }
//!     reply: |
//!       {"phase": "planning"}
//!     tool_calls: [ { name: read_file, arguments: { path: README.md } } ]
//!     usage: { prompt_tokens: 900, completion_tokens: 300 }
//!     fault: { kind: status, status: 429, retry_after: 1, times: 1 }
//! ```
//!
//! One [`ScenarioPlayer`] holds the matching rules so the in-process provider and the HTTP test
//! server answer the same file the same way.

use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{LlmError, TokenUsage};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub mode: ScenarioMode,
    #[serde(default)]
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioMode {
    /// Requests take the steps one after the other.
    #[default]
    Ordered,
    /// Each request takes the first unused step whose `when` matches.
    Matched,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub when: Option<When>,
    /// Text of the reply (the JSON document for structured calls).
    #[serde(default)]
    pub reply: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedToolCall>,
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    #[serde(default)]
    pub fault: Option<Fault>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// Prefix of `ChatRequest::purpose`. The HTTP server never sees the purpose, so there it
    /// matches when any prompt text contains it.
    #[serde(default)]
    pub purpose: Option<String>,
    /// Substring of the system prompt or of any message.
    #[serde(default)]
    pub contains: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
}

impl From<ScriptedUsage> for TokenUsage {
    fn from(u: ScriptedUsage) -> Self {
        TokenUsage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.cached_tokens,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub kind: FaultKind,
    /// HTTP status for `kind: status` (default 500).
    #[serde(default)]
    pub status: Option<u16>,
    /// `Retry-After` seconds sent with a `status` fault.
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// How many requests get the fault before the step answers normally.
    #[serde(default = "one")]
    pub times: u32,
    /// Body size of a `huge` fault.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Send a `huge` body with chunked transfer encoding (no `Content-Length`).
    #[serde(default)]
    pub chunked: bool,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// An HTTP error status (429, 500, ...), optionally with `Retry-After`.
    Status,
    /// Never answers.
    Hang,
    /// Declares a longer body than it sends and closes the connection.
    Truncated,
    /// Answers with prose instead of the JSON document.
    Prose,
    /// Answers with valid JSON of the wrong shape.
    WrongShape,
    /// Answers with the start of a JSON document cut off at the output limit
    /// (`finish_reason: length`, `stop_reason: max_tokens`).
    CutOff,
    /// Answers with a body of `bytes` bytes (default 50 MB), optionally chunked.
    Huge,
    /// Answers with [`RAMBLE_JSON`] and then prose up to the output limit, as a weak model does;
    /// streamed slowly when the request asks for a stream, so a client can stop at the JSON.
    Ramble,
    /// Like `ramble`, but the prose runs inside a string of [`RAMBLE_OPEN_JSON`]: the JSON never
    /// closes.
    RambleOpen,
}

/// The prose a `prose` fault answers with.
pub const PROSE_REPLY: &str =
    "Sure! I looked at the issue carefully and I think the plan is fine as it is.";
/// The text a `cut_off` fault answers with: JSON that stops mid-string.
pub const CUT_OFF_REPLY: &str =
    r#"{"should_replan": false, "reasoning": "The plan looks fine because the first"#;
/// The JSON a `ramble` fault answers with before its prose.
pub const RAMBLE_JSON: &str = r#"{"should_replan": false, "confidence": 0.9}"#;
/// The start of the JSON a `ramble_open` fault never closes.
pub const RAMBLE_OPEN_JSON: &str = r#"{"should_replan": false, "reasoning": ""#;
/// The prose a `ramble` fault goes on with after its JSON, over and over.
pub const RAMBLE_PROSE: &str = "\n\nThe plan is the plan, and the plan is done. ";
/// How often the prose of an unstreamed `ramble` reply is repeated (it ends cut off).
pub const RAMBLE_REPEATS: usize = 40;
/// Body size of a `huge` fault without `bytes`.
pub const HUGE_REPLY_BYTES: u64 = 50 * 1024 * 1024;
/// The JSON a `wrong_shape` fault answers with.
pub const WRONG_SHAPE_REPLY: &str = r#"{"unexpected": "shape", "items": [1, 2, 3]}"#;

impl Scenario {
    pub fn from_yaml(yaml: &str) -> Result<Scenario, LlmError> {
        serde_saphyr::from_str(yaml)
            .map_err(|e| LlmError::Scenario(format!("the scenario is not valid YAML: {e}")))
    }

    pub fn from_file(path: &Path) -> Result<Scenario, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::Scenario(format!(
                "cannot read scenario file {}: {e}; set llm.scenario to an existing file",
                path.display()
            ))
        })?;
        serde_saphyr::from_str(&text).map_err(|e| {
            LlmError::Scenario(format!(
                "scenario file {} is not a valid scenario: {e}",
                path.display()
            ))
        })
    }
}

/// What a request looks like to the matcher.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// `None` when the purpose is unknown (the HTTP server): `when.purpose` then matches prompt text.
    pub purpose: Option<&'a str>,
    /// System prompt and message texts.
    pub texts: &'a [&'a str],
}

impl When {
    pub fn matches(&self, subject: &Subject<'_>) -> bool {
        let purpose_ok = match (&self.purpose, subject.purpose) {
            (None, _) => true,
            (Some(want), Some(have)) => have.starts_with(want.as_str()),
            (Some(want), None) => subject.texts.iter().any(|t| t.contains(want.as_str())),
        };
        let contains_ok = match &self.contains {
            None => true,
            Some(want) => subject.texts.iter().any(|t| t.contains(want.as_str())),
        };
        purpose_ok && contains_ok
    }
}

/// What a step gives one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Reply(Step),
    Fault(Fault),
}

#[derive(Debug)]
struct StepState {
    faults_served: u32,
    used: bool,
}

/// Hands out steps to requests; shared by the scripted provider and the HTTP test server.
#[derive(Debug)]
pub struct ScenarioPlayer {
    scenario: Scenario,
    state: Mutex<PlayerState>,
}

#[derive(Debug)]
struct PlayerState {
    steps: Vec<StepState>,
    requests: usize,
}

impl ScenarioPlayer {
    pub fn new(scenario: Scenario) -> Self {
        let steps = scenario
            .steps
            .iter()
            .map(|_| StepState {
                faults_served: 0,
                used: false,
            })
            .collect();
        ScenarioPlayer {
            scenario,
            state: Mutex::new(PlayerState { steps, requests: 0 }),
        }
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Steps not yet answered, for tests that want a scenario fully consumed.
    pub fn remaining(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.steps.iter().filter(|s| !s.used).count()
    }

    pub fn next(&self, subject: &Subject<'_>) -> Result<Outcome, LlmError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests += 1;
        let number = state.requests;
        let label = match subject.purpose {
            Some(p) if !p.is_empty() => format!("request #{number} (purpose `{p}`)"),
            Some(_) => format!("request #{number} (no purpose)"),
            None => format!("request #{number}"),
        };
        let index = match self.scenario.mode {
            ScenarioMode::Ordered => {
                let Some(index) = state.steps.iter().position(|s| !s.used) else {
                    return Err(LlmError::Scenario(format!(
                        "no step left for {label}: all {} steps of the scenario are used",
                        self.scenario.steps.len()
                    )));
                };
                let step = &self.scenario.steps[index];
                if let Some(when) = &step.when
                    && !when.matches(subject)
                {
                    return Err(LlmError::Scenario(format!(
                        "{label} does not match step {} (`when`: purpose {:?}, contains {:?})",
                        index + 1,
                        when.purpose,
                        when.contains
                    )));
                }
                index
            }
            ScenarioMode::Matched => {
                let found = self
                    .scenario
                    .steps
                    .iter()
                    .enumerate()
                    .position(|(i, step)| {
                        !state.steps[i].used
                            && step.when.as_ref().is_none_or(|w| w.matches(subject))
                    });
                match found {
                    Some(index) => index,
                    None => {
                        return Err(LlmError::Scenario(format!(
                            "no unused step matches {label}"
                        )));
                    }
                }
            }
        };
        let step = &self.scenario.steps[index];
        let slot = &mut state.steps[index];
        if let Some(fault) = &step.fault
            && slot.faults_served < fault.times
        {
            slot.faults_served += 1;
            let fault_only = step.reply.is_none() && step.tool_calls.is_empty();
            if fault_only && slot.faults_served >= fault.times {
                slot.used = true;
            }
            return Ok(Outcome::Fault(fault.clone()));
        }
        slot.used = true;
        Ok(Outcome::Reply(step.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject<'a>(purpose: &'a str, texts: &'a [&'a str]) -> Subject<'a> {
        Subject {
            purpose: Some(purpose),
            texts,
        }
    }

    #[test]
    fn parses_the_documented_example() {
        let scenario = Scenario::from_yaml(
            r#"
mode: matched
steps:
  - when: { purpose: "planning", contains: "goal understanding" }
    reply: |
      {"phase": "planning"}
    tool_calls: [ { name: read_file, arguments: { path: README.md } } ]
    usage: { prompt_tokens: 900, completion_tokens: 300 }
    fault: { kind: status, status: 429, retry_after: 1 }
"#,
        )
        .unwrap();
        assert_eq!(scenario.mode, ScenarioMode::Matched);
        let step = &scenario.steps[0];
        assert_eq!(step.reply.as_deref(), Some("{\"phase\": \"planning\"}\n"));
        assert_eq!(step.tool_calls[0].name, "read_file");
        assert_eq!(
            step.tool_calls[0].arguments,
            serde_json::json!({"path": "README.md"})
        );
        assert_eq!(step.usage.unwrap().prompt_tokens, 900);
        let fault = step.fault.as_ref().unwrap();
        assert_eq!(fault.kind, FaultKind::Status);
        assert_eq!(fault.status, Some(429));
        assert_eq!(fault.times, 1);
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let err = Scenario::from_yaml("steps:\n  - replay: hi\n").unwrap_err();
        assert!(err.to_string().contains("replay"), "{err}");
    }

    #[test]
    fn ordered_mode_serves_faults_then_the_reply_then_runs_out() {
        let player = ScenarioPlayer::new(
            Scenario::from_yaml(
                "steps:\n  - reply: ok\n    fault: { kind: status, status: 500, times: 2 }\n",
            )
            .unwrap(),
        );
        let s = subject("execute", &[]);
        assert!(matches!(player.next(&s).unwrap(), Outcome::Fault(_)));
        assert!(matches!(player.next(&s).unwrap(), Outcome::Fault(_)));
        match player.next(&s).unwrap() {
            Outcome::Reply(step) => assert_eq!(step.reply.as_deref(), Some("ok")),
            other => panic!("{other:?}"),
        }
        let err = player.next(&s).unwrap_err().to_string();
        assert!(err.contains("request #4 (purpose `execute`)"), "{err}");
    }

    #[test]
    fn fault_only_steps_are_consumed_by_their_faults() {
        let player = ScenarioPlayer::new(
            Scenario::from_yaml("steps:\n  - fault: { kind: hang }\n  - reply: second\n").unwrap(),
        );
        let s = subject("x", &[]);
        assert!(matches!(player.next(&s).unwrap(), Outcome::Fault(_)));
        assert!(
            matches!(player.next(&s).unwrap(), Outcome::Reply(step) if step.reply.as_deref() == Some("second"))
        );
    }

    #[test]
    fn matched_mode_picks_the_first_unused_matching_step() {
        let player = ScenarioPlayer::new(
            Scenario::from_yaml(
                r#"
mode: matched
steps:
  - when: { purpose: judge }
    reply: judged
  - when: { purpose: planning, contains: "goal understanding" }
    reply: planned
  - reply: anything
"#,
            )
            .unwrap(),
        );
        let texts = ["please do goal understanding"];
        let planning = subject("planning.goal", &texts);
        assert!(
            matches!(player.next(&planning).unwrap(), Outcome::Reply(s) if s.reply.as_deref() == Some("planned"))
        );
        // The planning step is used now; the catch-all answers.
        assert!(
            matches!(player.next(&planning).unwrap(), Outcome::Reply(s) if s.reply.as_deref() == Some("anything"))
        );
        let err = player.next(&planning).unwrap_err().to_string();
        assert!(
            err.contains("no unused step matches request #3 (purpose `planning.goal`)"),
            "{err}"
        );
        assert_eq!(player.remaining(), 1);
    }

    #[test]
    fn ordered_mode_reports_a_step_whose_when_does_not_match() {
        let player = ScenarioPlayer::new(
            Scenario::from_yaml("steps:\n  - when: { purpose: judge }\n    reply: x\n").unwrap(),
        );
        let err = player.next(&subject("planning", &[])).unwrap_err();
        assert!(err.to_string().contains("does not match step 1"), "{err}");
    }

    #[test]
    fn without_a_purpose_the_purpose_condition_matches_prompt_text() {
        let when = When {
            purpose: Some("task_judge".into()),
            contains: None,
        };
        let texts = ["You are the task_judge."];
        assert!(when.matches(&Subject {
            purpose: None,
            texts: &texts
        }));
        assert!(!when.matches(&Subject {
            purpose: None,
            texts: &["other"]
        }));
    }
}
