//! The `scripted` provider: replays a scenario in-process (for `replan demo` and unit tests).

use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;

use super::Llm;
use super::scenario::{
    CUT_OFF_REPLY, FaultKind, Outcome, PROSE_REPLY, RAMBLE_JSON, RAMBLE_OPEN_JSON, RAMBLE_PROSE,
    RAMBLE_REPEATS, Scenario, ScenarioPlayer, Subject, WRONG_SHAPE_REPLY,
};
use super::types::{ChatRequest, ChatResponse, FinishReason, LlmError, TokenUsage, ToolCall};

pub struct ScriptedLlm {
    player: ScenarioPlayer,
    requests: Mutex<Vec<ChatRequest>>,
    name: String,
}

impl ScriptedLlm {
    pub fn new(scenario: Scenario) -> Self {
        ScriptedLlm {
            player: ScenarioPlayer::new(scenario),
            requests: Mutex::new(Vec::new()),
            name: "scripted".into(),
        }
    }

    pub fn from_yaml(yaml: &str) -> Result<Self, LlmError> {
        Ok(Self::new(Scenario::from_yaml(yaml)?))
    }

    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let mut llm = Self::new(Scenario::from_file(path)?);
        llm.name = format!("scripted ({})", path.display());
        Ok(llm)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Steps not yet answered.
    pub fn remaining_steps(&self) -> usize {
        self.player.remaining()
    }
}

/// Rough token count (4 characters a token) for steps that give no `usage`, so the demo still
/// shows plausible totals.
fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[async_trait]
impl Llm for ScriptedLlm {
    fn describe(&self) -> String {
        self.name.clone()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        let mut texts: Vec<&str> = vec![request.system.as_str()];
        texts.extend(request.messages.iter().map(|m| m.content.as_str()));
        let outcome = self.player.next(&Subject {
            purpose: Some(&request.purpose),
            texts: &texts,
        })?;
        let prompt_estimate = texts.iter().map(|t| estimate_tokens(t)).sum::<u64>();
        let mut cut_off = false;
        let (text, tool_calls, usage) = match outcome {
            Outcome::Fault(fault) => match fault.kind {
                FaultKind::Status => {
                    let status = fault.status.unwrap_or(500);
                    return Err(LlmError::Http {
                        status,
                        message: format!("scripted fault: HTTP {status}"),
                    });
                }
                FaultKind::Hang => return Err(LlmError::Timeout { seconds: 0 }),
                FaultKind::Truncated => {
                    return Err(LlmError::BadReply(
                        "scripted fault: the reply body was truncated".into(),
                    ));
                }
                FaultKind::Prose => (Some(PROSE_REPLY.to_string()), vec![], None),
                FaultKind::WrongShape => (Some(WRONG_SHAPE_REPLY.to_string()), vec![], None),
                FaultKind::CutOff => {
                    cut_off = true;
                    (Some(CUT_OFF_REPLY.to_string()), vec![], None)
                }
                FaultKind::Ramble | FaultKind::RambleOpen => {
                    cut_off = true;
                    let json = match fault.kind {
                        FaultKind::Ramble => RAMBLE_JSON,
                        _ => RAMBLE_OPEN_JSON,
                    };
                    let prose = RAMBLE_PROSE.repeat(RAMBLE_REPEATS);
                    (Some(format!("{json}{prose}")), vec![], None)
                }
                FaultKind::Huge => {
                    return Err(LlmError::BadReply(
                        "scripted fault: the reply is too large".into(),
                    ));
                }
            },
            Outcome::Reply(step) => {
                let calls = step
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, call)| ToolCall {
                        id: format!("call_{}_{}", self.requests_len(), i + 1),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    })
                    .collect();
                (step.reply, calls, step.usage.map(TokenUsage::from))
            }
        };
        let usage = usage.unwrap_or_else(|| TokenUsage {
            prompt_tokens: prompt_estimate,
            completion_tokens: text.as_deref().map(estimate_tokens).unwrap_or(0),
            cached_tokens: 0,
        });
        let finish_reason = if cut_off {
            FinishReason::Length
        } else if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        Ok(ChatResponse {
            text,
            tool_calls,
            usage,
            finish_reason,
            model: "scripted".into(),
            cost_usd: 0.0,
            attempts: Default::default(),
            unpriced: false,
        })
    }
}

impl ScriptedLlm {
    fn requests_len(&self) -> usize {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    fn request(purpose: &str, text: &str) -> ChatRequest {
        ChatRequest {
            system: "You plan.".into(),
            messages: vec![Message::user(text)],
            purpose: purpose.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn replays_replies_tool_calls_and_usage_and_records_requests() {
        let llm = ScriptedLlm::from_yaml(
            r#"
steps:
  - tool_calls: [ { name: read_file, arguments: { path: README.md } } ]
    usage: { prompt_tokens: 900, completion_tokens: 300 }
  - reply: '{"done": true}'
"#,
        )
        .unwrap();
        let first = llm.chat(&request("execute", "read it")).await.unwrap();
        assert_eq!(first.finish_reason, FinishReason::ToolCalls);
        assert_eq!(first.tool_calls[0].name, "read_file");
        assert_eq!(
            first.tool_calls[0].arguments,
            serde_json::json!({"path": "README.md"})
        );
        assert_eq!(first.usage.prompt_tokens, 900);
        assert_eq!(first.usage.completion_tokens, 300);
        let second = llm.chat(&request("judge", "done?")).await.unwrap();
        assert_eq!(second.text.as_deref(), Some("{\"done\": true}"));
        assert!(second.usage.prompt_tokens > 0, "estimated when not given");
        let recorded = llm.requests();
        assert_eq!(recorded.len(), 2);
        assert_eq!(recorded[1].purpose, "judge");
        assert_eq!(llm.remaining_steps(), 0);
        let err = llm.chat(&request("judge", "again")).await.unwrap_err();
        assert!(matches!(err, LlmError::Scenario(_)));
        assert!(err.to_string().contains("purpose `judge`"), "{err}");
    }

    #[tokio::test]
    async fn faults_become_the_errors_a_real_provider_returns() {
        let llm = ScriptedLlm::from_yaml(
            r#"
steps:
  - fault: { kind: status, status: 429 }
  - fault: { kind: hang }
  - reply: '{"a": 1}'
    fault: { kind: prose }
"#,
        )
        .unwrap();
        let r = request("x", "y");
        assert!(matches!(
            llm.chat(&r).await,
            Err(LlmError::Http { status: 429, .. })
        ));
        assert!(matches!(llm.chat(&r).await, Err(LlmError::Timeout { .. })));
        assert_eq!(
            llm.chat(&r).await.unwrap().text.as_deref(),
            Some(PROSE_REPLY)
        );
        assert_eq!(
            llm.chat(&r).await.unwrap().text.as_deref(),
            Some("{\"a\": 1}")
        );
    }
}
