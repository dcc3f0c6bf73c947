//! The 2026-07-28 request metadata a stateless POST must carry, checked against its body:
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (with the `=?base64?…?=` encoding),
//! `Mcp-Param-{Name}` for `x-mcp-header` arguments, and the `io.modelcontextprotocol/*` keys
//! of `params._meta`.
//!
//! Pure functions of (headers, request, script), so each rule is a case in a table test. The
//! order of the checks follows the conformance suite's stateless mock server: a missing version
//! header, then missing `_meta` keys, then a header/`_meta` mismatch, then the version itself.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::HeaderMap;
use serde_json::{Value, json};

use crate::mcp::{INVALID_PARAMS, RpcError};

pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Why a request is refused before it reaches a method: HTTP 400 and this JSON-RPC error.
#[derive(Debug, Clone)]
pub struct Rejection(pub RpcError);

fn mismatch(message: impl Into<String>) -> Rejection {
    Rejection(RpcError::new(HEADER_MISMATCH, message))
}

/// A header's value; `Err` when it is present but not visible ASCII (RFC 9110 field value).
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, Rejection> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(Some)
            .map_err(|_| mismatch(format!("Header mismatch: {name} has invalid characters"))),
    }
}

/// Decodes the `=?base64?…?=` sentinel form; any other value is taken as it is.
pub fn decode(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    let bytes = STANDARD
        .decode(encoded)
        .map_err(|e| format!("invalid Base64 in {value:?} ({e})"))?;
    String::from_utf8(bytes).map_err(|_| format!("Base64 value {value:?} is not UTF-8"))
}

/// The body field `Mcp-Name` mirrors, for the methods that require it.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// Checks the headers and `_meta` of a stateless request. `supported` lists the versions the
/// fixture accepts.
pub fn check(
    headers: &HeaderMap,
    method: &str,
    params: &Value,
    supported: &[String],
    require_client_info: bool,
) -> Result<(), Rejection> {
    let Some(version) = header(headers, "mcp-protocol-version")? else {
        return Err(mismatch(
            "Header mismatch: missing MCP-Protocol-Version header",
        ));
    };
    let meta = params.get("_meta");
    let mut required = vec![META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES];
    if require_client_info {
        required.push(META_CLIENT_INFO);
    }
    let missing: Vec<&str> = required
        .into_iter()
        .filter(|key| meta.and_then(|m| m.get(key)).is_none_or(Value::is_null))
        .collect();
    if !missing.is_empty() {
        let message = format!("Invalid params: missing _meta keys: {}", missing.join(", "));
        return Err(Rejection(RpcError::new(INVALID_PARAMS, message)));
    }
    let meta_version = meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
    if meta_version.and_then(Value::as_str) != Some(version) {
        return Err(mismatch(format!(
            "Header mismatch: MCP-Protocol-Version {version:?} does not match \
             _meta {META_PROTOCOL_VERSION} {}",
            meta_version.unwrap_or(&Value::Null)
        )));
    }
    if !supported.iter().any(|s| s == version) {
        let mut e = RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": supported, "requested": version}));
        return Err(Rejection(e));
    }
    match header(headers, "mcp-method")? {
        None => return Err(mismatch("Header mismatch: missing Mcp-Method header")),
        Some(m) if m != method => {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Method header value {m:?} does not match body method \
                 {method:?}"
            )));
        }
        Some(_) => {}
    }
    if let Some(field) = name_field(method) {
        let body = params
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(raw) = header(headers, "mcp-name")? else {
            return Err(mismatch(format!(
                "Header mismatch: missing Mcp-Name header (params.{field} is {body:?})"
            )));
        };
        let name = decode(raw).map_err(|e| mismatch(format!("Header mismatch: Mcp-Name: {e}")))?;
        if name != body {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Name header value {name:?} does not match body value \
                 {body:?}"
            )));
        }
    }
    Ok(())
}

/// Every `x-mcp-header` in a tool's input schema reachable through `properties` alone: the
/// header name and the property path.
pub fn annotated(schema: &Value) -> Vec<(String, Vec<String>)> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        if let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) {
            out.push((name.to_owned(), path.clone()));
        }
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, property) in properties {
            path.push(key.clone());
            walk(property, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out.retain(|(_, path)| !path.is_empty());
    out
}

/// The header form of an argument: strings as they are, integers in decimal, booleans as
/// `true`/`false`; `None` for values that have no header form.
fn header_form(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Integers compare numerically (`42.0` = `42`), everything else as text.
fn same(header: &str, body: &Value) -> bool {
    match (body, header.parse::<f64>()) {
        (Value::Number(n), Ok(h)) => n.as_f64() == Some(h),
        _ => header_form(body).as_deref() == Some(header),
    }
}

/// Checks the `Mcp-Param-{Name}` headers of a `tools/call` against its arguments, for the
/// tool's `inputSchema`.
pub fn check_params(
    headers: &HeaderMap,
    schema: &Value,
    arguments: &Value,
) -> Result<(), Rejection> {
    for (name, path) in annotated(schema) {
        let header_name = format!("mcp-param-{}", name.to_ascii_lowercase());
        let raw = header(headers, &header_name)?;
        let body = path
            .iter()
            .try_fold(arguments, |v, key| v.get(key))
            .filter(|v| !v.is_null());
        let label = format!("Mcp-Param-{name}");
        let arg = format!("arguments.{}", path.join("."));
        match (raw, body) {
            (None, None) => {}
            (None, Some(body)) => {
                return Err(mismatch(format!(
                    "Header mismatch: missing {label} header ({arg} is {body})"
                )));
            }
            (Some(raw), None) => {
                return Err(mismatch(format!(
                    "Header mismatch: {label} header {raw:?} but {arg} is absent"
                )));
            }
            (Some(raw), Some(body)) => {
                let value =
                    decode(raw).map_err(|e| mismatch(format!("Header mismatch: {label}: {e}")))?;
                if !same(&value, body) {
                    return Err(mismatch(format!(
                        "Header mismatch: {label} header value {value:?} does not match body \
                         value {body}"
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        map
    }

    fn meta(version: &str) -> Value {
        json!({
            META_PROTOCOL_VERSION: version,
            META_CLIENT_INFO: {"name": "t", "version": "0"},
            META_CLIENT_CAPABILITIES: {},
        })
    }

    /// `expect` is `Ok(())` as `""`, or the rejection's code and the start of its message.
    fn check_case(pairs: &[(&str, &str)], method: &str, params: Value, expect: &str) {
        let supported = vec!["2026-07-28".to_owned()];
        let got = match check(&headers(pairs), method, &params, &supported, true) {
            Ok(()) => String::new(),
            Err(Rejection(e)) => format!("{} {}", e.code, e.message),
        };
        assert!(
            got.starts_with(expect) && (expect.is_empty() == got.is_empty()),
            "{pairs:?} {method} {params}: got {got:?}, want {expect:?}"
        );
    }

    #[test]
    fn request_metadata() {
        let v = ("mcp-protocol-version", "2026-07-28");
        let ok = json!({"_meta": meta("2026-07-28")});
        let call = |name: &str| json!({"name": name, "_meta": meta("2026-07-28")});
        check_case(
            &[v, ("mcp-method", "tools/list")],
            "tools/list",
            ok.clone(),
            "",
        );
        check_case(
            &[("mcp-method", "tools/list")],
            "tools/list",
            ok.clone(),
            "-32020 Header mismatch: missing MCP-Protocol-Version",
        );
        check_case(
            &[v],
            "tools/list",
            ok.clone(),
            "-32020 Header mismatch: missing Mcp-Method",
        );
        check_case(
            &[v, ("mcp-method", "tools/call")],
            "tools/list",
            ok.clone(),
            "-32020 Header mismatch: Mcp-Method header value",
        );
        check_case(
            &[v, ("mcp-method", "tools/list")],
            "tools/list",
            json!({}),
            "-32602 Invalid params: missing _meta keys: io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities, io.modelcontextprotocol/clientInfo",
        );
        check_case(
            &[v, ("mcp-method", "tools/list")],
            "tools/list",
            json!({"_meta": meta("2025-11-25")}),
            "-32020 Header mismatch: MCP-Protocol-Version",
        );
        let old = [
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/list"),
        ];
        check_case(
            &old,
            "tools/list",
            json!({"_meta": meta("2025-11-25")}),
            "-32022 Unsupported",
        );
        let call_headers =
            |name: &'static str| [v, ("mcp-method", "tools/call"), ("mcp-name", name)];
        check_case(&call_headers("echo"), "tools/call", call("echo"), "");
        check_case(
            &[v, ("mcp-method", "tools/call")],
            "tools/call",
            call("echo"),
            "-32020 Header mismatch: missing Mcp-Name",
        );
        check_case(
            &call_headers("add"),
            "tools/call",
            call("echo"),
            "-32020 Header mismatch: Mcp-Name header value \"add\"",
        );
        // "Hello, 世界" in the sentinel form.
        check_case(
            &call_headers("=?base64?SGVsbG8sIOS4lueVjA==?="),
            "tools/call",
            call("Hello, 世界"),
            "",
        );
        check_case(
            &call_headers("=?base64?!!?="),
            "tools/call",
            call("x"),
            "-32020 Header mismatch: Mcp-Name: invalid Base64",
        );
        let read = json!({"uri": "file:///a b", "_meta": meta("2026-07-28")});
        check_case(
            &[
                v,
                ("mcp-method", "resources/read"),
                ("mcp-name", "file:///a b"),
            ],
            "resources/read",
            read,
            "",
        );
    }

    #[test]
    fn unsupported_version_names_both_sides() {
        let h = headers(&[
            ("mcp-protocol-version", "1900-01-01"),
            ("mcp-method", "ping"),
        ]);
        let params = json!({"_meta": meta("1900-01-01")});
        let Err(Rejection(e)) = check(&h, "ping", &params, &["2026-07-28".to_owned()], true) else {
            panic!("accepted 1900-01-01");
        };
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "1900-01-01"}))
        );
    }

    fn params_case(pairs: &[(&str, &str)], arguments: Value, expect: &str) {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "nested": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "text": {"type": "string"},
        }});
        let got = match check_params(&headers(pairs), &schema, &arguments) {
            Ok(()) => String::new(),
            Err(Rejection(e)) => format!("{} {}", e.code, e.message),
        };
        assert!(
            got.starts_with(expect) && (expect.is_empty() == got.is_empty()),
            "{pairs:?} {arguments}: got {got:?}, want {expect:?}"
        );
    }

    #[test]
    fn parameter_headers() {
        params_case(&[], json!({"text": "x"}), "");
        params_case(
            &[("mcp-param-region", "us-west1")],
            json!({"region": "us-west1"}),
            "",
        );
        params_case(
            &[],
            json!({"region": "us-west1"}),
            "-32020 Header mismatch: missing Mcp-Param-Region",
        );
        params_case(&[], json!({"region": null}), "");
        params_case(
            &[("mcp-param-region", "eu")],
            json!({"region": "us"}),
            "-32020 Header mismatch: Mcp-Param-Region header value \"eu\"",
        );
        params_case(
            &[("mcp-param-region", "eu")],
            json!({}),
            "-32020 Header mismatch: Mcp-Param-Region header \"eu\" but arguments.region is absent",
        );
        params_case(&[("mcp-param-priority", "42")], json!({"priority": 42}), "");
        params_case(
            &[("mcp-param-priority", "42.0")],
            json!({"priority": 42}),
            "",
        );
        params_case(
            &[("mcp-param-priority", "7")],
            json!({"priority": 42}),
            "-32020",
        );
        params_case(
            &[("mcp-param-zone", "=?base64?IHBhZGRlZCA=?=")],
            json!({"nested": {"zone": " padded "}}),
            "",
        );
        params_case(
            &[("mcp-param-zone", " padded ")],
            json!({"nested": {"zone": "padded"}}),
            "-32020",
        );
    }

    #[test]
    fn an_invalid_header_name_is_never_satisfied() {
        let schema = json!({"properties": {"q": {"type": "number", "x-mcp-header": "Bad Header"}}});
        let got = check_params(&headers(&[]), &schema, &json!({"q": 1}));
        assert!(matches!(got, Err(Rejection(e)) if e.code == HEADER_MISMATCH));
        assert!(check_params(&headers(&[]), &schema, &json!({})).is_ok());
    }

    #[test]
    fn annotations_reachable_through_properties_only() {
        let schema = json!({"properties": {
            "a": {"x-mcp-header": "A"},
            "list": {"items": {"properties": {"b": {"x-mcp-header": "B"}}}},
            "o": {"properties": {"c": {"x-mcp-header": "C"}}},
        }});
        let got: Vec<(String, Vec<String>)> = annotated(&schema);
        let want = vec![
            ("A".to_owned(), vec!["a".to_owned()]),
            ("C".to_owned(), vec!["o".to_owned(), "c".to_owned()]),
        ];
        assert_eq!(got, want);
    }
}
