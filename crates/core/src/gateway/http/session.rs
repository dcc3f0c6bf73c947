//! One Streamable HTTP session (`Mcp-Session-Id`): a gateway session (`gateway::start`)
//! and the routes of what it sends. A response goes to the POST that carried its request;
//! a message that belongs to a request (a call's progress) goes on that POST's event
//! stream; anything else (list_changed, resources/updated, logging) goes on the session's
//! GET stream, or nowhere when the host has none open (the spec's rule: the server sends
//! unrelated messages only on a stream the client opened).
//!
//! Every event carries an id and every stream keeps its latest events (`streams.rs`), so a
//! host whose stream broke resumes it with a GET and `Last-Event-ID`. The request goes on
//! running meanwhile (a disconnect is not a cancel; DELETE is), and its answer waits for the
//! resume for `streams::RESUME_WINDOW`. A session that speaks 2025-11-25 or later gets a
//! priming event first on each stream (SEP-1699); older revisions' clients may not expect an
//! event without data, so theirs start with their first message, as before.
//!
//! Every stream's queue is bounded (`queue`, `super::STREAM_QUEUE` by default): a host that
//! stops reading a stream while messages keep coming has that stream's connection closed,
//! with one log line naming the session, rather than Lifeline holding its backlog without
//! end; the stream is then kept for a resume like any other whose connection broke.

use super::streams::{self, Bounds, Carries, Resumed, Sent, Streams, Unresumable};
use crate::gateway::{self, Outgoing, Served, Target};
use crate::protocol::revision::Revision;
use crate::protocol::{Message, RequestId};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where a request's answer goes.
enum Slot {
    /// The POST answers with an event stream (this number): progress and the response.
    Stream(u64),
    /// The POST answers with the response as JSON; related messages go to the GET stream.
    Json(oneshot::Sender<Message>),
}

struct Routes {
    pending: HashMap<RequestId, Slot>,
    streams: Streams,
    /// When the host last did anything in this session.
    used: Option<Instant>,
    /// The host's `initialize`, until its answer says which revision the session speaks.
    initialize: Option<RequestId>,
    /// The session speaks 2025-11-25 or later: its streams start with a priming event.
    primes: bool,
}

pub struct HttpSession {
    pub id: String,
    /// What this session serves (`/servers/NAME/mcp`, `/profiles/P/mcp`, `/mcp`).
    pub target: Target,
    /// The client whose token opened it (`None` without tokens).
    pub client: Option<String>,
    /// How many events each of its streams holds for a host that is slow to read.
    queue: usize,
    input: Mutex<Option<gateway::Input>>,
    routes: Mutex<Routes>,
    done: Mutex<Option<JoinHandle<()>>>,
}

/// Why a request could not be taken.
pub enum Refusal {
    /// The session has ended (DELETE, or the endpoint is stopping).
    Ended,
    /// Another request with this id is still unanswered in this session.
    DuplicateId,
}

/// What a POST of a request waits on.
pub enum Answer {
    /// An event stream: the priming event to send first (when the session primes), then
    /// the stream's events.
    Stream {
        priming: Option<Bytes>,
        events: mpsc::Receiver<Bytes>,
    },
    Json(oneshot::Receiver<Message>),
}

/// Whether a session that speaks `revision` gets priming events: 2025-11-25 and later.
pub fn primes(revision: &str) -> bool {
    matches!(
        Revision::parse(revision),
        Some(Revision::V2025_11_25 | Revision::V2026_07_28)
    )
}

impl HttpSession {
    /// Starts the gateway session for `target` on what serves it, and the task that routes
    /// what it sends; each stream keeps at most `queue` events (and `resume_bytes` bytes)
    /// for a host that is slow to read or resumes.
    pub fn start(
        id: String,
        target: Target,
        client: Option<String>,
        served: Served,
        queue: usize,
        resume_bytes: usize,
    ) -> Arc<HttpSession> {
        let gateway::HostSession {
            input,
            mut output,
            done,
        } = served.start();
        let queue = queue.max(1);
        let bounds = Bounds {
            events: queue,
            bytes: resume_bytes,
        };
        let session = Arc::new(HttpSession {
            id,
            target,
            client,
            queue,
            input: Mutex::new(Some(input)),
            routes: Mutex::new(Routes {
                pending: HashMap::new(),
                streams: Streams::new(bounds, queue),
                used: Some(Instant::now()),
                initialize: None,
                primes: false,
            }),
            done: Mutex::new(None),
        });
        let router = session.clone();
        let routing = tokio::spawn(async move {
            // When the next stream without a connection reaches the end of its window; a
            // stream only loses its connection as it is sent to, in `route`, so nothing
            // else makes it sooner.
            let mut expiry = None;
            loop {
                let out = tokio::select! {
                    out = output.recv() => out,
                    () = until(expiry) => {
                        expiry = router.expire();
                        continue;
                    }
                };
                let Some(out) = out else { break };
                expiry = router.route(out);
            }
            // The gateway session is over: every open stream ends, every waiting POST
            // hears that its session ended.
            let mut routes = router.routes();
            routes.pending.clear();
            routes.streams.clear();
        });
        *session.done.lock().expect("done lock") = Some(tokio::spawn(async move {
            let _ = done.await;
            let _ = routing.await;
        }));
        session
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().expect("routes lock")
    }

    /// Sends `out` where it goes; when the next stream without a connection expires.
    fn route(&self, out: Outgoing) -> Option<Instant> {
        let mut routes = self.routes();
        self.route_in(&mut routes, out, Instant::now());
        routes.streams.next_expiry()
    }

    fn route_in(&self, routes: &mut Routes, out: Outgoing, now: Instant) {
        if let Message::Response(r) = &out.message {
            if routes.initialize.as_ref() == Some(&r.id) {
                routes.initialize = None;
                let revision = r.outcome.as_ref().ok().map(|v| &v["protocolVersion"]);
                routes.primes = revision.and_then(|v| v.as_str()).is_some_and(primes);
            }
            match routes.pending.remove(&r.id) {
                Some(Slot::Stream(n)) => {
                    let sent = routes.streams.send(n, &out.message, true, now);
                    self.note(sent, n, "a request's");
                    if sent == Sent::Dropped {
                        tracing::debug!("gateway: the answer to {} was not delivered", r.id);
                    }
                }
                Some(Slot::Json(tx)) => {
                    let _ = tx.send(out.message);
                }
                None => tracing::debug!("gateway: the answer to {} has no one waiting", r.id),
            }
            return;
        }
        if let Some(id) = out.related.as_ref()
            && let Some(Slot::Stream(n)) = routes.pending.get(id)
        {
            let n = *n;
            let sent = routes.streams.send(n, &out.message, false, now);
            self.note(sent, n, "a request's");
            return;
        }
        if let Some(n) = routes.streams.get() {
            let sent = routes.streams.send(n, &out.message, false, now);
            self.note(sent, n, "the GET");
        }
    }

    /// Logs a stream that has just lost its connection: at `warn` when its host stopped
    /// reading (the queue is full), else at `debug` (the host went away, and may resume).
    fn note(&self, sent: Sent, stream: u64, which: &str) {
        match sent {
            Sent::Detached { full: true } => tracing::warn!(
                "gateway: closing {which} event stream {stream} of session {} on {} ({}): its \
                 host stopped reading and {} events are waiting; they are kept {} s for a resume",
                self.short_id(),
                self.target.shown(),
                self.client.as_deref().unwrap_or("no token"),
                self.queue,
                streams::RESUME_WINDOW.as_secs()
            ),
            Sent::Detached { full: false } => tracing::debug!(
                "gateway: {which} event stream {stream} of session {} lost its connection; its \
                 events are kept {} s for a resume",
                self.short_id(),
                streams::RESUME_WINDOW.as_secs()
            ),
            Sent::Live | Sent::Kept | Sent::Dropped => {}
        }
    }

    /// Drops what no host resumed within the window (a dropped request's answer, when it
    /// comes, has no one waiting); when the next stream without a connection expires.
    fn expire(&self) -> Option<Instant> {
        let mut routes = self.routes();
        for id in routes.streams.expire(Instant::now()) {
            routes.pending.remove(&id);
            tracing::debug!(
                "gateway: session {}: nobody resumed the stream of request {id}; dropped",
                self.short_id()
            );
        }
        routes.streams.next_expiry()
    }

    /// The session id's first 8 digits: enough to tell sessions apart in a log, not
    /// enough to use one.
    pub fn short_id(&self) -> &str {
        self.id.get(..8).unwrap_or(&self.id)
    }

    /// Passes a notification or a response of the host's on.
    pub fn deliver(&self, msg: Message) -> Result<(), Refusal> {
        self.touch();
        let input = self.input.lock().expect("input lock");
        match input.as_ref() {
            Some(tx) if tx.send(msg).is_ok() => Ok(()),
            _ => Err(Refusal::Ended),
        }
    }

    /// Passes a request of the host's on, with where its answer goes.
    pub fn request(&self, msg: Message, id: RequestId, stream: bool) -> Result<Answer, Refusal> {
        let initialize = matches!(&msg, Message::Request(r) if r.method == "initialize");
        let answer = {
            let mut routes = self.routes();
            routes.used = Some(Instant::now());
            // A slot whose POST went away no longer blocks its id.
            if let Some(old) = routes.pending.get(&id) {
                let gone = match old {
                    Slot::Stream(n) => !routes.streams.is_live(*n),
                    Slot::Json(tx) => tx.is_closed(),
                };
                if !gone {
                    return Err(Refusal::DuplicateId);
                }
                if let Some(Slot::Stream(n)) = routes.pending.remove(&id) {
                    routes.streams.close(n);
                }
            }
            let (slot, answer) = if stream {
                let (n, events) = routes.streams.open(Carries::Request(id.clone()));
                let priming = routes.primes.then(|| streams::priming(n));
                (Slot::Stream(n), Answer::Stream { priming, events })
            } else {
                let (tx, rx) = oneshot::channel();
                (Slot::Json(tx), Answer::Json(rx))
            };
            if initialize {
                routes.initialize = Some(id.clone());
            }
            routes.pending.insert(id, slot);
            answer
        };
        self.deliver(msg)?;
        Ok(answer)
    }

    /// Opens the GET stream: its priming event (when the session primes) and its events;
    /// `None` when one is already open on a live connection.
    pub fn open_stream(&self) -> Option<(Option<Bytes>, mpsc::Receiver<Bytes>)> {
        let mut routes = self.routes();
        routes.used = Some(Instant::now());
        if routes.streams.get_is_live() {
            return None;
        }
        let (n, events) = routes.streams.open(Carries::Get);
        Some((routes.primes.then(|| streams::priming(n)), events))
    }

    /// Resumes the stream `last` (a `Last-Event-ID`) names, after that event.
    pub fn resume(&self, last: &str) -> Result<Resumed, Unresumable> {
        let mut routes = self.routes();
        routes.used = Some(Instant::now());
        let resumed = routes.streams.resume(last)?;
        if resumed.gap {
            tracing::info!(
                "gateway: session {} resumed a stream after {last}, some of whose events were \
                 no longer kept",
                self.short_id()
            );
        }
        Ok(resumed)
    }

    fn touch(&self) {
        self.routes().used = Some(Instant::now());
    }

    /// When the host last did anything in this session.
    pub fn last_used(&self) -> Option<Instant> {
        self.routes().used
    }

    /// Whether nothing is open, waiting or kept for a resume, and nothing was done for `idle`.
    pub fn idle_for(&self, idle: std::time::Duration) -> bool {
        let routes = self.routes();
        routes.pending.is_empty()
            && !routes.streams.get_is_live()
            && !routes.streams.holds_requests()
            && routes.used.is_none_or(|t| t.elapsed() >= idle)
    }

    /// Ends the session: its requests in flight are cancelled upstream and its streams
    /// close. Resolves once the gateway session let go of the supervisor.
    pub fn end(&self) -> impl Future<Output = ()> + use<> {
        self.input.lock().expect("input lock").take();
        let done = self.done.lock().expect("done lock").take();
        async move {
            if let Some(done) = done {
                let _ = done.await;
            }
        }
    }
}

/// Resolves at `deadline`, or never without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
