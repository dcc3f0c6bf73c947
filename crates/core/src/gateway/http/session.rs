//! One Streamable HTTP session (`Mcp-Session-Id`): a gateway session (`gateway::start`)
//! and the routes of what it sends. A response goes to the POST that carried its request;
//! a message that belongs to a request (a call's progress) goes on that POST's event
//! stream; anything else (list_changed, resources/updated, logging) goes on the session's
//! GET stream, or nowhere when the host has none open (the spec's rule: the server sends
//! unrelated messages only on a stream the client opened). No event ids are sent, so a
//! stream that breaks is not resumed: its request's answer is lost (the host times it out),
//! and the request is not cancelled (a disconnect is not a cancel).
//!
//! Every stream's queue is bounded (`queue`, `super::STREAM_QUEUE` by default): a host that
//! stops reading a stream while messages keep coming has that stream closed, with one log
//! line naming the session, rather than Lifeline holding its backlog without end.

use crate::gateway::{self, Outgoing, Served, Target};
use crate::protocol::{Message, RequestId};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where a request's answer goes.
enum Slot {
    /// The POST answers with an event stream: progress and the response as events.
    Stream(mpsc::Sender<Bytes>),
    /// The POST answers with the response as JSON; related messages go to the GET stream.
    Json(oneshot::Sender<Message>),
}

#[derive(Default)]
struct Routes {
    pending: HashMap<RequestId, Slot>,
    /// The GET stream, when the host has one open.
    stream: Option<mpsc::Sender<Bytes>>,
    /// When the host last did anything in this session.
    used: Option<Instant>,
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
    Stream(mpsc::Receiver<Bytes>),
    Json(oneshot::Receiver<Message>),
}

/// An SSE event carrying one JSON-RPC message.
pub fn event(msg: &Message) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", msg.to_json()))
}

impl HttpSession {
    /// Starts the gateway session for `target` on what serves it, and the task that routes
    /// what it sends.
    pub fn start(
        id: String,
        target: Target,
        client: Option<String>,
        served: Served,
        queue: usize,
    ) -> Arc<HttpSession> {
        let gateway::HostSession {
            input,
            mut output,
            done,
        } = served.start();
        let session = Arc::new(HttpSession {
            id,
            target,
            client,
            queue: queue.max(1),
            input: Mutex::new(Some(input)),
            routes: Mutex::new(Routes {
                used: Some(Instant::now()),
                ..Routes::default()
            }),
            done: Mutex::new(None),
        });
        let router = session.clone();
        let routing = tokio::spawn(async move {
            while let Some(out) = output.recv().await {
                router.route(out);
            }
            // The gateway session is over: every open stream ends, every waiting POST
            // hears that its session ended.
            let mut routes = router.routes.lock().expect("routes lock");
            routes.pending.clear();
            routes.stream = None;
        });
        *session.done.lock().expect("done lock") = Some(tokio::spawn(async move {
            let _ = done.await;
            let _ = routing.await;
        }));
        session
    }

    fn route(&self, out: Outgoing) {
        let mut routes = self.routes.lock().expect("routes lock");
        if let Message::Response(r) = &out.message {
            match routes.pending.remove(&r.id) {
                Some(Slot::Stream(tx)) => {
                    if !self.send(&tx, &out.message, "a request's") {
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
            && let Some(Slot::Stream(tx)) = routes.pending.get(id)
        {
            if !self.send(tx, &out.message, "a request's") {
                // Dropping the slot ends that POST's stream; its answer is lost.
                routes.pending.remove(id);
            }
            return;
        }
        if let Some(tx) = &routes.stream
            && !self.send(tx, &out.message, "the GET")
        {
            routes.stream = None;
        }
    }

    /// Queues `msg` on a stream; `false` when the stream must close: its host went away,
    /// or it stopped reading and the queue is full (logged, naming the session).
    fn send(&self, tx: &mpsc::Sender<Bytes>, msg: &Message, which: &str) -> bool {
        match tx.try_send(event(msg)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(
                    "gateway: closing {which} event stream of session {} on {} ({}): its \
                     host stopped reading and {} events are waiting",
                    self.short_id(),
                    self.target.shown(),
                    self.client.as_deref().unwrap_or("no token"),
                    self.queue
                );
                false
            }
        }
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
        let (slot, answer) = if stream {
            let (tx, rx) = mpsc::channel(self.queue);
            (Slot::Stream(tx), Answer::Stream(rx))
        } else {
            let (tx, rx) = oneshot::channel();
            (Slot::Json(tx), Answer::Json(rx))
        };
        {
            let mut routes = self.routes.lock().expect("routes lock");
            routes.used = Some(Instant::now());
            // A slot whose POST went away no longer blocks its id.
            if let Some(old) = routes.pending.get(&id) {
                let gone = match old {
                    Slot::Stream(tx) => tx.is_closed(),
                    Slot::Json(tx) => tx.is_closed(),
                };
                if !gone {
                    return Err(Refusal::DuplicateId);
                }
            }
            routes.pending.insert(id, slot);
        }
        self.deliver(msg)?;
        Ok(answer)
    }

    /// Opens the GET stream; `None` when one is already open.
    pub fn open_stream(&self) -> Option<mpsc::Receiver<Bytes>> {
        let mut routes = self.routes.lock().expect("routes lock");
        routes.used = Some(Instant::now());
        if routes.stream.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(self.queue);
        routes.stream = Some(tx);
        Some(rx)
    }

    fn touch(&self) {
        self.routes.lock().expect("routes lock").used = Some(Instant::now());
    }

    /// When the host last did anything in this session.
    pub fn last_used(&self) -> Option<Instant> {
        self.routes.lock().expect("routes lock").used
    }

    /// Whether nothing is open or waiting and nothing was done for `idle`.
    pub fn idle_for(&self, idle: std::time::Duration) -> bool {
        let routes = self.routes.lock().expect("routes lock");
        let streaming = routes.stream.as_ref().is_some_and(|tx| !tx.is_closed());
        routes.pending.is_empty() && !streaming && routes.used.is_none_or(|t| t.elapsed() >= idle)
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
