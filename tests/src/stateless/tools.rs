//! The tools of the `stateless` mode: the shared ones (without `ask`, since a 2026-07-28 server
//! sends no requests of its own), plus tools for the client's re-issue and header rules:
//! `read_only` (readOnlyHint), `idempotent` (idempotentHint), `side_effect` (neither),
//! `header_echo` (`x-mcp-header` arguments) and, when scripted, `bad_header` (an invalid
//! `x-mcp-header` a client must drop from its listing). `log` sends `notifications/message` only
//! for requests whose `_meta` sets `io.modelcontextprotocol/logLevel`, as this revision requires.

use serde_json::{Value, json};

use crate::mcp::{RpcError, Server, Sink};
use crate::script::{Script, StatelessScript};
use crate::tools;

/// Arguments of the three re-issue tools: progress first (as the `progress` tool), then text.
const REISSUE_PROPERTIES: &str = r#"{
    "text": {"type": "string"},
    "steps": {"type": "integer", "description": "progress notifications before the result (2)"},
    "interval_ms": {"type": "integer", "description": "between progress notifications (10)"}
}"#;

fn reissue_tool(name: &str, description: &str, annotations: Option<Value>) -> Value {
    let properties: Value = serde_json::from_str(REISSUE_PROPERTIES).unwrap_or_default();
    let mut tool = json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    });
    if let Some(annotations) = annotations {
        tool["annotations"] = annotations;
    }
    tool
}

/// The stateless-only tools, in listing order (after the shared ones).
fn own(script: &StatelessScript) -> Vec<Value> {
    let mut own = vec![
        reissue_tool(
            "read_only",
            "Sends progress, then returns `text`. Declares readOnlyHint: safe to re-issue.",
            Some(json!({"readOnlyHint": true})),
        ),
        reissue_tool(
            "idempotent",
            "Sends progress, then returns `text`. Declares idempotentHint: safe to re-issue.",
            Some(json!({"readOnlyHint": false, "idempotentHint": true})),
        ),
        reissue_tool(
            "side_effect",
            "Sends progress, then returns `text`. Declares neither hint: never re-issued.",
            None,
        ),
        json!({
            "name": "header_echo",
            "description": "Returns its arguments as JSON text; region, priority, flag and \
                            nested.zone are mirrored into Mcp-Param-* headers.",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "nested": {"type": "object", "properties": {
                    "zone": {"type": "string", "x-mcp-header": "Zone"},
                }},
                "text": {"type": "string"},
            }},
        }),
    ];
    if script.invalid_header_tool {
        own.push(json!({
            "name": "bad_header",
            "description": "Its x-mcp-header is not a header token and sits on a number: a \
                            client must drop this tool from tools/list.",
            "inputSchema": {"type": "object", "properties": {
                "q": {"type": "number", "x-mcp-header": "Bad Header"},
            }},
        }));
    }
    own
}

/// Every tool `tools/list` shows in `stateless` mode, in order: the shared ones (the
/// script's extra tools among them), then the stateless ones.
pub fn definitions(script: &Script) -> Vec<Value> {
    let mut all: Vec<Value> = tools::definitions(script.extra_tools)
        .into_iter()
        .filter(|t| t["name"] != "ask")
        .collect();
    all.extend(own(&script.stateless));
    all
}

/// The input schema of a listed tool, for the `Mcp-Param-*` checks.
pub fn schema(script: &Script, name: &str) -> Option<Value> {
    definitions(script)
        .into_iter()
        .find(|t| t["name"] == name)
        .map(|t| t["inputSchema"].clone())
}

/// RFC 5424 severity order of MCP logging levels; unknown levels rank lowest.
fn severity(level: &str) -> usize {
    const LEVELS: [&str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    LEVELS.iter().position(|l| *l == level).unwrap_or(0)
}

/// Runs a stateless tool, or a shared one; `list_changed` is the caller's (it goes to the listen
/// streams, not to the response stream).
pub async fn call(
    server: &Server,
    script: &StatelessScript,
    params: &Value,
    sink: &Sink,
) -> Result<Value, RpcError> {
    let (name, args) = tools::name_and_args(params);
    match name {
        "read_only" | "idempotent" | "side_effect" => {
            let token = params.get("_meta").and_then(|m| m.get("progressToken"));
            let (steps, interval) = (
                tools::int(&args, "steps", 2),
                tools::int(&args, "interval_ms", 10),
            );
            tools::progress(token, steps, interval, sink).await;
            Ok(tools::text(format!(
                "{name}: {}",
                tools::string(&args, "text", "done")
            )))
        }
        "header_echo" => Ok(tools::text(args.to_string())),
        // Log messages go out only for requests that set a level, at or above it.
        "log" => {
            let wanted = params
                .pointer("/_meta/io.modelcontextprotocol~1logLevel")
                .and_then(Value::as_str);
            let level = tools::string(&args, "level", "info");
            match wanted {
                Some(wanted) if severity(level) >= severity(wanted) => {
                    tools::call(server, params, sink).await
                }
                Some(wanted) => Ok(tools::text(format!(
                    "not logged: {level} is below {wanted}"
                ))),
                None => Ok(tools::text(
                    "not logged: the request has no io.modelcontextprotocol/logLevel",
                )),
            }
        }
        "bad_header" if script.invalid_header_tool => Ok(tools::text(args.to_string())),
        "ask" | "bad_header" => Err(RpcError::new(
            crate::mcp::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )),
        _ => tools::call(server, params, sink).await,
    }
}
