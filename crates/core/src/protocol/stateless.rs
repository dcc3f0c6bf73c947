//! The stateless revision (MCP 2026-07-28): no `initialize`; every request carries the
//! protocol version, client info and capabilities in `params._meta`; `server/discover`
//! tells what a server speaks; over HTTP, selected body fields are mirrored into headers
//! (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` for tool arguments annotated `x-mcp-header`).
//! Pure data, like the rest of `protocol`.

use super::mcp::{CLIENT_NAME, CLIENT_VERSION, ClientCapabilities, Implementation};
use super::revision::Revision;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The headers that mirror body fields (HTTP only).
pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The error codes only a server of the stateless revision sends: together with 404 +
/// method-not-found, they are "a recognised stateless-revision JSON-RPC error", which
/// proves the server speaks it.
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

pub fn is_stateless_error_code(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// Requests whose answer a lost response stream may be asked for again: they only read.
/// `tools/call` is re-issued only for tools that say they are safe to repeat.
pub fn is_idempotent(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
    )
}

/// The `_meta` every stateless-revision request carries.
pub fn request_meta(revision: Revision, caps: &ClientCapabilities) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), Value::from(revision.as_str()));
    meta.insert(
        META_CLIENT_INFO.into(),
        json!({ "name": CLIENT_NAME, "version": CLIENT_VERSION, "title": "Lifeline" }),
    );
    meta.insert(META_CLIENT_CAPABILITIES.into(), caps.to_value());
    meta
}

/// `params` with `meta` merged into its `_meta` (keys already there, such as a progress
/// token, are kept).
pub fn with_meta(params: Option<Value>, meta: &Map<String, Value>) -> Value {
    let mut params = match params {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    let entry = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(m) = entry.as_object_mut() {
        for (k, v) in meta {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(params)
}

/// What `server/discover` answers, in the parts a client acts on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    pub supported_versions: Vec<String>,
    #[serde(default)]
    pub capabilities: Value,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Not in the schema, but some servers put it here rather than in `_meta`.
    #[serde(default)]
    pub server_info: Option<Implementation>,
}

impl DiscoverResult {
    pub fn server_info(&self) -> Option<Implementation> {
        self.meta
            .as_ref()
            .and_then(|m| m.get(META_SERVER_INFO))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .or_else(|| self.server_info.clone())
    }
}

/// The value of `Mcp-Name` for a request, if its method has one.
pub fn name_of(method: &str, params: Option<&Value>) -> Option<String> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params?.get(key)?.as_str().map(str::to_owned)
}

/// A value as an HTTP header value: as-is when it is plain visible ASCII without leading
/// or trailing space, otherwise `=?base64?…?=` of its UTF-8 (as is a plain value that
/// looks like that sentinel, so that it cannot be misread).
pub fn header_value(value: &str) -> String {
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !sentinel;
    if plain {
        return value.to_owned();
    }
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
    )
}

/// One `x-mcp-header` annotation: the `properties` path to the argument and the header's
/// name part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    pub path: Vec<String>,
    pub name: String,
}

/// JavaScript's safe integer range, which header integers must stay within.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The `x-mcp-header` annotations of a tool's input schema, or why the tool must be
/// rejected (the spec: a tool with an invalid annotation is left out of `tools/list`).
pub fn param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    collect(input_schema, &mut Vec::new(), true, &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for h in &found {
        if !seen.insert(h.name.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {:?} is used twice (names are case-insensitive)",
                h.name
            ));
        }
    }
    Ok(found)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Ok(());
    };
    for (key, value) in obj {
        match key.as_str() {
            "x-mcp-header" => {
                let at = if path.is_empty() {
                    "the schema root".to_owned()
                } else {
                    format!("property {:?}", path.join("."))
                };
                if !reachable || path.is_empty() {
                    return Err(format!(
                        "x-mcp-header on {at} is not reachable through `properties` alone"
                    ));
                }
                let Some(name) = value.as_str() else {
                    return Err(format!("x-mcp-header on {at} is not a string"));
                };
                if name.is_empty() || !name.bytes().all(is_tchar) {
                    return Err(format!(
                        "x-mcp-header {name:?} on {at} is not an HTTP header name token"
                    ));
                }
                match obj.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header {name:?} on {at} has type {}; only string, integer \
                             and boolean parameters may be mirrored",
                            other.map_or("(none)".to_owned(), |t| format!("{t:?}"))
                        ));
                    }
                }
                found.push(ParamHeader {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            "properties" => {
                if let Some(props) = value.as_object() {
                    for (name, sub) in props {
                        path.push(name.clone());
                        collect(sub, path, reachable, found)?;
                        path.pop();
                    }
                }
            }
            // Any other keyword that holds schemas makes what is below it unreachable.
            _ => match value {
                Value::Object(_) => collect(value, &mut path.clone(), false, found)?,
                Value::Array(items) => {
                    for item in items {
                        collect(item, &mut path.clone(), false, found)?;
                    }
                }
                _ => {}
            },
        }
    }
    Ok(())
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for a call's arguments: a header per annotated argument that
/// is present and not null, its value encoded by `header_value`.
pub fn param_header_values(headers: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for h in headers {
        let mut v = arguments;
        for key in &h.path {
            match v.get(key) {
                Some(next) => v = next,
                None => {
                    v = &Value::Null;
                    break;
                }
            }
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => match n.as_i64() {
                Some(i) if i.abs() <= MAX_SAFE_INTEGER => i.to_string(),
                _ => continue,
            },
            _ => continue,
        };
        out.push((
            format!("{PARAM_HEADER_PREFIX}{}", h.name),
            header_value(&text),
        ));
    }
    out
}

/// True when a tool may be called again after its response stream was lost: it says it
/// only reads, or that repeating it has no further effect.
pub fn tool_is_repeatable(annotations: Option<&Value>) -> bool {
    let hint = |k: &str| {
        annotations
            .and_then(|a| a.get(k))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    hint("readOnlyHint") || hint("idempotentHint")
}

/// `resultType` of a stateless-revision result: absent means complete.
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Versions as the server listed them, kept only when they look like revisions (they end
/// up in messages, so nothing else a server wrote gets through).
pub fn clean_versions(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|v| {
                    v.len() == 10
                        && v.bytes().enumerate().all(|(i, b)| {
                            if i == 4 || i == 7 {
                                b == b'-'
                            } else {
                                b.is_ascii_digit()
                            }
                        })
                })
                .map(str::to_owned)
                .take(16)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_carries_version_client_and_capabilities_and_keeps_other_keys() {
        let meta = request_meta(Revision::STATELESS, &ClientCapabilities::default());
        let p = with_meta(Some(json!({"name":"t","_meta":{"progressToken":3}})), &meta);
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "lifeline");
        assert_eq!(p["_meta"][META_CLIENT_CAPABILITIES], json!({}));
        assert_eq!(p["_meta"]["progressToken"], 3);
        assert_eq!(p["name"], "t");
        assert_eq!(
            with_meta(None, &meta)["_meta"].as_object().unwrap().len(),
            3
        );
    }

    #[test]
    fn header_values_follow_the_spec_table() {
        assert_eq!(header_value("us-west1"), "us-west1");
        assert_eq!(
            header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(header_value("a b"), "a b");
    }

    #[test]
    fn names_come_from_name_or_uri() {
        let p = json!({"name":"echo","uri":"file:///x"});
        assert_eq!(name_of("tools/call", Some(&p)).as_deref(), Some("echo"));
        assert_eq!(name_of("prompts/get", Some(&p)).as_deref(), Some("echo"));
        assert_eq!(
            name_of("resources/read", Some(&p)).as_deref(),
            Some("file:///x")
        );
        assert_eq!(name_of("tools/list", Some(&p)), None);
    }

    #[test]
    fn param_headers_are_found_on_properties_paths_only() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry"}}},
            "query":{"type":"string"}}});
        let h = param_headers(&schema).unwrap();
        assert_eq!(
            h,
            vec![
                ParamHeader {
                    path: vec!["region".into()],
                    name: "Region".into()
                },
                ParamHeader {
                    path: vec!["opts".into(), "dry".into()],
                    name: "Dry".into()
                },
            ]
        );
        let values = param_header_values(
            &h,
            &json!({"region":"Hello, 世界","opts":{"dry":true},"query":"x"}),
        );
        assert_eq!(
            values,
            vec![
                (
                    "mcp-param-Region".to_owned(),
                    "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()
                ),
                ("mcp-param-Dry".to_owned(), "true".to_owned()),
            ]
        );
        // Absent or null: no header.
        assert!(param_header_values(&h, &json!({"region":null})).is_empty());
    }

    #[test]
    fn invalid_annotations_reject_the_tool_with_a_reason() {
        let bad = [
            (
                json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
                "type",
            ),
            (
                json!({"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
                "token",
            ),
            (
                json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
                "token",
            ),
            (
                json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},
                                     "b":{"type":"string","x-mcp-header":"x"}}}),
                "twice",
            ),
            (
                json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}}),
                "reachable",
            ),
            (
                json!({"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
                "reachable",
            ),
        ];
        for (schema, why) in bad {
            let e = param_headers(&schema).unwrap_err();
            assert!(e.contains(why), "{schema}: {e}");
        }
    }

    #[test]
    fn repeatable_tools_say_so() {
        assert!(tool_is_repeatable(Some(&json!({"readOnlyHint":true}))));
        assert!(tool_is_repeatable(Some(&json!({"idempotentHint":true}))));
        assert!(!tool_is_repeatable(Some(&json!({"destructiveHint":false}))));
        assert!(!tool_is_repeatable(None));
    }

    #[test]
    fn only_revision_shaped_versions_are_kept() {
        let v = clean_versions(&json!([
            "2026-07-28",
            "2025-11-25",
            "sk-live-123",
            7,
            "2026-7-28"
        ]));
        assert_eq!(v, vec!["2026-07-28", "2025-11-25"]);
    }

    #[test]
    fn discover_results_parse_with_server_info_in_meta() {
        let d: DiscoverResult = serde_json::from_value(json!({
            "resultType":"complete","supportedVersions":["2026-07-28"],
            "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public",
            "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}))
        .unwrap();
        assert_eq!(d.server_info().unwrap().name, "s");
        assert!(serde_json::from_value::<DiscoverResult>(json!({})).is_err());
    }
}
