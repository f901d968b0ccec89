//! A tool call written in a reply's text: servers that do not enforce `tool_choice` (llama-server
//! with a chat template that has no tool syntax, its Anthropic endpoint, ...) leave a small model
//! to write the call as JSON. It is accepted only for a tool offered in the request, with an
//! object as arguments, and then runs like a native call: the same registry, policy, sandbox
//! and approvals.

use serde_json::{Value, json};

use super::types::{ToolCall, ToolSpec};

/// Longest reply text searched; a tool call is at the start of a reply, not after pages of prose.
const SEARCHED_CHARS: usize = 64 * 1024;

/// Longest string argument the structured re-ask's schema allows: a grammar-constrained small
/// model otherwise fills a string until the output limit and the call never closes.
const MAX_STRING_CHARS: u64 = 1000;

/// The first tool call written in `text` for one of `tools`: `{"tool": name, "arguments": {...}}`
/// or `{"name": name, "arguments": {...}}`, bare, fenced, in prose or in the
/// `<tool_call>...</tool_call>` convention (also as a one-element array).
pub fn tool_call_in_text(text: &str, tools: &[ToolSpec]) -> Option<ToolCall> {
    first_call(text, tools, false)
}

/// [`tool_call_in_text`] for a reply that was asked for one call and nothing else: there an
/// object that names an offered tool is that call, and a missing `arguments` means none (a small
/// model answered the call-only re-ask with `{"tool": "list_files"}` and no action ran).
pub fn requested_tool_call(text: &str, tools: &[ToolSpec]) -> Option<ToolCall> {
    first_call(text, tools, true).or_else(|| named_call(text, tools))
}

/// The call a reply names when its JSON does not parse (`{"tool": "list_files", "arguments":
/// {...}}`, the example's shape with a placeholder): the first offered tool named as `"tool"` or
/// `"name"`, with no arguments; the registry checks them like any call's.
fn named_call(text: &str, tools: &[ToolSpec]) -> Option<ToolCall> {
    static NAMED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""(?:tool|name)"\s*:\s*"([^"]+)""#).expect("valid regex")
    });
    NAMED.captures_iter(searched(text)).find_map(|caps| {
        let spec = tools.iter().find(|t| t.name == caps[1])?;
        Some(call(spec, Value::Object(Default::default())))
    })
}

/// The start of `text` that is searched for a call (at most [`SEARCHED_CHARS`] bytes, cut on a
/// character boundary).
fn searched(text: &str) -> &str {
    let mut end = text.len().min(SEARCHED_CHARS);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn call(spec: &ToolSpec, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("text_call_{}", spec.name),
        name: spec.name.clone(),
        arguments,
    }
}

fn first_call(text: &str, tools: &[ToolSpec], asked_for_one: bool) -> Option<ToolCall> {
    let text = searched(text);
    text.match_indices('{').find_map(|(start, _)| {
        let value = serde_json::Deserializer::from_str(&text[start..])
            .into_iter::<Value>()
            .next()?
            .ok()?;
        call_of(&value, tools, asked_for_one)
    })
}

fn call_of(value: &Value, tools: &[ToolSpec], asked_for_one: bool) -> Option<ToolCall> {
    let object = value.as_object()?;
    let name = object
        .get("tool")
        .or_else(|| object.get("name"))
        .and_then(Value::as_str)?;
    let spec = tools.iter().find(|t| t.name == name)?;
    // `arguments` must be there (a plan's actions also name a `tool`, and are no call), unless
    // the reply was asked for exactly one call.
    let arguments = match object.get("arguments") {
        Some(Value::String(raw)) => serde_json::from_str::<Value>(raw).ok()?,
        Some(other) => other.clone(),
        None if asked_for_one => Value::Object(Default::default()),
        None => return None,
    };
    arguments.is_object().then(|| call(spec, arguments))
}

/// The reply schema of "call one of `tools`": one branch per tool, its name as the only allowed
/// value of `tool` and its argument schema with bounded strings, so a server that turns schemas
/// into grammars (llama-server) can only produce a complete, valid call.
pub fn tool_call_schema(tools: &[ToolSpec]) -> Value {
    let branches: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut arguments = t.input_schema.clone();
            bound_strings(&mut arguments);
            json!({
                "type": "object",
                "properties": {"tool": {"type": "string", "enum": [t.name]}, "arguments": arguments},
                "required": ["tool", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    json!({"anyOf": branches})
}

fn bound_strings(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("type").and_then(Value::as_str) == Some("string")
        && !object.contains_key("maxLength")
    {
        object.insert("maxLength".into(), json!(MAX_STRING_CHARS));
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(bound_strings);
    }
    if let Some(items) = object.get_mut("items") {
        bound_strings(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["list_files", "write_file"]
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: String::new(),
                input_schema: json!({"type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "additionalProperties": false}),
            })
            .collect()
    }

    #[test]
    fn finds_a_call_in_prose_fences_and_the_tool_call_convention() {
        let cases = [
            r#"{"tool": "list_files", "arguments": {}}"#,
            "Sure:\n```json\n{\"tool\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n```",
            "<tool_call>[{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}]</tool_call>",
            r#"{"name": "list_files", "arguments": "{\"path\": \"src\"}"} and more"#,
        ];
        for text in cases {
            let call = tool_call_in_text(text, &tools()).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(call.name, "list_files", "{text}");
            assert!(call.arguments.is_object(), "{text}");
        }
    }

    #[test]
    fn a_call_asked_for_alone_may_leave_out_its_arguments() {
        let tools = tools();
        let text = r#"{"tool": "list_files"}"#;
        assert!(
            tool_call_in_text(text, &tools).is_none(),
            "a plan action is no call"
        );
        let call = requested_tool_call(text, &tools).expect("the requested call");
        assert_eq!(call.name, "list_files");
        assert_eq!(call.arguments, serde_json::json!({}));
        assert!(requested_tool_call(r#"{"tool": "run_shell"}"#, &tools).is_none());
        // Arguments that are no object, or JSON that does not parse, still name the call it was
        // asked for; it runs with none.
        for named in [
            r#"{"tool": "list_files", "arguments": {...}}"#,
            r#"{"tool": "list_files", "arguments": [1]}"#,
        ] {
            assert!(tool_call_in_text(named, &tools).is_none(), "{named}");
            let call = requested_tool_call(named, &tools).expect("the named call");
            assert_eq!(call.name, "list_files");
            assert_eq!(call.arguments, serde_json::json!({}));
        }
        assert!(requested_tool_call("no call here", &tools).is_none());
    }

    #[test]
    fn ignores_tools_not_offered_and_arguments_that_are_not_an_object() {
        let cases = [
            r#"{"tool": "run_shell", "arguments": {"cmd": "rm -rf /"}}"#,
            r#"{"tool": "Add a hello file"}"#,
            r#"{"task_id": "t1", "tool": "write_file", "purpose": "a planned action"}"#,
            r#"{"tool": "list_files", "arguments": ["src"]}"#,
            r#"{"report": "done", "verdict": {"success": true}}"#,
            "I would call list_files.",
        ];
        for text in cases {
            assert_eq!(tool_call_in_text(text, &tools()), None, "{text}");
        }
    }

    #[test]
    fn the_schema_names_each_tool_once_and_bounds_its_strings() {
        let schema = tool_call_schema(&tools());
        let branches = schema["anyOf"].as_array().unwrap();
        assert_eq!(branches.len(), 2);
        assert_eq!(
            branches[1]["properties"]["tool"]["enum"],
            json!(["write_file"])
        );
        assert_eq!(
            branches[1]["properties"]["arguments"]["properties"]["content"]["maxLength"],
            json!(MAX_STRING_CHARS)
        );
    }
}
