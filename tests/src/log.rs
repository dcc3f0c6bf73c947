//! The fixture's observation log: one JSON object per line, written and flushed as it happens.
//!
//! Integration tests read this file to see what the client under test actually sent and when
//! (`t_ms` counts from fixture start), so every entry is written with a single `write_all` on an
//! unbuffered file: a test reading concurrently never sees half a line from a finished entry.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use hyper::HeaderMap;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

#[derive(Debug)]
pub struct Log {
    file: Option<Mutex<File>>,
    start: Instant,
}

/// What arrived: an HTTP request (with its JSON-RPC body, if any) or one stdio line.
#[derive(Debug, Default)]
pub struct Received<'a> {
    pub transport: &'static str,
    pub http_method: Option<&'a str>,
    pub path: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub protocol_version_header: Option<&'a str>,
    pub last_event_id: Option<&'a str>,
    pub accept: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub authorization_present: bool,
    /// The HTTP request's headers, for the 2026-07-28 metadata headers (`Mcp-Method`,
    /// `Mcp-Name`, `Mcp-Param-*`), logged as sent.
    pub headers: Option<&'a HeaderMap>,
    pub message: Option<&'a Value>,
    /// A body or line arrived but was not JSON.
    pub unparsable: bool,
}

impl<'a> Received<'a> {
    /// An HTTP request as received: its head, and the body's message (`None` when the body
    /// was not JSON). `session_id` is the header's unless the mode says otherwise.
    pub fn http(
        transport: &'static str,
        parts: &'a hyper::http::request::Parts,
        body: &[u8],
        message: Option<&'a Value>,
    ) -> Received<'a> {
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        Received {
            transport,
            http_method: Some(parts.method.as_str()),
            path: Some(parts.uri.path()),
            session_id: header("mcp-session-id"),
            protocol_version_header: header("mcp-protocol-version"),
            last_event_id: header("last-event-id"),
            accept: header("accept"),
            content_type: header("content-type"),
            authorization_present: parts.headers.contains_key("authorization"),
            headers: Some(&parts.headers),
            message,
            unparsable: message.is_none() && !body.is_empty(),
        }
    }
}

impl Log {
    /// `None` logs nothing; otherwise appends to `path`, creating it.
    pub fn open(path: Option<&Path>) -> io::Result<Log> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Log {
            file,
            start: Instant::now(),
        })
    }

    pub fn t_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Logs `{"t_ms", "event": name, ..fields}`; `fields` must be a JSON object.
    pub fn event(&self, name: &str, fields: Value) {
        let mut entry = Map::new();
        entry.insert("t_ms".into(), self.t_ms().into());
        entry.insert("event".into(), name.into());
        if let Value::Object(fields) = fields {
            entry.extend(fields);
        }
        self.write(&Value::Object(entry));
    }

    pub fn received(&self, r: &Received<'_>) {
        let message = r.message.unwrap_or(&Value::Null);
        let kind = match r.message {
            Some(message) => Some(crate::mcp::kind_name(message)),
            None => r.unparsable.then_some("unparsable"),
        };
        let header = |name: &str| {
            r.headers
                .and_then(|h| h.get(name))
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let params: Map<String, Value> = r
            .headers
            .into_iter()
            .flat_map(HeaderMap::iter)
            .filter_map(|(name, value)| {
                let suffix = name.as_str().strip_prefix("mcp-param-")?;
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                Some((suffix.to_owned(), Value::String(value)))
            })
            .collect();
        self.event(
            "received",
            json!({
                "transport": r.transport,
                "http_method": r.http_method,
                "path": r.path,
                "session_id": r.session_id,
                "protocol_version_header": r.protocol_version_header,
                "last_event_id": r.last_event_id,
                "accept": r.accept,
                "content_type": r.content_type,
                "authorization_present": r.authorization_present,
                "mcp_method": header("mcp-method"),
                "mcp_name": header("mcp-name"),
                "mcp_params": params,
                "kind": kind,
                "rpc_method": message.get("method"),
                "rpc_id": message.get("id"),
                "params": message.get("params"),
                "result": message.get("result"),
                "error": message.get("error"),
            }),
        );
    }

    fn write(&self, entry: &Value) {
        let Some(file) = &self.file else { return };
        let mut line = entry.to_string();
        line.push('\n');
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        // A fixture that cannot log is still a useful peer; the test will notice the gap.
        let _ = file.write_all(line.as_bytes());
    }
}
