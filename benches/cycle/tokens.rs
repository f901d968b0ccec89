//! Round trips, prompt/completion tokens and the cacheable prefix of a cycle's LLM requests.
//!
//! Tokens are estimated at 4 characters a token (the scripted model reports no real usage).
//! A prompt is its system prompt and messages in order (what prefix caching keys on) plus the
//! tool and response-schema definitions sent with it (counted as tokens, not in the prefix).

use serde_json::Value;

use crate::llm::{Recorded, prompt_texts};

pub const CHARS_PER_TOKEN: usize = 4;

pub struct Prompt {
    pub kind: &'static str,
    /// System prompt and messages, joined in order.
    pub text: String,
    /// Characters of `text` that are the system prompt.
    pub system_chars: usize,
    /// Tool and response-schema definitions sent alongside.
    pub extra_chars: usize,
    pub reply_chars: usize,
    /// Characters of a folded reflection request (issue 15) riding on this turn: what asking the
    /// reflection adds to a prompt that is sent anyway.
    pub folded_reflection_chars: usize,
}

impl Prompt {
    pub fn tokens(&self) -> usize {
        (self.text.len() + self.extra_chars).div_ceil(CHARS_PER_TOKEN)
    }
}

/// What a request is for, from the phrases of the prompts under `prompts/`.
pub fn kind_of_text(text: &str) -> &'static str {
    // Order matters as in the scenarios: later prompts quote earlier ones.
    const KINDS: &[(&str, &str)] = &[
        ("Produce the planning phases", "planning"),
        ("Perform the planning phase", "planning"),
        ("strict reviewer of execution plans", "quality_judge"),
        ("Judge whether subtask", "task_judge"),
        ("Reflect on the execution so far", "reflection"),
        ("The plan has finished", "completion"),
        // Execute turns quote the decision format when decisions are folded.
        ("Execute subtask `", "execute"),
        ("\"replan_decision\"", "replan_decision"),
    ];
    KINDS
        .iter()
        .find(|(phrase, _)| text.contains(phrase))
        .map_or("other", |(_, kind)| kind)
}

/// The prompts of requests recorded by the scripted HTTP server.
pub fn from_wire(requests: &[Recorded]) -> Vec<Prompt> {
    requests
        .iter()
        .map(|r| {
            let texts = prompt_texts(&r.body);
            let system_chars = match r.body.pointer("/messages/0/role") {
                Some(Value::String(role)) if role == "system" => {
                    texts.first().map_or(0, String::len)
                }
                _ => 0,
            };
            let text = texts.join("\n");
            let extra = |key: &str| r.body.get(key).map_or(0, |v: &Value| v.to_string().len());
            Prompt {
                kind: kind_of_text(&text),
                extra_chars: extra("tools") + extra("response_format"),
                system_chars,
                text,
                reply_chars: r.reply_chars,
                folded_reflection_chars: folded_reflection_chars(&r.body),
            }
        })
        .collect()
}

/// The reflection note (`prompts/reflection_folded.md`) in the request's last message, if any.
fn folded_reflection_chars(body: &Value) -> usize {
    const MARK: &str = "Reflection due (";
    let last = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    last.find(MARK).map_or(0, |at| last.len() - at)
}

pub struct CycleTokens {
    pub round_trips: usize,
    /// Requests before the first subtask execution: planning, its decisions, refinement.
    pub to_validated_plan: usize,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Σ (longest prefix shared with an earlier request of the cycle) / Σ prompt text.
    pub cacheable_share: f64,
    /// Σ (prefix shared with the immediately preceding request) / Σ prompt text (issue 15's
    /// `cacheable_prefix_share`: what a provider's prompt cache can reuse call after call).
    pub previous_prefix_share: f64,
    /// Prefix common to every request of the cycle, over the mean prompt text.
    pub common_prefix_share: f64,
    pub planning_prompt_tokens: Vec<usize>,
    pub reflection_prompt_tokens: Vec<usize>,
    pub by_kind: Vec<(&'static str, usize, usize)>,
}

pub fn analyse(prompts: &[Prompt]) -> CycleTokens {
    let lcp = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut cached = 0usize;
    for (i, p) in prompts.iter().enumerate() {
        let best = prompts[..i]
            .iter()
            .map(|q| lcp(&p.text, &q.text))
            .max()
            .unwrap_or(0);
        cached += best;
    }
    let total_text: usize = prompts.iter().map(|p| p.text.len()).sum();
    let chained: usize = prompts
        .windows(2)
        .map(|w| lcp(&w[1].text, &w[0].text))
        .sum();
    let common = prompts
        .iter()
        .skip(1)
        .fold(prompts.first().map_or(0, |p| p.text.len()), |acc, p| {
            acc.min(lcp(&prompts[0].text, &p.text))
        });
    let mean = total_text as f64 / prompts.len().max(1) as f64;
    let tokens_of = |kind: &str| -> Vec<usize> {
        prompts
            .iter()
            .filter(|p| p.kind == kind)
            .map(Prompt::tokens)
            .collect()
    };
    let mut by_kind: Vec<(&'static str, usize, usize)> = Vec::new();
    for p in prompts {
        match by_kind.iter_mut().find(|(k, _, _)| *k == p.kind) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += p.tokens();
            }
            None => by_kind.push((p.kind, 1, p.tokens())),
        }
    }
    CycleTokens {
        round_trips: prompts.len(),
        to_validated_plan: prompts
            .iter()
            .position(|p| p.kind == "execute")
            .unwrap_or(prompts.len()),
        prompt_tokens: prompts.iter().map(Prompt::tokens).sum(),
        completion_tokens: prompts
            .iter()
            .map(|p| p.reply_chars.div_ceil(CHARS_PER_TOKEN))
            .sum(),
        cacheable_share: cached as f64 / total_text.max(1) as f64,
        previous_prefix_share: chained as f64 / total_text.max(1) as f64,
        common_prefix_share: common as f64 / mean.max(1.0),
        planning_prompt_tokens: tokens_of("planning"),
        reflection_prompt_tokens: tokens_of("reflection")
            .into_iter()
            .chain(
                prompts
                    .iter()
                    .filter(|p| p.folded_reflection_chars > 0)
                    .map(|p| p.folded_reflection_chars.div_ceil(CHARS_PER_TOKEN)),
            )
            .collect(),
        by_kind,
    }
}

/// "system S + messages M + definitions D tokens" of the first prompt of `kind`.
pub fn anatomy(prompts: &[Prompt], kind: &str) -> Option<String> {
    let p = prompts.iter().find(|p| p.kind == kind)?;
    let t = |chars: usize| chars.div_ceil(CHARS_PER_TOKEN);
    Some(format!(
        "{kind}: {} tokens = system prompt {} + task prompt {} + tool/schema definitions {}",
        p.tokens(),
        t(p.system_chars),
        t(p.text.len() - p.system_chars),
        t(p.extra_chars)
    ))
}
