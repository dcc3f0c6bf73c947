//! MCP's client-side messages: the initialize handshake with version negotiation, tools,
//! progress, and the server-to-client requests a client must answer.

use super::revision::Revision;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const CLIENT_NAME: &str = "lifeline";
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Checks the version a server answered with. The message names both sides' versions and
/// what to do, because "unsupported version" alone leaves the user nowhere.
pub fn negotiate(server_version: &str) -> Result<Revision, String> {
    if server_version == Revision::STATELESS.as_str() {
        return Err(format!(
            "the server answered initialize with protocol version {server_version}, a revision \
             that has no initialize: it contradicts itself; set `protocol` to \"{server_version}\" \
             if it speaks the stateless revision, or to the revision it speaks with initialize"
        ));
    }
    Revision::parse_initialize(server_version).ok_or_else(|| {
            format!(
                "the server chose MCP protocol version {server_version:?}, which Lifeline does not speak \
                 (it speaks {}); update the server or Lifeline",
                Revision::list(&Revision::INITIALIZE)
            )
        })
}

/// What the embedder lets a server ask of this client. Each capability is declared in
/// `initialize` only when it is turned on; requests for the others are answered
/// method-not-found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCapabilities {
    pub roots: bool,
    pub sampling: bool,
    /// Form elicitation; `apply_defaults` tells the server we fill schema defaults.
    pub elicitation: bool,
    /// What an attached host declared (the gateway, `supervisor::hosts`): its `roots`,
    /// `sampling` and `elicitation` values replace ours, since its requests go to it.
    pub host: Option<Value>,
}

/// The client capabilities a gateway's host declares that the session offers in its stead.
pub const RELAYED_CAPABILITIES: [&str; 3] = ["roots", "sampling", "elicitation"];

impl ClientCapabilities {
    pub fn to_value(&self) -> Value {
        let mut caps = serde_json::Map::new();
        if self.roots {
            caps.insert("roots".into(), json!({ "listChanged": false }));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.elicitation {
            caps.insert(
                "elicitation".into(),
                json!({ "form": { "applyDefaults": true } }),
            );
        }
        if let Some(Value::Object(host)) = &self.host {
            for key in RELAYED_CAPABILITIES {
                if let Some(v) = host.get(key) {
                    caps.insert(key.into(), v.clone());
                }
            }
        }
        Value::Object(caps)
    }
}

pub fn initialize_params(caps: &ClientCapabilities) -> Value {
    json!({
        "protocolVersion": Revision::LATEST_INITIALIZE.as_str(),
        "capabilities": caps.to_value(),
        "clientInfo": { "name": CLIENT_NAME, "version": CLIENT_VERSION, "title": "Lifeline" },
    })
}

/// The parts of the `initialize` result a client acts on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: Value,
    #[serde(default)]
    pub server_info: Option<Implementation>,
    #[serde(default)]
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    #[serde(default)]
    pub version: String,
}

/// A tool as listed by the server. The schema and annotations are kept as JSON: Lifeline
/// shows and checks them but never needs their fields as Rust types. `raw` is the tool's
/// JSON exactly as the server sent it (outputSchema, icons, `_meta` and any field a later
/// revision adds): the gateway serves it to the host verbatim. It is never serialized, so
/// events and the UI see only the parsed fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", try_from = "Value")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub description: Option<String>,
    #[serde(default = "empty_object_schema")]
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub annotations: Option<Value>,
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub raw: Option<std::sync::Arc<Value>>,
}

/// `Tool`'s parsed fields, read from the same JSON the tool keeps as `raw`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolFields {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default = "empty_object_schema")]
    input_schema: Value,
    #[serde(default)]
    annotations: Option<Value>,
}

impl TryFrom<Value> for Tool {
    type Error = serde_json::Error;

    fn try_from(raw: Value) -> Result<Self, Self::Error> {
        let f = ToolFields::deserialize(&raw)?;
        Ok(Tool {
            name: f.name,
            title: f.title,
            description: f.description,
            input_schema: f.input_schema,
            annotations: f.annotations,
            raw: Some(std::sync::Arc::new(raw)),
        })
    }
}

impl Tool {
    /// The tool as the server listed it; a tool not read from a server's JSON is
    /// serialized from its parsed fields.
    pub fn raw_json(&self) -> Value {
        match &self.raw {
            Some(raw) => Value::clone(raw),
            None => serde_json::to_value(self).unwrap_or_default(),
        }
    }

    /// `raw_json`, shared rather than copied when the tool was read from a server's JSON.
    pub fn shared_json(&self) -> std::sync::Arc<Value> {
        match &self.raw {
            Some(raw) => raw.clone(),
            None => std::sync::Arc::new(self.raw_json()),
        }
    }
}

fn empty_object_schema() -> Value {
    json!({ "type": "object" })
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsPage {
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A `notifications/progress` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Fills an elicitation form from the defaults in its `requestedSchema` (SEP-1034). Fields
/// without a default are left out, which a form with only optional fields accepts.
pub fn elicitation_defaults(requested_schema: &Value) -> Value {
    let mut content = serde_json::Map::new();
    if let Some(props) = requested_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_accepts_the_known_revisions_and_names_them_when_refusing() {
        for r in Revision::INITIALIZE {
            assert_eq!(negotiate(r.as_str()), Ok(r));
        }
        let err = negotiate("2024-10-07").unwrap_err();
        assert!(
            err.contains("\"2024-10-07\"") && err.contains("2024-11-05"),
            "{err}"
        );
        assert!(negotiate("").is_err());
        let err = negotiate("2026-07-28").unwrap_err();
        assert!(
            err.contains("has no initialize") && err.contains("`protocol`"),
            "{err}"
        );
    }

    #[test]
    fn initialize_offers_the_latest_revision_and_only_enabled_capabilities() {
        let p = initialize_params(&ClientCapabilities::default());
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["capabilities"], json!({}));
        assert_eq!(p["clientInfo"]["name"], "lifeline");
        let p = initialize_params(&ClientCapabilities {
            elicitation: true,
            ..Default::default()
        });
        assert_eq!(
            p["capabilities"]["elicitation"]["form"]["applyDefaults"],
            true
        );
    }

    #[test]
    fn elicitation_defaults_fill_every_defaulted_field() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "age":{"type":"integer","default":30},
            "note":{"type":"string"}}});
        assert_eq!(
            elicitation_defaults(&schema),
            json!({"name":"John Doe","age":30})
        );
    }

    #[test]
    fn tools_keep_schema_and_annotations() {
        let page: ListToolsPage = serde_json::from_value(json!({"tools":[
            {"name":"a","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true}},
            {"name":"b"}], "nextCursor":"c2"})).unwrap();
        assert_eq!(
            page.tools[0].annotations,
            Some(json!({"readOnlyHint":true}))
        );
        assert_eq!(page.tools[1].input_schema, json!({"type":"object"}));
        assert_eq!(page.next_cursor.as_deref(), Some("c2"));
    }

    #[test]
    fn a_tool_keeps_its_raw_json_and_serializes_only_the_parsed_fields() {
        let listed = json!({"name":"a","inputSchema":{"type":"object"},
            "outputSchema":{"type":"object"},"icons":[{"src":"data:,"}],"_meta":{"k":1}});
        let tool: Tool = serde_json::from_value(listed.clone()).unwrap();
        assert_eq!(tool.raw_json(), listed);
        let shown = serde_json::to_value(&tool).unwrap();
        assert_eq!(shown, json!({"name":"a","inputSchema":{"type":"object"}}));
        let again: Tool = serde_json::from_value(shown.clone()).unwrap();
        assert_eq!(again.raw_json(), shown);
    }
}
