//! Search mode (a profile with `"tools": "search"`): the host is shown three meta-tools
//! instead of the catalog, so a few hundred tools cost it a few hundred tokens.
//! `find_tools(query, limit)` ranks the catalog (`gateway::search`, BM25) and returns the
//! best matches with their full definitions; `call_tool(name, arguments)` calls one by its
//! host name, exactly as `tools/call` would (waiting, reissue by the tool's own annotations,
//! progress, cancel, errors naming the server); `describe_tool(name)` returns one
//! definition. A host may also call a found tool by its name with `tools/call`.
//!
//! The found tools are not also pushed into the host's list with `list_changed`: the list
//! would churn with every search, break the host's prompt cache and grow back towards the
//! full list this mode exists to avoid, and hosts handle a changing list unevenly.

use super::{Aggregate, Catalog};
use crate::gateway::ToolSet;
use crate::gateway::search::Index;
use crate::protocol::RpcError;
use serde_json::{Value, json};

pub(crate) const FIND: &str = "find_tools";
pub(crate) const CALL: &str = "call_tool";
pub(crate) const DESCRIBE: &str = "describe_tool";

/// How many tools `find_tools` returns unless asked, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// The meta-tools, as the host's `tools/list` shows them.
pub(crate) fn meta_tools() -> Vec<Value> {
    vec![
        json!({
            "name": FIND,
            "title": "Find tools",
            "description": "Search the tools of every server Lifeline connects you to and \
                return the best matches with their full definitions (name, description, \
                input schema). Describe what you want to do in a few words. Then call a \
                match with call_tool, or by its name.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do, in a few words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": format!("How many tools to return (default {DEFAULT_LIMIT})")},
                },
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
        json!({
            "name": CALL,
            "title": "Call a tool",
            "description": "Call a tool that find_tools returned, by its name, with its \
                arguments (as its input schema says).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as find_tools gave it"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name"],
            },
        }),
        json!({
            "name": DESCRIBE,
            "title": "Describe a tool",
            "description": "The full definition of one tool, by its name.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's name"}},
                "required": ["name"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
    ]
}

/// What the host is shown in search mode, as `list_changed` compares it: the meta-tools
/// only, so the catalog changing is no change to the host's list.
pub(crate) fn fingerprint() -> ToolSet {
    let mut set: ToolSet = meta_tools()
        .into_iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_owned(),
                std::sync::Arc::new(t),
            )
        })
        .collect();
    set.sort_by(|a, b| a.0.cmp(&b.0));
    set
}

/// Whether `name` is a meta-tool of `agg`'s (search mode only).
pub(crate) fn is_meta(agg: &Aggregate, name: &str) -> bool {
    agg.profile().search() && matches!(name, FIND | CALL | DESCRIBE)
}

/// A tool result holding `value` as its structured content and as text.
fn result(value: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": value.to_string()}],
        "structuredContent": value,
    })
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError {
        code: RpcError::INVALID_PARAMS,
        message: message.into(),
        data: None,
    }
}

/// The string argument `key` of a meta-tool call.
fn text_arg<'a>(args: &'a Value, tool: &str, key: &str) -> Result<&'a str, RpcError> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| invalid(format!("{tool} needs `{key}`, a non-empty string")))
}

/// `find_tools`: the best matches of the catalog, with their definitions.
pub(crate) fn find(catalog: &Catalog, index: &Index, args: &Value) -> Result<Value, RpcError> {
    let query = text_arg(args, FIND, "query")?;
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => (n as usize).min(MAX_LIMIT),
            _ => return Err(invalid(format!("find_tools: `limit` is 1 to {MAX_LIMIT}"))),
        },
    };
    let tools: Vec<Value> = index
        .search(query, limit)
        .into_iter()
        .filter_map(|hit| catalog.tool(&hit.name).cloned())
        .collect();
    Ok(result(json!({ "tools": tools })))
}

/// `describe_tool`: one definition by its host name.
pub(crate) fn describe(catalog: &Catalog, args: &Value) -> Result<Value, RpcError> {
    let name = text_arg(args, DESCRIBE, "name")?;
    match catalog.tool(name) {
        Some(tool) => Ok(result(tool.clone())),
        None => Err(super::unknown("tool", name)),
    }
}

/// `call_tool`'s target: the host name and arguments to call it with.
pub(crate) fn call_target(args: &Value) -> Result<(String, Value), RpcError> {
    let name = text_arg(args, CALL, "name")?.to_owned();
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(invalid("call_tool: `arguments` is an object")),
    };
    Ok((name, arguments))
}
