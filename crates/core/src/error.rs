//! The one error type that leaves the core: a kind a program can branch on, the context a
//! person needs (HTTP status, Retry-After, method, URL path, exit status, stage), and a
//! sentence that says what happened and what to do. Errors never carry header values, query
//! strings or environment values; the transports build them from allow-listed parts only.

use crate::redact::Redactor;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What kind of failure this is. The set is closed per release and named in the CLI's JSON
/// output, the events and the UI, so the spelling (`as_str`) is part of the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ErrorKind {
    /// 401: the credentials are missing or wrong. Waiting does not fix it.
    Auth,
    /// A server that uses OAuth and has no usable token (none yet, or its refresh token was
    /// refused): a person must sign in. Distinct from `Auth`, a wrong static credential.
    SignIn,
    /// 403: the credentials are valid but not allowed to do this.
    Permission,
    /// 429, or a server that asked for time with Retry-After.
    RateLimited,
    /// 5xx, or a JSON-RPC error the server reported for its own failure.
    Server,
    /// The peer broke the protocol: garbage, an oversized line, an unsupported version,
    /// an unexpected status or content type.
    Protocol,
    /// A deadline passed: request timeout, SSE idle read, the resumption budget.
    Timeout,
    /// The connection itself: refused, reset, DNS, TLS, I/O.
    Transport,
    /// The server forgot the session (404 to a request that carried `Mcp-Session-Id`).
    SessionExpired,
    /// A response stream ended and could not be resumed; the request was not retried.
    StreamLost,
    /// The stdio server process exited.
    ProcessExit,
    /// The stdio server could not be started (command not found, not executable, bad cwd).
    Spawn,
    /// The configuration or the command line is invalid.
    Config,
    /// The caller cancelled the request, or the connection was closed on purpose.
    Cancelled,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::SignIn => "sign_in",
            ErrorKind::Permission => "permission",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Transport => "transport",
            ErrorKind::SessionExpired => "session_expired",
            ErrorKind::StreamLost => "stream_lost",
            ErrorKind::ProcessExit => "process_exit",
            ErrorKind::Spawn => "spawn",
            ErrorKind::Config => "config",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the failure happened while establishing the connection or while using it. The
/// same HTTP status means different things in each (DESIGN.md, the connect/call table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "snake_case"))]
pub enum Phase {
    Connect,
    Call,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Connect => "connect",
            Phase::Call => "call",
        }
    }
}

/// The establishment stage an error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "snake_case"))]
pub enum Stage {
    Spawn,
    Connect,
    Discover,
    Initialize,
    ListTools,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Spawn => "spawn",
            Stage::Connect => "connect",
            Stage::Discover => "discover",
            Stage::Initialize => "initialize",
            Stage::ListTools => "list_tools",
        }
    }
}

/// The lowest-level cause of a transport failure, found by walking the source chain
/// (reqwest's `is_connect`, `io::Error` kinds, hyper's errors), never by parsing messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    Connect,
    Dns,
    Tls,
    Timeout,
    Io,
    Decode,
}

impl IoKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IoKind::Connect => "connect",
            IoKind::Dns => "dns",
            IoKind::Tls => "tls",
            IoKind::Timeout => "timeout",
            IoKind::Io => "io",
            IoKind::Decode => "decode",
        }
    }
}

/// How a stdio server process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitStatus::Code(c) => write!(f, "exit code {c}"),
            ExitStatus::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

/// A server's JSON-RPC error `data`. Its Debug prints no content: the data may hold
/// anything the server put there.
#[derive(Clone, PartialEq, Eq)]
pub struct RpcData(pub serde_json::Value);

impl fmt::Debug for RpcData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<rpc data>")
    }
}

/// Allow-listed context of a failure. Every field is safe to show and to export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub phase: Option<Phase>,
    pub stage: Option<Stage>,
    /// HTTP status code.
    pub status: Option<u16>,
    /// HTTP reason phrase for `status` ("Too Many Requests").
    pub reason: Option<String>,
    /// Retry-After, or an SSE `retry:` the server asked for, already resolved to a delay.
    pub retry_after: Option<Duration>,
    /// HTTP method, or the JSON-RPC method for stdio.
    pub method: Option<String>,
    /// The URL path only: no scheme, host, userinfo or query.
    pub url_path: Option<String>,
    pub io: Option<IoKind>,
    pub exit: Option<ExitStatus>,
    /// JSON-RPC error code when the server answered with an error object.
    pub rpc_code: Option<i64>,
    /// JSON-RPC error `data` the server sent with `rpc_code`. Not allow-listed: it is never
    /// put in an event or a bundle (`FailureInfo` leaves it out); the gateway passes it to
    /// its host, scrubbed with the server's secrets, as a direct connection would.
    pub rpc_data: Option<RpcData>,
    /// The revisions a stateless-revision server listed when it refused ours (error -32022), only
    /// revision-shaped strings.
    pub supported_versions: Option<Vec<String>>,
}

/// A failure that leaves the core. Display is the sentence for a person; Debug shows the
/// same allow-listed fields and nothing else, so neither can leak a secret.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    context: Box<Context>,
    /// Set when the transport refused the request because it had already closed.
    transport_closed: bool,
    /// Set when the server refused the request without running it (a 404 to its session).
    refused_unrun: bool,
    /// Set when the machine went to sleep while the request was in flight (`Error::slept`).
    slept: bool,
    /// What caused this failure, if another error did: classification walks it
    /// (`policy::classify`); Display and Debug never show it, since it may hold secrets.
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// The message goes through the redactor's configuration-free rules (token shapes,
    /// URLs, secret-named arguments) here, once, so Display, Debug, events and the bundle
    /// all show the scrubbed sentence; callers still scrub configured secrets first.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: Redactor::default().scrub(&message.into()),
            context: Box::default(),
            transport_closed: false,
            refused_unrun: false,
            slept: false,
            source: None,
        }
    }

    /// Records what caused this failure, so that `std::error::Error::source` (and
    /// classification, which walks the chain) can see it. The source is never displayed.
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    pub fn context_mut(&mut self) -> &mut Context {
        &mut self.context
    }

    /// True when a request was refused at once because its connection had already ended.
    pub fn is_transport_closed(&self) -> bool {
        self.transport_closed
    }

    /// Marks a request's own failure as the server's refusal of it, unrun: its session
    /// was gone (HTTP 404 to the session id), so nothing of it happened.
    pub fn refused_unrun(mut self) -> Self {
        self.refused_unrun = true;
        self
    }

    /// True when the request certainly did not run: refused because the connection had
    /// closed (`is_transport_closed`) or refused by the server unrun (`refused_unrun`).
    /// Sending it on a new connection is not a repetition.
    pub fn never_ran(&self) -> bool {
        self.transport_closed || self.refused_unrun
    }

    /// A request that was in flight when the machine went to sleep: it may or may not have
    /// run, its answer will not come, and the connection is not to blame.
    pub fn slept(method: &str) -> Self {
        let mut e = Error::new(
            ErrorKind::Cancelled,
            format!(
                "the machine went to sleep while {method} was in flight; it may or may not have \
                 run, and it was not sent again: check its effect before you try again"
            ),
        )
        .with(|c| c.method = Some(method.to_owned()));
        e.slept = true;
        e
    }

    /// Whether the machine's sleep ended this request (`Error::slept`).
    pub fn by_sleep(&self) -> bool {
        self.slept
    }

    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }

    pub fn with(mut self, edit: impl FnOnce(&mut Context)) -> Self {
        edit(&mut self.context);
        self
    }

    /// Stamps the phase and stage unless an inner layer already knew better.
    pub fn in_stage(mut self, phase: Phase, stage: Option<Stage>) -> Self {
        self.context.phase.get_or_insert(phase);
        if self.context.stage.is_none() {
            self.context.stage = stage;
        }
        self
    }

    /// The same failure in other words (a fuller sentence): kind and context kept, this
    /// error recorded as the cause.
    pub fn restated(self, message: impl Into<String>) -> Self {
        let context = self.context().clone();
        Error::new(self.kind, message)
            .with(|c| *c = context)
            .caused_by(self)
    }

    /// The error a closed transport gives every later request: same kind and context as
    /// the cause, so callers still see why, flagged as refused-because-closed.
    pub fn closed_because(cause: &Error) -> Self {
        let mut e = cause.clone();
        e.transport_closed = true;
        e.message = format!(
            "the connection is closed, so the request was not sent: {}",
            cause.message
        );
        e
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Protocol, message)
    }

    pub fn transport(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transport, message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Timeout, message)
    }

    pub fn config(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Config, message)
    }

    pub fn cancelled(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Cancelled, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind)
            .field("message", &self.message)
            .field("context", &self.context)
            .field("transport_closed", &self.transport_closed)
            .field("slept", &self.slept)
            .field("refused_unrun", &self.refused_unrun);
        if let Some(source) = self.source.as_deref() {
            d.field("source", &SourceKind(source));
        }
        d.finish()
    }
}

/// Debug for a source names only its kind when it is one of ours, else `<source>`: its own
/// Debug could print a URL, a header or a body.
struct SourceKind<'a>(&'a (dyn std::error::Error + Send + Sync + 'static));

impl fmt::Debug for SourceKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.downcast_ref::<Error>() {
            Some(e) => write!(f, "{}", e.kind),
            None => f.write_str("<source>"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Walks a source chain for the most specific transport cause. Order matters: a TLS
/// failure is also an I/O failure, a DNS failure is also a connect failure.
pub fn io_kind_of(err: &(dyn std::error::Error + 'static)) -> IoKind {
    let mut kind = IoKind::Io;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            if r.is_timeout() {
                return IoKind::Timeout;
            }
            if r.is_decode() || r.is_body() && kind == IoKind::Io {
                kind = IoKind::Decode;
            }
            if r.is_connect() {
                kind = IoKind::Connect;
            }
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::TimedOut => return IoKind::Timeout,
                K::ConnectionRefused
                | K::AddrNotAvailable
                | K::HostUnreachable
                | K::NetworkUnreachable => kind = IoKind::Connect,
                _ => {}
            }
            // An io::Error's `source()` skips the error it wraps (often another io::Error
            // around a rustls::Error); walk into the wrapped one instead.
            if let Some(inner) = io.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return IoKind::Tls;
        }
        // hyper-util's resolver wraps getaddrinfo failures in a type named for DNS; the
        // type is private, so its Debug name is the only stable handle on it.
        if format!("{e:?}").starts_with("ConnectError(\"dns error\"") {
            return IoKind::Dns;
        }
        cur = e.source();
    }
    kind
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn check(err: &(dyn std::error::Error + 'static), expect: IoKind) {
        assert_eq!(io_kind_of(err), expect, "{err:?}");
    }

    #[test]
    fn the_chain_is_walked_through_wrapped_io_errors() {
        let tls = rustls::Error::General("bad record".into());
        let nested = io::Error::other(io::Error::new(io::ErrorKind::InvalidData, tls));
        check(&nested, IoKind::Tls);
        check(
            &io::Error::from(io::ErrorKind::ConnectionRefused),
            IoKind::Connect,
        );
        check(
            &io::Error::other(io::Error::from(io::ErrorKind::TimedOut)),
            IoKind::Timeout,
        );
        check(&io::Error::from(io::ErrorKind::BrokenPipe), IoKind::Io);
    }

    #[test]
    fn display_and_debug_show_only_the_allow_listed_fields() {
        let e = Error::new(ErrorKind::RateLimited, "slow down").with(|c| {
            c.status = Some(429);
            c.retry_after = Some(Duration::from_secs(2));
        });
        assert_eq!(e.to_string(), "slow down");
        let debug = format!("{e:?}");
        assert!(
            debug.contains("RateLimited") && debug.contains("429"),
            "{debug}"
        );
        let closed = Error::closed_because(&e);
        assert!(closed.is_transport_closed());
        assert_eq!(closed.kind(), ErrorKind::RateLimited);
        assert!(closed.message().ends_with("slow down"));
    }

    #[test]
    fn a_source_is_walkable_but_never_printed() {
        use std::error::Error as _;
        let canary = io::Error::other("Bearer CANARY_SRC_7f3a");
        let e = Error::transport("could not connect").caused_by(canary);
        let source = e.source().expect("a source");
        assert!(source.downcast_ref::<io::Error>().is_some());
        let outer = Error::new(ErrorKind::Server, "failed").caused_by(e.clone());
        assert_eq!(
            outer
                .source()
                .and_then(|s| s.downcast_ref::<Error>())
                .map(Error::kind),
            Some(ErrorKind::Transport)
        );
        for shown in [
            format!("{e:?}"),
            format!("{e}"),
            format!("{outer:?}"),
            format!("{outer}"),
        ] {
            assert!(!shown.contains("CANARY"), "{shown}");
        }
        assert!(format!("{e:?}").contains("source: <source>"), "{e:?}");
        assert!(
            format!("{outer:?}").contains("source: transport"),
            "{outer:?}"
        );
        assert!(Error::timeout("t").source().is_none());
        assert!(!format!("{:?}", Error::timeout("t")).contains("source"));
    }
}
