//! A session's event streams as a host may resume them (MCP 2025-11-25, "Resumability and
//! Redelivery", SEP-1699). Every stream has a number no other stream of this process has, and
//! every event on it the id `<stream>-<n>`, `n` its place (the priming event is 0). Each
//! stream keeps its latest events, bounded (`Bounds`), whether or not a connection carries
//! it, so a host whose connection broke gets, on a GET with `Last-Event-ID`, what followed
//! that id on that very stream (`Streams::resume`), and never another stream's events: the
//! lookup is in the session's own table, and another session's numbers are not in it.
//!
//! A stream whose connection is gone is *detached*; it keeps what comes (its request's answer
//! included) for `RESUME_WINDOW`, after which a request's stream is dropped and the GET stream
//! forgets its events (it stays the session's GET stream, so its host may still resume it,
//! with a gap, rather than lose its notifications for good).

use crate::protocol::{Message, RequestId};
use bytes::{Bytes, BytesMut};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The `retry:` of a priming event: how long a host waits before it resumes a stream that
/// ended without its answer. The SDK clients' own default (1 s in both the TypeScript and the
/// Python SDK): a stream of a local endpoint breaks because its host's connection did, and a
/// second is short against a call worth resuming, long enough not to spin while Lifeline
/// restarts.
pub const RETRY: Duration = Duration::from_millis(1000);

/// How long a stream without a connection keeps its events for a host to resume it.
pub const RESUME_WINDOW: Duration = Duration::from_secs(60);

/// At most this many bytes of events kept per stream, besides its newest event, which is
/// always kept (a request's answer, whatever its size, is the last thing to lose).
pub const RESUME_BYTES: usize = 1024 * 1024;

/// What one stream keeps: at most `events` events, and `bytes` bytes besides the newest.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub events: usize,
    pub bytes: usize,
}

/// Stream numbers, unique in the process: an id from another session names no stream here.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// The id of one event: its stream and its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    pub stream: u64,
    pub n: u64,
}

impl EventId {
    /// The id a `Last-Event-ID` header holds, if it is one Lifeline could have written.
    pub fn parse(text: &str) -> Option<EventId> {
        let (stream, n) = text.trim().split_once('-')?;
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        Some(EventId {
            stream: number(stream)?,
            n: number(n)?,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream, self.n)
    }
}

/// One JSON-RPC message as the SSE event `id`.
pub fn frame(id: EventId, msg: &Message) -> Bytes {
    Bytes::from(format!(
        "id: {id}\nevent: message\ndata: {}\n\n",
        msg.to_json()
    ))
}

/// The priming event of `stream`: its id at place 0, the `retry:` and empty data, so a host
/// can resume the stream before its first real event.
pub fn priming(stream: u64) -> Bytes {
    let id = EventId { stream, n: 0 };
    Bytes::from(format!(
        "id: {id}\nretry: {}\ndata: \n\n",
        RETRY.as_millis()
    ))
}

/// What a stream carries: one request's progress and answer, or the session's GET stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carries {
    Request(RequestId),
    Get,
}

/// One stream: its kept events and the connection carrying it, if any.
struct Stream {
    carries: Carries,
    /// The place the next event gets.
    next: u64,
    /// The latest events, oldest first, with their places.
    kept: VecDeque<(u64, Bytes)>,
    /// The bytes of `kept`.
    bytes: usize,
    live: Option<mpsc::Sender<Bytes>>,
    /// Since when no connection carries it.
    detached: Option<Instant>,
    /// Its request's answer is among the kept events: nothing more will come.
    answered: bool,
}

impl Stream {
    fn new(carries: Carries, live: mpsc::Sender<Bytes>) -> Stream {
        Stream {
            carries,
            next: 1,
            kept: VecDeque::new(),
            bytes: 0,
            live: Some(live),
            detached: None,
            answered: false,
        }
    }

    fn is_live(&self) -> bool {
        self.live.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    fn expired(&self, now: Instant) -> bool {
        self.detached
            .is_some_and(|t| now.saturating_duration_since(t) >= RESUME_WINDOW)
    }

    fn detach(&mut self, now: Instant) {
        self.live = None;
        self.detached.get_or_insert(now);
    }

    /// Keeps `event` at `place`, then lets go of the oldest past the bounds (never the newest).
    fn keep(&mut self, place: u64, event: Bytes, bounds: Bounds) {
        self.bytes += event.len();
        self.kept.push_back((place, event));
        while self.kept.len() > bounds.events.max(1)
            || (self.kept.len() > 1
                && self.bytes - self.kept.back().map_or(0, |(_, e)| e.len()) > bounds.bytes)
        {
            let Some((_, old)) = self.kept.pop_front() else {
                break;
            };
            self.bytes -= old.len();
        }
    }

    /// The kept events after place `n`, as one buffer; and whether some were let go first.
    fn after(&self, n: u64) -> (Bytes, bool) {
        let gap = self.kept.front().map_or(self.next, |(p, _)| *p) > n + 1;
        let mut all = BytesMut::new();
        for (_, event) in self.kept.iter().filter(|(p, _)| *p > n) {
            all.extend_from_slice(event);
        }
        (all.freeze(), gap)
    }
}

/// Where an event went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Queued on the connection carrying the stream.
    Live,
    /// Kept for a resume only: the stream had lost its connection before.
    Kept,
    /// Kept for a resume only: its connection has just gone away, or (`full`) its host
    /// stopped reading and its queue is full.
    Detached { full: bool },
    /// Dropped: the stream is unknown, or it has been without a connection too long.
    Dropped,
}

/// Why a stream could not be resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresumable {
    /// Not an id Lifeline writes.
    Malformed,
    /// No stream of this session has it: answered and gone, unclaimed past the window, or
    /// another session's.
    NotHeld,
}

/// A resumed stream: what to send first, and the rest of the stream (`None` when the
/// replay already ends it with the answer).
pub struct Resumed {
    pub replay: Bytes,
    pub rest: Option<mpsc::Receiver<Bytes>>,
    /// Events after the id were let go (past the bounds or the window) before the resume.
    pub gap: bool,
}

/// Every stream of one session.
pub struct Streams {
    bounds: Bounds,
    /// How many events a connection's queue holds before its host counts as not reading.
    queue: usize,
    all: HashMap<u64, Stream>,
    /// The session's GET stream, once the host opened one.
    get: Option<u64>,
}

impl Streams {
    pub fn new(bounds: Bounds, queue: usize) -> Streams {
        Streams {
            bounds,
            queue: queue.max(1),
            all: HashMap::new(),
            get: None,
        }
    }

    /// A new stream for `carries`: its number and the receiving end of its connection.
    pub fn open(&mut self, carries: Carries) -> (u64, mpsc::Receiver<Bytes>) {
        let number = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.queue);
        if carries == Carries::Get
            && let Some(old) = self.get.replace(number)
        {
            self.all.remove(&old);
        }
        self.all.insert(number, Stream::new(carries, tx));
        (number, rx)
    }

    /// The GET stream, if the host has one open on a live connection.
    pub fn get_is_live(&self) -> bool {
        self.get
            .and_then(|n| self.all.get(&n))
            .is_some_and(Stream::is_live)
    }

    pub fn get(&self) -> Option<u64> {
        self.get
    }

    /// Whether a request's stream is carried by a live connection.
    pub fn is_live(&self, stream: u64) -> bool {
        self.all.get(&stream).is_some_and(Stream::is_live)
    }

    /// Whether some request's stream is still held (live, or kept for a resume).
    pub fn holds_requests(&self) -> bool {
        self.all
            .values()
            .any(|s| matches!(s.carries, Carries::Request(_)))
    }

    /// Sends `msg` as the stream's next event, and keeps it. With `answer`, it is the
    /// request's answer: a stream that got it live is done and forgotten; one without a
    /// connection keeps it for a resume. A connection that went away, or whose queue is full
    /// (its host stopped reading), is let go: the stream is then detached.
    pub fn send(&mut self, stream: u64, msg: &Message, answer: bool, now: Instant) -> Sent {
        let Some(s) = self.all.get_mut(&stream) else {
            return Sent::Dropped;
        };
        let id = EventId { stream, n: s.next };
        s.next += 1;
        if s.expired(now) {
            // Only the GET stream outlives the window; what comes meanwhile is lost (its
            // place is taken, so a resume knows of the gap).
            return Sent::Dropped;
        }
        let event = frame(id, msg);
        s.keep(id.n, event.clone(), self.bounds);
        let sent = match s.live.as_ref().map(|tx| tx.try_send(event)) {
            Some(Ok(())) => Sent::Live,
            Some(Err(e)) => {
                s.detach(now);
                Sent::Detached {
                    full: matches!(e, mpsc::error::TrySendError::Full(_)),
                }
            }
            None => Sent::Kept,
        };
        if answer {
            if sent == Sent::Live {
                self.all.remove(&stream);
            } else {
                s.answered = true;
            }
        }
        sent
    }

    /// Resumes the stream `last` names after that event, on a new connection; an old one
    /// still carrying it is let go (its host has moved to this one).
    pub fn resume(&mut self, last: &str) -> Result<Resumed, Unresumable> {
        let id = EventId::parse(last).ok_or(Unresumable::Malformed)?;
        let s = self.all.get_mut(&id.stream).ok_or(Unresumable::NotHeld)?;
        if id.n >= s.next {
            return Err(Unresumable::NotHeld);
        }
        let (replay, gap) = s.after(id.n);
        if s.answered {
            self.all.remove(&id.stream);
            return Ok(Resumed {
                replay,
                rest: None,
                gap,
            });
        }
        let (tx, rx) = mpsc::channel(self.queue);
        s.live = Some(tx);
        s.detached = None;
        Ok(Resumed {
            replay,
            rest: Some(rx),
            gap,
        })
    }

    /// Lets go of a request's stream (its id was reused by a new request).
    pub fn close(&mut self, stream: u64) {
        self.all.remove(&stream);
    }

    /// Drops the requests' streams left without a connection for `RESUME_WINDOW`, and the
    /// events of a GET stream left so; which requests' streams were dropped.
    pub fn expire(&mut self, now: Instant) -> Vec<RequestId> {
        let mut dropped = Vec::new();
        self.all.retain(|_, s| {
            if !s.expired(now) {
                return true;
            }
            match &s.carries {
                Carries::Request(id) => {
                    dropped.push(id.clone());
                    false
                }
                Carries::Get => {
                    s.kept.clear();
                    s.bytes = 0;
                    true
                }
            }
        });
        dropped
    }

    /// When the next stream without a connection reaches the end of its window.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.all
            .values()
            .filter(|s| !s.kept.is_empty() || matches!(s.carries, Carries::Request(_)))
            .filter_map(|s| s.detached)
            .min()
            .map(|t| t + RESUME_WINDOW)
    }

    /// Every stream ends (the session has).
    pub fn clear(&mut self) {
        self.all.clear();
        self.get = None;
    }
}

#[cfg(test)]
#[path = "streams_tests.rs"]
mod tests;
