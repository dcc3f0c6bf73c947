//! Transports move JSON-RPC messages to and from one server and report typed errors. They
//! never sleep on their own policy and never decide to reconnect: the only waits here are
//! the ones a peer or the spec imposes (SSE `retry:`, the stdio shutdown sequence).

pub mod child_env;
pub mod http;
pub mod memory;
pub mod resolve;
pub mod runs;
mod spawn;
pub mod sse;
pub mod stdio;
mod tree;

use crate::error::{Error, Result};
use crate::protocol::revision::Revision;
use crate::protocol::{Message, RequestId};
use crate::redact::Redactor;
use tokio::sync::mpsc;

/// What a transport hands its session.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// The answer to this request cannot arrive (its POST failed, or its response stream
    /// was lost and could not be resumed).
    RequestFailed {
        id: RequestId,
        error: Error,
    },
    /// The transport ended; every pending request fails with this cause and the transport
    /// refuses every later send.
    Closed(Error),
}

/// Capacity of the channel from a transport to its session: enough to absorb a burst of
/// notifications without letting a flooding server grow memory without bound.
pub(crate) const INCOMING_CAPACITY: usize = 256;

pub enum Transport {
    Stdio(stdio::StdioTransport),
    Http(http::HttpTransport),
    /// The legacy HTTP+SSE transport (2024-11-05).
    LegacySse(http::legacy::LegacySseTransport),
    Memory(memory::MemoryTransport),
}

impl Transport {
    /// Sends one message. For a request over HTTP this returns once the server accepted
    /// the POST; the answer arrives as `Incoming`.
    pub async fn send(&self, msg: &Message) -> Result<()> {
        match self {
            Transport::Stdio(t) => t.send(msg).await,
            Transport::Http(t) => t.send(msg).await,
            Transport::LegacySse(t) => t.send(msg).await,
            Transport::Memory(t) => t.send(msg),
        }
    }

    /// Called once the handshake is done with the negotiated revision.
    pub fn set_revision(&self, revision: Revision) {
        if let Transport::Http(t) = self {
            t.set_revision(revision);
        }
    }

    /// Switches to the stateless revision (2026-07-28) before the first message. Only
    /// Streamable HTTP has anything to change (headers, no session, no resumption).
    pub fn set_stateless(&self) {
        if let Transport::Http(t) = self {
            t.set_stateless();
        }
    }

    /// The listed tools' `x-mcp-header` annotations (stateless revision, HTTP only).
    pub fn set_tool_headers(
        &self,
        headers: std::collections::HashMap<String, Vec<crate::protocol::stateless::ParamHeader>>,
    ) {
        if let Transport::Http(t) = self {
            t.set_tool_headers(headers);
        }
    }

    /// True when this transport cancels a request by closing its response stream
    /// (Streamable HTTP in the stateless revision), rather than by a notification.
    pub fn cancels_by_closing(&self) -> bool {
        matches!(self, Transport::Http(t) if t.is_stateless())
    }

    /// Closes the response stream of `id` (see `cancels_by_closing`).
    pub fn cancel(&self, id: &RequestId) {
        if let Transport::Http(t) = self {
            t.cancel(id);
        }
    }

    /// True for Streamable HTTP, where `x-mcp-header` annotations must be honoured.
    pub fn mirrors_headers(&self) -> bool {
        matches!(self, Transport::Http(_))
    }

    /// Called after `notifications/initialized`: opens the HTTP GET stream and returns once
    /// the server answered it (bounded by the HTTP request timeout).
    pub async fn start_listening(&self) {
        if let Transport::Http(t) = self {
            t.start_listening().await;
        }
    }

    /// Ends the connection the polite way (stdio: close stdin, SIGTERM, SIGKILL; HTTP:
    /// DELETE the session). Bounded; idempotent.
    pub async fn close(&self) {
        match self {
            Transport::Stdio(t) => t.close().await,
            Transport::Http(t) => t.close().await,
            Transport::LegacySse(t) => t.close().await,
            Transport::Memory(t) => t.close(),
        }
    }

    /// A handle on a stdio server's stderr tail that outlives this transport; `None` for
    /// HTTP.
    pub fn stderr(&self) -> Option<stdio::StderrTail> {
        match self {
            Transport::Stdio(t) => Some(t.stderr()),
            Transport::Http(_) | Transport::LegacySse(_) | Transport::Memory(_) => None,
        }
    }

    /// The bounded stderr tail of a stdio server; empty for HTTP.
    pub fn stderr_tail(&self) -> String {
        match self {
            Transport::Stdio(t) => t.stderr_tail(),
            Transport::Http(_) | Transport::LegacySse(_) | Transport::Memory(_) => String::new(),
        }
    }
}

/// A transport and the stream of what it receives.
pub struct Connection {
    pub transport: Transport,
    pub incoming: mpsc::Receiver<Incoming>,
    /// Scrubs this connection's configured secrets from text a peer wrote.
    pub redactor: Redactor,
}
