//! `lifeline conformance URL`: the client the official MCP conformance runner launches. The
//! runner names the scenario in MCP_CONFORMANCE_SCENARIO; each scenario does what the
//! suite checks and exits 0 on success.

use crate::output::{EXIT_OK, EXIT_TOOL_ERROR, Out};
use lifeline_core::diagnostics::redact::Redactor;
use lifeline_core::protocol::mcp::elicitation_defaults;
use lifeline_core::session::{Handler, RequestOptions};
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::{Session, SessionOptions};
use serde_json::{Value, json};
use std::sync::Arc;

pub async fn run(url: &str) -> i32 {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let out = Out {
        json: false,
        redactor: Redactor::default(),
    };
    let mut options = SessionOptions::default();
    if scenario.starts_with("elicitation") {
        options.elicitation = Some(accept_with_defaults());
    }
    let conn = match http::connect(&HttpConfig::new(url)) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let session = match Session::connect(conn, options).await {
        Ok(s) => s,
        Err(e) => return out.error(&e),
    };
    let result = scenario_steps(&session, &scenario).await;
    let code = match result {
        Ok(true) => EXIT_OK,
        Ok(false) => EXIT_TOOL_ERROR,
        Err(e) => out.error(&e),
    };
    session.close().await;
    code
}

/// Ok(false) when a tool answered with `isError`.
async fn scenario_steps(session: &Session, scenario: &str) -> Result<bool, lifeline_core::Error> {
    let call = |name: &'static str, args: Value| async move {
        let r = session
            .call_tool(name, args, RequestOptions::default())
            .await?;
        Ok::<bool, lifeline_core::Error>(
            !r.get("isError").and_then(Value::as_bool).unwrap_or(false),
        )
    };
    match scenario {
        "tools_call" => {
            session.list_tools().await?;
            call("add_numbers", json!({ "a": 5, "b": 3 })).await
        }
        "sse-retry" => call("test_reconnection", json!({})).await,
        // Round-trips the focal tool's inputSchema, as the client holds it, through the
        // echo tool: the scenario diffs it against what it served (SEP-1613, SEP-2106).
        "json-schema-2020-12-preservation" => {
            let tools = session.list_tools().await?;
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.clone())
                .ok_or_else(|| {
                    lifeline_core::Error::protocol(
                        "tools/list has no json_schema_2020_12_tool to round-trip",
                    )
                })?;
            call("json_schema_echo", json!({ "schema": schema })).await
        }
        s if s.starts_with("elicitation") => {
            call("test_client_elicitation_defaults", json!({})).await
        }
        // "initialize" and anything unknown: the handshake and a listing are the test.
        _ => session.list_tools().await.map(|_| true),
    }
}

/// Accepts every form, filled with the defaults its schema declares (SEP-1034).
fn accept_with_defaults() -> Handler {
    Arc::new(|params: Value| {
        Box::pin(async move {
            let content = elicitation_defaults(&params["requestedSchema"]);
            Ok(json!({ "action": "accept", "content": content }))
        })
    })
}
