//! The fault script: everything a fixture run does differently from a healthy MCP server.
//!
//! Every field has a default, so `{}` is a healthy server; unknown keys are rejected so a typo
//! in a test's script fails loudly instead of silently testing the healthy path. The format is
//! documented for test authors in `tests/FIXTURE.md`.

use serde::Deserialize;
use serde_json::Value;

/// 17 MiB: one byte past a 16 MiB line cap, the usual client limit under test.
const DEFAULT_OVERSIZED_BYTES: usize = 17 * 1024 * 1024;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Answer `initialize` with this protocolVersion whatever the client asked for.
    pub protocol_version: Option<String>,
    /// `tools/list` page size; `None` lists every tool in one page.
    pub page_size: Option<usize>,
    /// Extra tools after the fixed ones, `tool_001`…, each echoing `text` like `echo`.
    pub extra_tools: usize,
    /// List the tools of the official conformance suite's server scenarios that the fixture
    /// has (`test_reconnection`), after the extra tools.
    pub conformance_tools: bool,
    /// A tool whose description changes once the fixture has answered so many calls (a
    /// "rug pull", for the trust tests).
    pub redescribe: Option<Redescribe>,
    /// Delay before answering any request.
    pub delay_ms: u64,
    /// Text written to stderr once at startup.
    pub stderr: Option<String>,
    /// Install a SIGTERM handler that only logs, so shutdown must escalate to SIGKILL.
    pub ignore_sigterm: bool,
    /// Spawn `sleep N` at startup in the fixture's process group, inheriting its stdio.
    pub grandchild_sleep_s: Option<u64>,
    /// What the stdio transport does when stdin reaches end of file.
    pub on_stdin_eof: StdinEof,
    /// Faults matched against each request, in order.
    pub rules: Vec<Rule>,
    pub http: HttpScript,
    /// `stateless` mode only: the 2026-07-28 stateless revision.
    pub stateless: StatelessScript,
}

/// `redescribe`: from the `after_calls`-th `tools/call` on (of this process), `tools/list`
/// gives `tool` this `description` instead of its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redescribe {
    pub tool: String,
    pub after_calls: u64,
    pub description: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdinEof {
    #[default]
    Exit,
    /// Keep running until killed (with `ignore_sigterm`, only SIGKILL ends the fixture).
    Stay,
}

/// One fault: which requests it matches, and what happens instead of a normal answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// JSON-RPC method; `None` matches every request.
    #[serde(default)]
    pub method: Option<String>,
    /// For `tools/call`: the tool name; `None` matches every tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// Fire only on the Nth (1-based) request this rule matches; `None` fires on all of them.
    #[serde(default)]
    pub nth: Option<u64>,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Exit the process with `code` before answering.
    Crash {
        #[serde(default = "default_crash_code")]
        code: i32,
    },
    /// Log the request and never answer it.
    NeverAnswer,
    /// Wait, then answer normally.
    Delay { ms: u64 },
    /// Answer with a JSON-RPC error.
    RpcError {
        code: i64,
        message: String,
        #[serde(default)]
        data: Option<Value>,
    },
    /// HTTP only: answer the POST with this status instead of a JSON-RPC answer.
    HttpStatus(HttpStatus),
    /// stdio: write `text` as a line; HTTP: a 200 `application/json` body of `text`.
    Garbage {
        #[serde(default = "default_garbage")]
        text: String,
        /// stdio only: also answer normally after the garbage line.
        #[serde(default)]
        then_answer: bool,
    },
    /// A syntactically valid JSON-RPC notification padded to exactly `bytes` bytes.
    Oversized {
        #[serde(default = "default_oversized_bytes")]
        bytes: usize,
        /// stdio only: also answer normally after the oversized line.
        #[serde(default)]
        then_answer: bool,
    },
    /// HTTP only: the normal JSON answer under another `Content-Type`.
    WrongContentType {
        #[serde(default = "default_wrong_content_type")]
        content_type: String,
    },
    /// HTTP only: answer as SSE, send the priming event, close gracefully without the result.
    SseClose(SseClose),
    /// `stateless` mode only: answer as SSE, forward the first `after` messages of the answer
    /// (progress), then end the stream without the result: gracefully, or with `abort` by
    /// failing the connection mid-body.
    StreamBreak {
        #[serde(default = "default_stream_break_after")]
        after: usize,
        #[serde(default)]
        abort: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpStatus {
    pub status: u16,
    /// Sent verbatim: delay-seconds, an HTTP-date, or deliberate nonsense.
    #[serde(default)]
    pub retry_after: Option<String>,
    #[serde(default)]
    pub www_authenticate: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
    /// Defaults to `application/json` when `body` parses as JSON, else `text/plain`.
    #[serde(default)]
    pub content_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SseClose {
    /// How long the stream stays open after the priming event.
    #[serde(default)]
    pub after_ms: u64,
    /// The priming event's `retry:` field, verbatim; `None` falls back to `http.sse.retry`.
    #[serde(default)]
    pub retry: Option<String>,
    /// What successive resume GETs (with `Last-Event-ID`) get; the last entry repeats.
    #[serde(default = "default_resume")]
    pub resume: Vec<Resume>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// Priming event, then the pending messages and result, then a graceful close.
    Deliver,
    #[serde(rename = "404")]
    NotFound,
    /// Priming event (with retry), then a graceful close after `after_ms`, without the result.
    Close,
    /// Accept the request and never send response headers.
    Hang,
}

impl Resume {
    /// The script's spelling, for the log.
    pub fn name(self) -> &'static str {
        match self {
            Resume::Deliver => "deliver",
            Resume::NotFound => "404",
            Resume::Close => "close",
            Resume::Hang => "hang",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpScript {
    /// How POSTed requests are answered when nothing forces SSE.
    pub response: ResponseMode,
    /// Issue `Mcp-Session-Id` on initialize and enforce it afterwards.
    pub sessions: bool,
    /// Forget the session after this many JSON-RPC requests (initialize included).
    pub session_expires_after: Option<u64>,
    /// The standalone GET (one without a known `Last-Event-ID`).
    pub get: GetMode,
    pub delete: DeleteMode,
    pub sse: SseScript,
    /// `sse` mode only: the `endpoint` event's data verbatim, instead of
    /// `/messages?sessionId=N` (for example a URL on another origin).
    pub legacy_endpoint: Option<String>,
    /// `sse` mode only: answer each request in its POST's body (200 `application/json`)
    /// instead of on the stream, as some legacy servers do.
    pub legacy_answer_in_body: bool,
}

impl Default for HttpScript {
    fn default() -> Self {
        HttpScript {
            response: ResponseMode::Json,
            sessions: true,
            session_expires_after: None,
            get: GetMode::MethodNotAllowed,
            delete: DeleteMode::Ok,
            sse: SseScript::default(),
            legacy_endpoint: None,
            legacy_answer_in_body: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// `application/json`, unless the answer sends messages before its result.
    #[default]
    Json,
    Sse,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum GetMode {
    #[default]
    #[serde(rename = "405")]
    MethodNotAllowed,
    #[serde(rename = "404")]
    NotFound,
    /// An SSE stream that stays open, carrying only the priming event and keepalives.
    #[serde(rename = "sse")]
    Sse,
    #[serde(rename = "hang")]
    Hang,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum DeleteMode {
    #[default]
    #[serde(rename = "200")]
    Ok,
    #[serde(rename = "405")]
    MethodNotAllowed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SseScript {
    /// Start every SSE stream with an `id:` and empty `data:` event.
    pub priming: bool,
    /// `retry:` on priming events, verbatim.
    pub retry: Option<String>,
    /// Send a comment line this often while a stream waits.
    pub keepalive_ms: Option<u64>,
    pub keepalive_comment: String,
    /// End SSE lines with CRLF instead of LF.
    pub crlf: bool,
}

impl Default for SseScript {
    fn default() -> Self {
        SseScript {
            priming: true,
            retry: None,
            keepalive_ms: None,
            keepalive_comment: "keepalive".to_owned(),
            crlf: false,
        }
    }
}

/// What `lifeline-fixture stateless` does differently from a healthy 2026-07-28 server.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatelessScript {
    /// Versions accepted in `MCP-Protocol-Version` and listed by `server/discover` (a lying
    /// server lists only versions the client does not speak: `["2027-01-01"]`).
    pub supported_versions: Vec<String>,
    /// `server/discover` answers this result verbatim instead of a DiscoverResult (`{}`: a
    /// legacy server that answers any method).
    pub discover_result: Option<Value>,
    /// How an `initialize` request is served.
    pub initialize: InitializeMode,
    /// Reject a request whose `_meta` lacks `io.modelcontextprotocol/clientInfo` (the spec
    /// only says SHOULD; the fixture insists so a test sees the client send it).
    pub require_client_info: bool,
    /// Also list `bad_header`, whose `x-mcp-header` is invalid (a client must drop it).
    pub invalid_header_tool: bool,
    /// Keep-alive comment period on `subscriptions/listen` streams.
    pub listen_keepalive_ms: u64,
    /// Send `notifications/tools/list_changed` on every listen stream this long after it
    /// opened (one notification per entry).
    pub list_changed_after_ms: Vec<u64>,
    /// End every listen stream this long after it opened, the `listen_end` way.
    pub listen_end_after_ms: Option<u64>,
    pub listen_end: ListenEnd,
    /// A lying server: `server/discover` lists the stateless revision, but every other
    /// stateless request is refused the way an `initialize`-era server refuses it (400, a
    /// -32000 "no session" error). With `initialize: "legacy"`, it works the old way.
    pub stateless_only_discover: bool,
}

/// How the server ends a listen stream on its own initiative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenEnd {
    /// The `subscriptions/listen` completion result, then a graceful close.
    #[default]
    Result,
    /// `notifications/cancelled` naming the listen request, then a graceful close.
    Cancelled,
    /// A graceful close with neither: an unexpected disconnect.
    Close,
    /// The connection fails mid-body.
    Abort,
}

impl Default for StatelessScript {
    fn default() -> Self {
        StatelessScript {
            supported_versions: vec!["2026-07-28".to_owned()],
            discover_result: None,
            initialize: InitializeMode::Refuse,
            require_client_info: true,
            invalid_header_tool: false,
            listen_keepalive_ms: 5000,
            list_changed_after_ms: Vec::new(),
            listen_end_after_ms: None,
            listen_end: ListenEnd::Result,
            stateless_only_discover: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitializeMode {
    /// A stateless-only server: 404 with -32601, naming the supported versions.
    #[default]
    Refuse,
    /// A dual-revision server: `initialize`, and every request carrying `Mcp-Session-Id`, is
    /// served as the `http` mode serves it (2025-11-25 with sessions).
    Serve,
}

impl Script {
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }
}

fn default_crash_code() -> i32 {
    1
}

fn default_garbage() -> String {
    "this is not json".to_owned()
}

fn default_oversized_bytes() -> usize {
    DEFAULT_OVERSIZED_BYTES
}

fn default_wrong_content_type() -> String {
    "text/html".to_owned()
}

fn default_stream_break_after() -> usize {
    1
}

fn default_resume() -> Vec<Resume> {
    vec![Resume::Deliver]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Ok(debug of the rules' actions)` or `Err(())` when the script is rejected.
    fn check(text: &str, expect: Result<&str, ()>) {
        let got = Script::from_json(text).map(|s| {
            let actions: Vec<_> = s.rules.iter().map(|r| format!("{:?}", r.action)).collect();
            actions.join("; ")
        });
        match (&got, expect) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "script {text}"),
            (Err(_), Err(())) => {}
            _ => panic!("script {text}: got {got:?}, want {expect:?}"),
        }
    }

    #[test]
    fn scripts() {
        check("{}", Ok(""));
        check(r#"{"extra_tools": 15}"#, Ok(""));
        check(r#"{"conformance_tools": true}"#, Ok(""));
        check(
            r#"{"redescribe": {"tool": "echo", "after_calls": 1, "description": "x"}}"#,
            Ok(""),
        );
        check(r#"{"redescribe": {"tool": "echo"}}"#, Err(()));
        check(r#"{"extra_tools": -1}"#, Err(()));
        check(r#"{"nope": 1}"#, Err(()));
        check(r#"{"http": {"sse": {"crlf": true, "nope": 1}}}"#, Err(()));
        check(
            r#"{"rules":[{"action":{"kind":"crash"}}]}"#,
            Ok("Crash { code: 1 }"),
        );
        check(
            r#"{"rules":[{"method":"initialize","action":{"kind":"crash","code":7}}]}"#,
            Ok("Crash { code: 7 }"),
        );
        check(
            r#"{"rules":[{"action":{"kind":"crash","cod":7}}]}"#,
            Err(()),
        );
        check(r#"{"rules":[{"action":{"kind":"explode"}}]}"#, Err(()));
        check(
            r#"{"rules":[{"action":{"kind":"http_status","status":429,"retry_after":"2"}}]}"#,
            Ok(
                "HttpStatus(HttpStatus { status: 429, retry_after: Some(\"2\"), \
                www_authenticate: None, body: None, content_type: None })",
            ),
        );
        check(
            r#"{"rules":[{"action":{"kind":"http_status","status":429,"x":1}}]}"#,
            Err(()),
        );
        check(
            r#"{"rules":[{"action":{"kind":"sse_close","resume":["close","404","hang"]}}]}"#,
            Ok("SseClose(SseClose { after_ms: 0, retry: None, resume: [Close, NotFound, Hang] })"),
        );
        check(
            r#"{"rules":[{"action":{"kind":"stream_break"}}]}"#,
            Ok("StreamBreak { after: 1, abort: false }"),
        );
        check(
            r#"{"rules":[{"action":{"kind":"stream_break","after":0,"abort":true}}]}"#,
            Ok("StreamBreak { after: 0, abort: true }"),
        );
        check(r#"{"stateless": {"initialize": "maybe"}}"#, Err(()));
        check(r#"{"stateless": {"listen_end": "abort"}}"#, Ok(""));
        check(
            r#"{"stateless": {"supported_versions": ["2027-01-01"]}}"#,
            Ok(""),
        );
        check(
            r#"{"rules":[{"action":{"kind":"oversized"}}]}"#,
            Ok("Oversized { bytes: 17825792, then_answer: false }"),
        );
    }

    #[test]
    fn http_defaults_are_a_healthy_server() {
        let s = Script::from_json(r#"{"http": {"get": "sse"}}"#).unwrap();
        assert!(s.http.sessions);
        assert!(s.http.sse.priming);
        assert_eq!(s.http.get, GetMode::Sse);
        assert_eq!(s.http.delete, DeleteMode::Ok);
        assert_eq!(s.http.response, ResponseMode::Json);
    }
}
