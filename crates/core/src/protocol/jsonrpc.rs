//! JSON-RPC 2.0 messages as MCP uses them: requests, notifications, responses (result or
//! error). Parsing is strict about the shape and lenient about extra members.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// A request id: MCP allows strings and integers; we send integers and echo whatever the
/// server used for its own requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
    /// `null`: only in the error answer to a message whose id could not be read (JSON-RPC
    /// 2.0, "Response object"). Never parsed from a message (`from_value` reads a null id
    /// as none) and never sent in a request.
    Null,
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
            RequestId::Null => f.write_str("null"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: RequestId,
    pub outcome: Result<Value, RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;

    pub fn method_not_found(method: &str) -> Self {
        RpcError {
            code: Self::METHOD_NOT_FOUND,
            message: format!("Method not found: {method}"),
            data: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// Why bytes from the peer are not a JSON-RPC message. The text never quotes the input, so
/// it is safe to show whatever the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Message {
    pub fn request(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Request(Request {
            id,
            method: method.into(),
            params,
        })
    }

    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Notification(Notification {
            method: method.into(),
            params,
        })
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), "2.0".into());
        match self {
            Message::Request(r) => {
                m.insert(
                    "id".into(),
                    serde_json::to_value(&r.id).unwrap_or(Value::Null),
                );
                m.insert("method".into(), r.method.clone().into());
                if let Some(p) = &r.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                m.insert("method".into(), n.method.clone().into());
                if let Some(p) = &n.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Response(r) => {
                m.insert(
                    "id".into(),
                    serde_json::to_value(&r.id).unwrap_or(Value::Null),
                );
                match &r.outcome {
                    Ok(v) => m.insert("result".into(), v.clone()),
                    Err(e) => m.insert("error".into(), serde_json::to_value(e).unwrap_or_default()),
                };
            }
        }
        Value::Object(m)
    }

    /// One line of JSON, no embedded newlines (serde_json escapes them in strings).
    /// The message as one line of JSON: the same text as `to_value().to_string()`, written
    /// straight from the borrowed parts. Going through `to_value` deep-copied the params or
    /// result first, the largest cost of sending a big tool call (bench/report.py, "What
    /// dominates").
    pub fn to_json(&self) -> String {
        /// The fields in `to_value`'s order; absent ones are left out.
        #[derive(Serialize)]
        struct Wire<'a> {
            jsonrpc: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a RequestId>,
            #[serde(skip_serializing_if = "Option::is_none")]
            method: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a RpcError>,
        }
        let mut wire = Wire {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        };
        match self {
            Message::Request(r) => {
                wire.id = Some(&r.id);
                wire.method = Some(&r.method);
                wire.params = r.params.as_ref();
            }
            Message::Notification(n) => {
                wire.method = Some(&n.method);
                wire.params = n.params.as_ref();
            }
            Message::Response(r) => {
                wire.id = Some(&r.id);
                match &r.outcome {
                    Ok(v) => wire.result = Some(v),
                    Err(e) => wire.error = Some(e),
                }
            }
        }
        // Serializing borrowed JSON values and derived structs into a String cannot fail.
        serde_json::to_string(&wire).unwrap_or_else(|_| self.to_value().to_string())
    }

    pub fn from_value(v: Value) -> Result<Message, ParseError> {
        let Value::Object(mut m) = v else {
            return Err(ParseError(
                "a JSON-RPC message must be a JSON object".into(),
            ));
        };
        if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(ParseError("the message lacks \"jsonrpc\": \"2.0\"".into()));
        }
        let id = match m.remove("id") {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value::<RequestId>(v).map_err(|_| {
                ParseError("the message id is neither a string nor an integer".into())
            })?),
        };
        let params = m.remove("params");
        if let Some(method) = m.remove("method") {
            let Value::String(method) = method else {
                return Err(ParseError(
                    "the message's \"method\" is not a string".into(),
                ));
            };
            return Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            });
        }
        let Some(id) = id else {
            return Err(ParseError(
                "the message has neither a method nor an id".into(),
            ));
        };
        let outcome = match (m.remove("result"), m.remove("error")) {
            (Some(r), None) => Ok(r),
            (None, Some(e)) => Err(serde_json::from_value::<RpcError>(e).map_err(|_| {
                ParseError("the response's \"error\" is not a JSON-RPC error object".into())
            })?),
            _ => {
                return Err(ParseError(
                    "a response must have exactly one of \"result\" and \"error\"".into(),
                ));
            }
        };
        Ok(Message::Response(Response { id, outcome }))
    }

    /// Parses one message or a batch (servers of the 2025-03-26 revision may batch).
    pub fn parse_many(bytes: &[u8]) -> Result<Vec<Message>, ParseError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| {
            ParseError(format!(
                "not JSON ({} at line {}, column {})",
                describe(&e),
                e.line(),
                e.column()
            ))
        })?;
        match v {
            Value::Array(items) => items.into_iter().map(Message::from_value).collect(),
            v => Ok(vec![Message::from_value(v)?]),
        }
    }
}

fn describe(e: &serde_json::Error) -> &'static str {
    use serde_json::error::Category;
    match e.classify() {
        Category::Io => "read error",
        Category::Syntax => "syntax error",
        Category::Data => "unexpected data",
        Category::Eof => "unexpected end",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(input: Value, expect: Result<Message, &str>) {
        let got = Message::from_value(input.clone());
        match (got, expect) {
            (Ok(g), Ok(e)) => assert_eq!(g, e, "{input}"),
            (Err(g), Err(e)) => assert!(g.0.contains(e), "{input}: {g} lacks {e}"),
            (g, e) => panic!("{input}: got {g:?}, expected {e:?}"),
        }
    }

    #[test]
    fn parses_every_shape() {
        check(
            json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
            Ok(Message::request(RequestId::Number(1), "ping", None)),
        );
        check(
            json!({"jsonrpc":"2.0","id":"a","method":"roots/list","params":{}}),
            Ok(Message::request(
                RequestId::String("a".into()),
                "roots/list",
                Some(json!({})),
            )),
        );
        check(
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}),
            Ok(Message::notification(
                "notifications/progress",
                Some(json!({"progress":1})),
            )),
        );
        check(
            json!({"jsonrpc":"2.0","id":7,"result":{}}),
            Ok(Message::Response(Response {
                id: RequestId::Number(7),
                outcome: Ok(json!({})),
            })),
        );
        check(
            json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}),
            Ok(Message::Response(Response {
                id: RequestId::Number(7),
                outcome: Err(RpcError {
                    code: -32601,
                    message: "nope".into(),
                    data: None,
                }),
            })),
        );
        check(json!([1]), Err("JSON object"));
        check(json!({"id":1,"method":"x"}), Err("jsonrpc"));
        check(json!({"jsonrpc":"2.0","id":1}), Err("exactly one"));
        check(
            json!({"jsonrpc":"2.0","result":1}),
            Err("neither a method nor an id"),
        );
        check(
            json!({"jsonrpc":"2.0","id":1.5,"result":1}),
            Err("neither a string nor an integer"),
        );
        check(
            json!({"jsonrpc":"2.0","id":1,"error":"bad"}),
            Err("not a JSON-RPC error object"),
        );
    }

    #[test]
    fn round_trips_through_json() {
        let m = Message::request(
            RequestId::Number(3),
            "tools/call",
            Some(json!({"name":"a\nb"})),
        );
        let line = m.to_json();
        assert!(!line.contains('\n'));
        assert_eq!(Message::parse_many(line.as_bytes()).unwrap(), vec![m]);
    }

    #[test]
    fn the_json_line_is_the_text_of_the_value() {
        let check = |m: Message| assert_eq!(m.to_json(), m.to_value().to_string(), "{m:?}");
        let params =
            json!({"name": "echo", "arguments": {"text": "a\"b\u{1}", "n": [1, 2.5, null]}});
        check(Message::request(
            RequestId::Number(3),
            "tools/call",
            Some(params.clone()),
        ));
        check(Message::request(
            RequestId::String("x".into()),
            "ping",
            None,
        ));
        check(Message::notification("notifications/initialized", None));
        check(Message::notification(
            "notifications/progress",
            Some(params.clone()),
        ));
        check(Message::Response(Response {
            id: RequestId::Number(7),
            outcome: Ok(params),
        }));
        check(Message::Response(Response {
            id: RequestId::Number(8),
            outcome: Err(RpcError {
                code: -32601,
                message: "no such method".into(),
                data: Some(json!({"method": "x"})),
            }),
        }));
    }

    #[test]
    fn garbage_is_a_parse_error_that_does_not_quote_the_input() {
        let err = Message::parse_many(b"hello SECRET").unwrap_err();
        assert!(!err.0.contains("SECRET"));
        assert!(err.0.starts_with("not JSON"));
    }
}
