//! Structured replies: ask for a JSON document, then extract, validate, re-ask once, and hand the
//! caller a value or a failure it can apply its own fallback to (SPEC F7 parse rules).
//!
//! Extraction order: strict parse → first fenced block (```json preferred) → first balanced
//! `{...}` object. Validation is deserialization into the caller's type; its errors quote the path.

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, IgnoredAny};

use super::Llm;
use super::meter::Attempts;
use super::types::{ChatRequest, FinishReason, LlmError, Message, ResponseSchema, TokenUsage};

const REASK_PROMPT: &str = include_str!("../../prompts/structured_reask.md");
const CUTOFF_PROMPT: &str = include_str!("../../prompts/structured_cutoff.md");
/// Largest output limit a cut-off re-ask may raise to when the caller sets no ceiling.
pub const DEFAULT_OUTPUT_CEILING: u32 = 4096;

/// How many `{` starts the balanced-object scan tries before giving up, so a huge reply full of
/// braces cannot make extraction quadratic.
const MAX_OBJECT_STARTS: usize = 64;

#[derive(Debug, Clone)]
pub struct StructuredOptions {
    /// Re-ask once with the parse/validation error before giving up.
    pub reask: bool,
    /// Name of the schema sent to the provider; defaults to the type's schema name.
    pub schema_name: Option<String>,
    /// Template of the re-ask message with `{error}` and `{schema}` placeholders.
    pub reask_prompt: String,
    /// The re-ask after a reply cut off at the output limit (no placeholders).
    pub cutoff_prompt: String,
    /// Highest output limit a cut-off re-ask may ask for (`llm.max_output_tokens.ceiling`).
    pub output_ceiling: u32,
    /// How long one call may take (`llm.timeout_seconds`): a cut-off re-ask asks for no more
    /// tokens than the cut-off call showed the server writes in that time (a slow CPU server
    /// otherwise times out on the raised limit).
    pub call_seconds: Option<u64>,
    /// The tools of this run: every `tool` string field of the schema becomes an enum of them,
    /// so a constrained server cannot invent one and a weak model sees the real names.
    pub tool_names: Vec<String>,
}

impl Default for StructuredOptions {
    fn default() -> Self {
        StructuredOptions {
            reask: true,
            schema_name: None,
            reask_prompt: REASK_PROMPT.to_string(),
            cutoff_prompt: CUTOFF_PROMPT.to_string(),
            output_ceiling: DEFAULT_OUTPUT_CEILING,
            call_seconds: None,
            tool_names: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructuredFailure {
    /// Why the last reply could not be used (and why the first one could not, after a re-ask).
    pub error: String,
    /// The last reply exactly as received, for the history entry.
    pub raw_reply: String,
}

impl std::fmt::Display for StructuredFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error)
    }
}

#[derive(Debug, Clone)]
pub struct StructuredReply<T> {
    pub value: Result<T, StructuredFailure>,
    /// Usage of every call made, the re-ask included.
    pub usage: TokenUsage,
    pub cost_usd: f64,
    /// HTTP attempts the server saw (retries and re-asks included).
    pub calls: u32,
    /// Those attempts' wall time, and which of them were thrown away.
    pub attempts: Attempts,
    pub reasked: bool,
    /// The model that gave the last reply (empty when none came back).
    pub model: String,
    /// A reply came from a model without a price in `llm.prices`.
    pub unpriced: bool,
}

impl<T> StructuredReply<T> {
    /// Usage of every call this reply took, for the history entry.
    pub fn totals(&self) -> crate::history::entry::UsageTotals {
        let mut totals = super::budget::usage_totals(&self.usage, self.cost_usd, 0);
        super::budget::add_attempts(&mut totals, &self.attempts);
        if self.unpriced {
            totals.unpriced_calls = totals.calls;
        }
        totals
    }
}

/// The JSON Schema of `T`, named for the provider (OpenAI allows `[A-Za-z0-9_-]{1,64}`).
pub fn schema_for<T: JsonSchema>() -> ResponseSchema {
    let schema = schemars::schema_for!(T);
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        // Anthropic's input_schema and some OpenAI-compatible servers refuse the meta-schema key.
        object.remove("$schema");
    }
    ResponseSchema {
        name: sanitize_schema_name(&T::schema_name()),
        schema: value,
    }
}

/// Tightens a generated schema with what the type cannot say: `tool` fields name one of
/// `tool_names` (and so do the items of `required_tools`), `confidence` fields lie in 0..1.
pub fn constrain_schema(schema: &mut serde_json::Value, tool_names: &[String]) {
    use serde_json::Value;
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    let Value::Object(property) = property else {
                        continue;
                    };
                    let kind = property.get("type").cloned().unwrap_or(Value::Null);
                    let is = |t: &str| {
                        kind == t || kind.as_array().is_some_and(|a| a.iter().any(|k| k == t))
                    };
                    if name == "tool" && is("string") && !tool_names.is_empty() {
                        let mut allowed: Vec<Value> =
                            tool_names.iter().map(|n| Value::from(n.as_str())).collect();
                        if is("null") {
                            allowed.push(Value::Null);
                        }
                        property.insert("enum".into(), Value::Array(allowed));
                    }
                    if name == "confidence" && is("number") {
                        property.insert("minimum".into(), serde_json::json!(0.0));
                        property.insert("maximum".into(), serde_json::json!(1.0));
                    }
                    if name == "required_tools"
                        && !tool_names.is_empty()
                        && let Some(Value::Object(items)) = property.get_mut("items")
                    {
                        let allowed = tool_names.iter().map(|n| Value::from(n.as_str())).collect();
                        items.insert("enum".into(), Value::Array(allowed));
                    }
                }
            }
            for value in map.values_mut() {
                constrain_schema(value, tool_names);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| constrain_schema(item, tool_names)),
        _ => {}
    }
}

/// Tokens the server writes in `seconds` at the pace of this reply (prompt time included, so
/// on the safe side), with a tenth to spare; unbounded when the pace is unknown.
fn tokens_in_time(usage: &TokenUsage, attempts: &Attempts, seconds: Option<u64>) -> u32 {
    match seconds {
        Some(seconds) if usage.completion_tokens > 0 && attempts.wall_ms > 0 => {
            let per_ms = usage.completion_tokens as f64 / attempts.wall_ms as f64;
            (per_ms * seconds as f64 * 900.0).min(f64::from(u32::MAX)) as u32
        }
        _ => u32::MAX,
    }
}

/// Longest raw reply kept for the history: a runaway reply must not become a huge history line
/// that is re-uploaded on every append.
pub const MAX_RAW_REPLY_CHARS: usize = 16 * 1024;

fn capped_raw_reply(raw: String) -> String {
    if raw.len() <= MAX_RAW_REPLY_CHARS {
        return raw;
    }
    let mut end = MAX_RAW_REPLY_CHARS;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes not kept]", &raw[..end], raw.len() - end)
}

fn sanitize_schema_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "reply".into()
    } else {
        cleaned
    }
}

fn is_json(text: &str) -> bool {
    !text.is_empty() && serde_json::from_str::<IgnoredAny>(text).is_ok()
}

/// Where in the reply the JSON document was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extraction {
    /// The whole reply is JSON.
    Strict,
    /// Inside a code fence.
    Fenced,
    /// The first balanced `{...}` in prose.
    BalancedObject,
}

/// The JSON document in an LLM reply: the whole reply, else the first fenced block that parses
/// (```json blocks first), else the first balanced `{...}` object that parses.
pub fn extract_json(text: &str) -> Option<&str> {
    locate_json(text).map(|(json, _)| json)
}

/// [`extract_json`] that also says which rule found the document.
pub fn locate_json(text: &str) -> Option<(&str, Extraction)> {
    let trimmed = text.trim();
    if is_json(trimmed) {
        return Some((trimmed, Extraction::Strict));
    }
    let blocks = fenced_blocks(text);
    let labelled = blocks.iter().filter(|b| b.is_json_labelled);
    let others = blocks.iter().filter(|b| !b.is_json_labelled);
    for block in labelled.chain(others) {
        let inner = block.content.trim();
        if is_json(inner) {
            return Some((inner, Extraction::Fenced));
        }
    }
    first_balanced_object(text).map(|json| (json, Extraction::BalancedObject))
}

struct FencedBlock<'a> {
    is_json_labelled: bool,
    content: &'a str,
}

/// Code fences opened by a line starting with ``` and closed by a bare ``` line; a fence left
/// open (a truncated reply) runs to the end of the text.
fn fenced_blocks(text: &str) -> Vec<FencedBlock<'_>> {
    let mut blocks = Vec::new();
    let mut open: Option<(bool, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let stripped = line.trim();
        match open {
            None => {
                if let Some(info) = stripped.strip_prefix("```") {
                    let label = info.trim().to_ascii_lowercase();
                    open = Some((label == "json" || label == "jsonc", offset));
                }
            }
            Some((is_json_labelled, start)) => {
                if stripped == "```" {
                    blocks.push(FencedBlock {
                        is_json_labelled,
                        content: &text[start..line_start],
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((is_json_labelled, start)) = open {
        blocks.push(FencedBlock {
            is_json_labelled,
            content: &text[start..],
        });
    }
    blocks
}

/// The first `{...}` that is balanced (ignoring braces inside JSON strings) and parses.
fn first_balanced_object(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let starts = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'{')
        .map(|(i, _)| i)
        .take(MAX_OBJECT_STARTS);
    for start in starts {
        if let Some(end) = balanced_end(bytes, start) {
            let candidate = &text[start..=end];
            if is_json(candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// Index of the `}` closing the `{` at `start`, or `None` when the text ends first.
pub(crate) fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (b == b'}').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Extract and validate one reply. The error says what was wrong in words a re-ask can quote.
pub fn parse_reply<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    if text.trim().is_empty() {
        return Err("the reply was empty".into());
    }
    let Some((json, found_by)) = locate_json(text) else {
        return Err(match serde_json::from_str::<IgnoredAny>(text.trim()) {
            Err(e) if e.is_eof() => format!("the reply is not complete JSON (it ends early: {e})"),
            Err(e) if text.trim_start().starts_with('{') => {
                format!("the reply is not valid JSON: {e}")
            }
            _ => "the reply contains no JSON object".into(),
        });
    };
    tracing::debug!(?found_by, "JSON document found in the reply");
    crate::plan::shape::from_str(json)
        .map_err(|e| format!("the JSON does not match the expected schema (wrong shape): {e}"))
}

fn reask_message(template: &str, error: &str, schema: &ResponseSchema) -> String {
    // Compact: a pretty-printed plan schema cost a slow model more prompt than the plan itself.
    let schema_text = serde_json::to_string(&schema.schema).unwrap_or_default();
    template
        .replace("{error}", error)
        .replace("{schema}", &schema_text)
}

/// Ask for a reply of type `T`. Transport errors propagate; an unusable reply (after one re-ask)
/// comes back as `value: Err(..)` with the raw reply so the caller can log it and fall back.
pub async fn ask_json<T: DeserializeOwned + JsonSchema>(
    llm: &dyn Llm,
    mut request: ChatRequest,
    opts: &StructuredOptions,
) -> Result<StructuredReply<T>, LlmError> {
    let mut schema = request
        .response_schema
        .clone()
        .unwrap_or_else(schema_for::<T>);
    if let Some(name) = &opts.schema_name {
        schema.name = sanitize_schema_name(name);
    }
    constrain_schema(&mut schema.schema, &opts.tool_names);
    request.response_schema = Some(schema.clone());
    let purpose = request.purpose.clone();

    let mut usage = TokenUsage::default();
    let mut cost_usd = 0.0;
    let mut attempts = Attempts::default();
    let mut first_error: Option<String> = None;
    let mut model = String::new();
    let mut unpriced = false;
    let conversation = request.messages.len();
    loop {
        let response = match llm.chat(&request).await {
            Ok(response) => response,
            // The budget wrapper already re-asked it with a lower limit: a model that cannot
            // answer in time gave an unusable reply, and the caller's fallback applies (its
            // attempts are in the metered usage, which the run records).
            Err(LlmError::Timeout { seconds }) => {
                let error = format!(
                    "the model gave no reply within {seconds}s (llm.timeout_seconds), even with a lower output limit"
                );
                tracing::warn!(purpose = %purpose, %error, "structured reply unusable; the caller falls back");
                return Ok(StructuredReply {
                    value: Err(StructuredFailure {
                        error,
                        raw_reply: String::new(),
                    }),
                    usage,
                    cost_usd,
                    calls: attempts.calls,
                    attempts,
                    reasked: first_error.is_some(),
                    model,
                    unpriced,
                });
            }
            Err(other) => return Err(other),
        };
        let mut these = response.attempts;
        if these.calls == 0 {
            // An unmetered provider: one call.
            these.calls = 1;
        }
        let fits_in_time = tokens_in_time(&response.usage, &these, opts.call_seconds);
        usage.add(&response.usage);
        cost_usd += response.cost_usd;
        model.clone_from(&response.model);
        unpriced |= response.unpriced;
        let raw = response.text.unwrap_or_default();
        let cut_off = response.finish_reason == FinishReason::Length;
        let parsed = parse_reply::<T>(&raw).map_err(|e| {
            if cut_off {
                let limit = request
                    .max_tokens
                    .map(|n| format!(" of {n} tokens"))
                    .unwrap_or_default();
                format!("the reply was cut off at the output limit{limit}: {e}")
            } else {
                e
            }
        });
        let reply = |value, attempts: Attempts, reasked| StructuredReply {
            value,
            usage,
            cost_usd,
            calls: attempts.calls,
            attempts,
            reasked,
            model: model.clone(),
            unpriced,
        };
        let error = match parsed {
            Ok(value) => {
                attempts.add(&these);
                tracing::debug!(purpose = %purpose, calls = attempts.calls, "structured reply parsed and validated");
                return Ok(reply(Ok(value), attempts, first_error.is_some()));
            }
            Err(error) => error,
        };
        attempts.add(&these.all_wasted());
        let raised = request
            .max_tokens
            .map(|limit| {
                limit
                    .saturating_mul(2)
                    .min(opts.output_ceiling)
                    .min(fits_in_time)
            })
            // A few more tokens are no room: the re-ask would cost a whole call for nothing.
            .filter(|raised| {
                request
                    .max_tokens
                    .is_some_and(|limit| u64::from(*raised) * 2 >= u64::from(limit) * 3)
            });
        let can_reask = opts.reask && first_error.is_none();
        if can_reask
            && cut_off
            && let Some(raised) = raised
        {
            // Never the identical request again: a shorter instruction and a higher limit,
            // without the cut-off text the model would only continue.
            tracing::warn!(purpose = %purpose, %error, raised, "structured reply cut off; re-asking once, shorter, with a higher limit");
            request.messages.truncate(conversation);
            request
                .messages
                .push(Message::user(opts.cutoff_prompt.clone()));
            request.max_tokens = Some(raised);
            first_error = Some(error);
            continue;
        }
        if can_reask && !cut_off {
            tracing::warn!(purpose = %purpose, %error, "structured reply unusable; re-asking once with the error");
            request.messages.push(Message::assistant(raw));
            request.messages.push(Message::user(reask_message(
                &opts.reask_prompt,
                &error,
                &schema,
            )));
            first_error = Some(error);
            continue;
        }
        let error = match &first_error {
            Some(first) => format!("{error} (after a re-ask; the first reply: {first})"),
            None if cut_off && fits_in_time < u32::MAX => format!(
                "{error} (no room to raise the limit by half: the ceiling is {}, and the server \
                 writes about {fits_in_time} tokens within llm.timeout_seconds)",
                opts.output_ceiling
            ),
            None if cut_off => format!(
                "{error} (no room to raise the limit by half: the ceiling is {})",
                opts.output_ceiling
            ),
            None => error,
        };
        tracing::warn!(purpose = %purpose, %error, "structured reply unusable; the caller falls back");
        return Ok(reply(
            Err(StructuredFailure {
                error,
                raw_reply: capped_raw_reply(raw),
            }),
            attempts,
            first_error.is_some(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatResponse, ScriptedLlm};
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Decision {
        should_replan: bool,
        confidence: f64,
    }

    #[test]
    fn strict_json_is_taken_whole() {
        assert_eq!(
            locate_json("  {\"a\": 1}\n"),
            Some(("{\"a\": 1}", Extraction::Strict))
        );
        assert_eq!(extract_json("[1,2]"), Some("[1,2]"));
    }

    #[test]
    fn fenced_json_with_prose_before_and_after() {
        let text = "Here is my decision:\n```json\n{\"a\": \"}\"}\n```\nHope that helps!";
        assert_eq!(extract_json(text), Some("{\"a\": \"}\"}"));
    }

    #[test]
    fn json_labelled_fence_wins_over_an_earlier_plain_fence() {
        let text = "```\n{\"plain\": 1}\n```\nand\n```json\n{\"json\": 2}\n```";
        assert_eq!(extract_json(text), Some("{\"json\": 2}"));
    }

    #[test]
    fn nested_fences_fall_back_to_the_balanced_object() {
        let text = "```markdown\nExample:\n```json\n{\"a\": [1, {\"b\": \"```\"}]}\n```\n```\n";
        assert_eq!(extract_json(text), Some("{\"a\": [1, {\"b\": \"```\"}]}"));
    }

    #[test]
    fn braces_and_escaped_quotes_inside_strings_do_not_confuse_the_scanner() {
        let text = r#"Sure. {"msg": "a \"quoted\" {brace} and } more", "n": {"x": 1}} trailing {"#;
        assert_eq!(
            extract_json(text),
            Some(r#"{"msg": "a \"quoted\" {brace} and } more", "n": {"x": 1}}"#)
        );
    }

    #[test]
    fn an_unbalanced_brace_in_prose_is_skipped() {
        let text = "The set {a, b is open. Result: {\"ok\": true}";
        assert_eq!(extract_json(text), Some("{\"ok\": true}"));
    }

    #[test]
    fn truncated_json_and_prose_yield_nothing() {
        assert_eq!(extract_json("{\"a\": {\"b\": [1, 2"), None);
        assert_eq!(extract_json("```json\n{\"a\": 1,\n"), None);
        assert_eq!(extract_json("I think the plan is fine."), None);
        assert_eq!(extract_json(""), None);
    }

    #[test]
    fn parse_errors_say_what_was_wrong() {
        let e = parse_reply::<Decision>("no json here").unwrap_err();
        assert_eq!(e, "the reply contains no JSON object");
        let e = parse_reply::<Decision>("{\"should_replan\": true, \"conf").unwrap_err();
        assert!(e.contains("ends early"), "{e}");
        let e =
            parse_reply::<Decision>("{\"should_replan\": \"yes\", \"confidence\": 1}").unwrap_err();
        assert!(e.contains("`should_replan`: invalid type"), "{e}");
        let e = parse_reply::<Decision>("{\"should_replan\": true}").unwrap_err();
        assert!(e.ends_with("`confidence`: missing"), "{e}");
    }

    #[test]
    fn wrong_shape_names_the_field_path_and_the_expected_type() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Plan {
            task_decomposition: Decomposition,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Decomposition {
            subtasks: Vec<String>,
        }
        let e = parse_reply::<Plan>(
            "Here it is: {\"task_decomposition\": {\"subtasks\": \"t1\"}} done",
        )
        .unwrap_err();
        assert!(
            e.contains("`task_decomposition.subtasks`: invalid type"),
            "{e}"
        );
        assert!(e.contains("expected a sequence"), "{e}");
    }

    #[test]
    fn a_planning_reply_without_its_parts_is_the_wrong_shape_not_an_empty_plan() {
        use crate::plan::PlanningResponse;
        let e = parse_reply::<PlanningResponse>("{\"phase\": \"planning\"}").unwrap_err();
        assert!(e.contains("wrong shape"), "{e}");
        assert!(e.contains("`task_decomposition`"), "{e}");
        // Flattened into a larger reply (as the engine's planner reply is), the path survives.
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Reply {
            #[serde(flatten)]
            planning: PlanningResponse,
            #[serde(default)]
            self_check: serde_json::Value,
        }
        let e = parse_reply::<Reply>(
            "{\"goal_understanding\": {\"main_objective\": \"x\"}, \"task_decomposition\": {\"reasoning\": \"r\"}}",
        )
        .unwrap_err();
        assert!(e.ends_with("`task_decomposition.subtasks`: missing"), "{e}");
    }

    #[test]
    fn the_schema_constrains_tools_to_the_run_and_confidence_to_0_1() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Action {
            tool: Option<String>,
            confidence: f64,
        }
        let mut schema = schema_for::<Action>().schema;
        constrain_schema(&mut schema, &["read_file".to_string()]);
        let properties = &schema["properties"];
        assert_eq!(
            properties["tool"]["enum"],
            serde_json::json!(["read_file", null])
        );
        assert_eq!(properties["confidence"]["minimum"], 0.0);
        assert_eq!(properties["confidence"]["maximum"], 1.0);
    }

    #[test]
    fn the_required_tools_of_a_subtask_are_the_tools_of_the_run() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Subtask {
            required_tools: Vec<String>,
            dependencies: Vec<String>,
        }
        let mut schema = schema_for::<Subtask>().schema;
        constrain_schema(&mut schema, &["read_file".to_string()]);
        let properties = &schema["properties"];
        assert!(properties["dependencies"]["items"].get("enum").is_none());
        assert_eq!(
            properties["required_tools"]["items"]["enum"],
            serde_json::json!(["read_file"])
        );
    }

    #[test]
    fn a_runaway_raw_reply_is_capped_for_the_history() {
        let raw = "é".repeat(MAX_RAW_REPLY_CHARS);
        let capped = capped_raw_reply(raw.clone());
        assert!(capped.len() < MAX_RAW_REPLY_CHARS + 64, "{}", capped.len());
        assert!(capped.ends_with("more bytes not kept]"));
        assert_eq!(capped_raw_reply("short".into()), "short");
    }

    #[test]
    fn schema_for_names_and_describes_the_type() {
        let schema = schema_for::<Decision>();
        assert_eq!(schema.name, "Decision");
        assert_eq!(schema.schema["type"], "object");
        assert!(schema.schema.get("$schema").is_none());
        assert!(schema.schema["properties"]["confidence"].is_object());
    }

    #[tokio::test]
    async fn a_fenced_reply_is_used_without_a_reask() {
        let llm = ScriptedLlm::from_yaml(
            "steps:\n  - reply: \"Sure:\\n```json\\n{\\\"should_replan\\\": false, \\\"confidence\\\": 0.9}\\n```\"\n    usage: { prompt_tokens: 10, completion_tokens: 5 }\n",
        )
        .unwrap();
        let reply =
            ask_json::<Decision>(&llm, ChatRequest::default(), &StructuredOptions::default())
                .await
                .unwrap();
        assert_eq!(
            reply.value.unwrap(),
            Decision {
                should_replan: false,
                confidence: 0.9
            }
        );
        assert_eq!((reply.calls, reply.reasked), (1, false));
        assert_eq!(reply.usage.prompt_tokens, 10);
        let sent = llm.requests();
        assert_eq!(sent[0].response_schema.as_ref().unwrap().name, "Decision");
    }

    #[tokio::test]
    async fn prose_then_json_succeeds_after_one_reask_that_quotes_the_error() {
        let llm = ScriptedLlm::from_yaml(
            r#"
steps:
  - reply: '{"should_replan": true, "confidence": 0.4}'
    fault: { kind: prose }
"#,
        )
        .unwrap();
        let mut request = ChatRequest {
            purpose: "replan_decision.execution".into(),
            ..Default::default()
        };
        request.messages.push(Message::user("decide"));
        let reply = ask_json::<Decision>(&llm, request, &StructuredOptions::default())
            .await
            .unwrap();
        assert!(reply.value.is_ok());
        assert_eq!((reply.calls, reply.reasked), (2, true));
        assert_eq!(reply.totals().calls, 2);
        let second = &llm.requests()[1];
        assert_eq!(second.messages.len(), 3);
        assert_eq!(
            second.messages[1].content,
            crate::llm::scenario::PROSE_REPLY
        );
        let reask = &second.messages[2].content;
        assert!(
            reask.contains("the reply contains no JSON object"),
            "{reask}"
        );
        assert!(
            reask.contains("\"confidence\""),
            "the schema is quoted: {reask}"
        );
    }

    #[tokio::test]
    async fn wrong_shape_twice_hands_back_the_failure_with_the_raw_reply() {
        let llm =
            ScriptedLlm::from_yaml("steps:\n  - fault: { kind: wrong_shape, times: 2 }\n").unwrap();
        let reply =
            ask_json::<Decision>(&llm, ChatRequest::default(), &StructuredOptions::default())
                .await
                .unwrap();
        let failure = reply.value.unwrap_err();
        assert_eq!(failure.raw_reply, crate::llm::scenario::WRONG_SHAPE_REPLY);
        assert!(
            failure.error.contains("`should_replan`: missing"),
            "{}",
            failure.error
        );
        assert!(
            failure.error.contains("after a re-ask"),
            "{}",
            failure.error
        );
        assert_eq!((reply.calls, reply.reasked), (2, true));
    }

    #[tokio::test]
    async fn without_reask_the_first_failure_is_final() {
        let llm = ScriptedLlm::from_yaml("steps:\n  - reply: nope\n").unwrap();
        let opts = StructuredOptions {
            reask: false,
            ..Default::default()
        };
        let reply = ask_json::<Decision>(&llm, ChatRequest::default(), &opts)
            .await
            .unwrap();
        assert_eq!(reply.value.unwrap_err().raw_reply, "nope");
        assert_eq!(reply.calls, 1);
    }

    /// A slow server: every reply is cut off after 1000 tokens written in 60 s.
    struct SlowCutOff(std::sync::Mutex<Vec<Option<u32>>>);

    #[async_trait::async_trait]
    impl Llm for SlowCutOff {
        fn describe(&self) -> String {
            "slow".into()
        }
        async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.lock().unwrap().push(request.max_tokens);
            Ok(ChatResponse {
                text: Some("{\"should_replan\": tr".into()),
                tool_calls: vec![],
                usage: TokenUsage {
                    completion_tokens: 1000,
                    ..Default::default()
                },
                finish_reason: FinishReason::Length,
                model: "slow".into(),
                cost_usd: 0.0,
                attempts: Attempts {
                    calls: 1,
                    wall_ms: 60_000,
                    ..Default::default()
                },
                unpriced: false,
            })
        }
    }

    #[tokio::test]
    async fn a_cut_off_reask_asks_no_more_than_the_server_writes_before_the_time_out() {
        let ask = |max_tokens: u32, call_seconds: Option<u64>| async move {
            let llm = SlowCutOff(Default::default());
            let request = ChatRequest {
                max_tokens: Some(max_tokens),
                ..Default::default()
            };
            let opts = StructuredOptions {
                call_seconds,
                ..Default::default()
            };
            let reply = ask_json::<Decision>(&llm, request, &opts).await.unwrap();
            (llm.0.into_inner().unwrap(), reply.value.unwrap_err().error)
        };
        // 1000 tokens a minute: 120 s fit 2000, less a tenth.
        let (limits, _) = ask(1024, Some(120)).await;
        assert_eq!(limits, [Some(1024), Some(1800)]);
        // No room above the limit: no re-ask that could only time out.
        let (limits, error) = ask(2048, Some(120)).await;
        assert_eq!(limits, [Some(2048)]);
        assert!(error.contains("no room to raise the limit"), "{error}");
        // Nor for a few tokens more: 1800 fit, half as many again as 1300 do not.
        let (limits, _) = ask(1300, Some(120)).await;
        assert_eq!(limits, [Some(1300)]);
        let (limits, _) = ask(1200, Some(120)).await;
        assert_eq!(limits, [Some(1200), Some(1800)]);
        // Without a time-out the ceiling alone bounds it.
        let (limits, _) = ask(1024, None).await;
        assert_eq!(limits, [Some(1024), Some(2048)]);
    }

    #[tokio::test]
    async fn transport_errors_propagate() {
        let llm =
            ScriptedLlm::from_yaml("steps:\n  - fault: { kind: status, status: 503 }\n").unwrap();
        let err = ask_json::<Decision>(&llm, ChatRequest::default(), &StructuredOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Http { status: 503, .. }));
    }
}
