//! A small MCP server over stdio, built with rmcp, used by the integration tests of the MCP
//! client (`tests/all/tools.rs`). Tools: `echo`, `add`, `fail` (an error result), `slow` (sleeps)
//! `env` (a variable of its environment) and `crash` (the process exits in the middle of the call, after a line on stderr).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct Fixture;

fn schema(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().expect("schema is an object")
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "echo",
            "Return the text",
            schema(
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ),
        ),
        Tool::new(
            "add",
            "Add two integers",
            schema(
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            ),
        ),
        Tool::new("fail", "Report an error", schema(json!({"type": "object"}))),
        Tool::new(
            "slow",
            "Sleep for `seconds`",
            schema(json!({"type": "object", "properties": {"seconds": {"type": "integer"}}})),
        ),
        Tool::new(
            "env",
            "The value of an environment variable",
            schema(
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ),
        Tool::new(
            "crash",
            "Exit the process mid-call",
            schema(json!({"type": "object"})),
        ),
    ]
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let text = |t: String| Ok(CallToolResult::success(vec![ContentBlock::text(t)]).into());
        match request.name.as_ref() {
            "echo" => text(args["text"].as_str().unwrap_or_default().to_owned()),
            "add" => match (args["a"].as_i64(), args["b"].as_i64()) {
                (Some(a), Some(b)) => text((a + b).to_string()),
                _ => Err(ErrorData::invalid_params("a and b must be integers", None)),
            },
            "fail" => Ok(
                CallToolResult::error(vec![ContentBlock::text("this tool always fails")]).into(),
            ),
            "slow" => {
                let seconds = args["seconds"].as_u64().unwrap_or(30);
                tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
                text(format!("slept {seconds}s"))
            }
            "env" => {
                let name = args["name"].as_str().unwrap_or_default();
                text(std::env::var(name).unwrap_or_else(|_| "<unset>".to_owned()))
            }
            "crash" => {
                eprintln!("fixture: crashing on purpose");
                std::process::exit(3);
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main]
async fn main() {
    let service = Fixture
        .serve(rmcp::transport::stdio())
        .await
        .expect("MCP handshake");
    let _ = service.waiting().await;
}
