//! `lifeline conformance URL`: the client the official MCP conformance runner launches. The
//! runner names the scenario in MCP_CONFORMANCE_SCENARIO, the spec revision under test in
//! MCP_CONFORMANCE_PROTOCOL_VERSION (0.2.0 runners; used as the `protocol` pin, as a user
//! would pin a server) and scenario data in MCP_CONFORMANCE_CONTEXT; each scenario does
//! what the suite checks and exits 0 on success. The protocol is found the way every
//! other command finds it (`session::negotiate`).

use crate::output::{EXIT_OK, EXIT_TOOL_ERROR, Out};
use crate::target::Target;
use lifeline_core::auth::{Authorizer, OAuthSettings, Secret, SignIn};
use lifeline_core::protocol::mcp::elicitation_defaults;
use lifeline_core::protocol::revision::ProtocolChoice;
use lifeline_core::redact::Redactor;
use lifeline_core::session::{Handler, RequestOptions};
use lifeline_core::transport::http::HttpConfig;
use lifeline_core::{Session, SessionOptions};
use serde_json::{Value, json};
use std::sync::Arc;

pub async fn run(url: &str) -> i32 {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let out = Out {
        json: false,
        redactor: Redactor::default(),
    };
    let protocol = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .and_then(|v| ProtocolChoice::parse(&v).ok())
        .unwrap_or_default();
    let mut options = SessionOptions {
        pinned: protocol.pinned(),
        ..SessionOptions::default()
    };
    if scenario.starts_with("elicitation") || scenario.starts_with("sep-2322") {
        options.elicitation = Some(accept_with_defaults());
    }
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let mut http = HttpConfig::new(url);
    match authorizer(url, &context) {
        Ok(a) => http.auth = Some(Arc::new(a)),
        Err(e) => return out.error(&e),
    }
    let target = Target::Http(http);
    let session = match target.connect(protocol, options).await {
        Ok(s) => s,
        Err(e) => return out.error(&e),
    };
    let result = scenario_steps(&session, &scenario, &context).await;
    let code = match result {
        Ok(true) => EXIT_OK,
        Ok(false) => EXIT_TOOL_ERROR,
        Err(e) => out.error(&e),
    };
    session.close().await;
    code
}

/// The suite's Client ID Metadata Document URL: its authorization servers that support
/// such documents expect it as the client id (auth/basic-cimd).
const SUITE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// OAuth sign-in as the suite's auth scenarios drive it: headless (their authorization
/// endpoints redirect back at once), with the pre-registered client the scenario data
/// names (auth/pre-registration).
fn authorizer(url: &str, context: &Value) -> Result<Authorizer, lifeline_core::Error> {
    let text = |k: &str| context[k].as_str().map(str::to_owned);
    let settings = OAuthSettings {
        client_id: text("client_id"),
        client_secret: text("client_secret").map(Secret::new),
        client_metadata_url: Some(SUITE_CLIENT_METADATA_URL.to_owned()),
        ..OAuthSettings::default()
    };
    Authorizer::new(url, settings, SignIn::FollowRedirect)
}

/// Ok(false) when a tool answered with `isError`.
async fn scenario_steps(
    session: &Session,
    scenario: &str,
    context: &Value,
) -> Result<bool, lifeline_core::Error> {
    let call = |name: String, args: Value| async move {
        let r = session
            .call_tool(&name, args, RequestOptions::default())
            .await?;
        Ok::<bool, lifeline_core::Error>(
            !r.get("isError").and_then(Value::as_bool).unwrap_or(false),
        )
    };
    // Scenario data: tool calls to make with exact arguments (http-custom-headers).
    if let Some(calls) = context["toolCalls"].as_array() {
        session.list_tools().await?;
        let mut ok = true;
        for c in calls {
            let name = c["name"].as_str().unwrap_or_default().to_owned();
            ok &= call(name, c["arguments"].clone()).await?;
        }
        return Ok(ok);
    }
    match scenario {
        "tools_call" => {
            session.list_tools().await?;
            call("add_numbers".into(), json!({ "a": 5, "b": 3 })).await
        }
        "sse-retry" => call("test_reconnection".into(), json!({})).await,
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
            call("json_schema_echo".into(), json!({ "schema": schema })).await
        }
        s if s.starts_with("elicitation") => {
            call("test_client_elicitation_defaults".into(), json!({})).await
        }
        // Every tool the server lists and Lifeline keeps (the invalid ones are left out).
        "http-invalid-tool-headers" => {
            for tool in session.list_tools().await? {
                call(tool.name, json!({})).await?;
            }
            Ok(true)
        }
        // Each method whose header is checked, on everything listed.
        "http-standard-headers" => {
            for tool in session.list_tools().await? {
                call(tool.name, json!({})).await?;
            }
            let listed = session
                .request("resources/list", None, RequestOptions::default())
                .await?;
            for r in listed["resources"].as_array().into_iter().flatten() {
                let params = json!({ "uri": r["uri"] });
                session
                    .request("resources/read", Some(params), RequestOptions::default())
                    .await?;
            }
            let listed = session
                .request("prompts/list", None, RequestOptions::default())
                .await?;
            for p in listed["prompts"].as_array().into_iter().flatten() {
                let params = json!({ "name": p["name"], "arguments": {} });
                session
                    .request("prompts/get", Some(params), RequestOptions::default())
                    .await?;
            }
            Ok(true)
        }
        // Multi round-trip requests: the session answers what the server asks for.
        "sep-2322-client-request-state" => {
            let listed = session.list_tools().await?;
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                if listed.iter().any(|t| t.name == name) {
                    call(name.into(), json!({})).await?;
                }
            }
            Ok(true)
        }
        // Sign-in scenarios: a listing, then a call, which some answer with a 403 asking
        // for more scope (auth/scope-step-up).
        s if s.starts_with("auth/") => {
            let tools = session.list_tools().await?;
            match tools.first() {
                Some(t) => call(t.name.clone(), json!({})).await,
                None => Ok(true),
            }
        }
        // "initialize", "request-metadata" and anything unknown: the handshake (or
        // discovery) and a listing are the test.
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
