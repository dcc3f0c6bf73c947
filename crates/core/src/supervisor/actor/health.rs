//! Health pings: after `ping_interval` without activity on a ready connection the actor
//! sends a `ping` with its own timeout; an answer is a round trip (event and snapshot), two
//! misses in a row are a lost connection (one, for the probe after a wake: `system.rs`).
//! `Supervisor::ping` measures one on demand.

use super::{Actor, Internal};
use crate::error::{Error, ErrorKind};
use crate::events::{EventBody, Generation, millis};
use crate::session::{RequestOptions, Session};
use crate::supervisor::state::Status;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::oneshot;
use tokio::time::Instant;

impl Actor {
    pub(super) fn next_ping(&self) -> Option<Instant> {
        let interval = self.cfg.ping_interval?;
        (self.live.is_some() && !self.pinging && matches!(self.state.status, Status::Ready { .. }))
            .then(|| self.last_activity + interval)
    }

    pub(super) fn ping(&mut self) {
        let Some(live) = &self.live else { return };
        self.pinging = true;
        let ping = timed_ping(live.session.clone(), self.cfg.ping_timeout);
        let generation = live.generation;
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result = ping.await;
            let _ = tx.send(Internal::Ping { generation, result });
        });
    }

    pub(super) fn ping_now(&mut self, reply: oneshot::Sender<Result<Duration, Error>>) {
        let live = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => live,
            _ => {
                let _ = reply.send(Err(self.not_ready()));
                return;
            }
        };
        let ping = timed_ping(live.session.clone(), self.cfg.ping_timeout);
        tokio::spawn(async move {
            let _ = reply.send(ping.await);
        });
    }

    pub(super) fn round_trip(&mut self, rtt: Duration) {
        self.last_activity = Instant::now();
        self.last_round_trip = Some((rtt, SystemTime::now()));
        let body = EventBody::RoundTrip {
            round_trip_ms: millis(rtt),
        };
        self.bus.emit(&self.cfg.name, self.state.generation, body);
        self.publish_snapshot();
    }

    /// A ping of `generation` ended: a round trip, or a miss (two in a row: lost).
    pub(super) fn pinged(&mut self, generation: Generation, result: Result<Duration, Error>) {
        self.pinging = false;
        if self.live.as_ref().map(|l| l.generation) != Some(generation) {
            return;
        }
        match result {
            Ok(rtt) => {
                self.ping_misses = 0;
                self.round_trip(rtt);
            }
            // Refused credentials are no miss: waiting for a second ping changes nothing, and
            // the failure's own kind (sign-in needed, auth) decides what happens next.
            Err(e) if matches!(e.kind(), ErrorKind::SignIn | ErrorKind::Auth) => {
                self.lost(generation, &e);
            }
            // Ended by the machine's sleep: no miss; the wake probes the connection.
            Err(e) if e.by_sleep() => {}
            Err(_) => {
                self.ping_misses += 1;
                self.last_activity = Instant::now();
                if self.ping_misses >= 2 {
                    let error = Error::timeout(format!(
                        "two health pings in a row got no answer within {}; the connection is treated as lost",
                        crate::fmt_duration(self.cfg.ping_timeout)
                    ));
                    self.lost(generation, &error);
                }
            }
        }
    }
}

/// A `ping` with its own timeout; resolves to the round trip.
async fn timed_ping(session: Arc<Session>, timeout: Duration) -> Result<Duration, Error> {
    let started = Instant::now();
    let opts = RequestOptions {
        timeout: Some(timeout),
        ..Default::default()
    };
    session
        .request("ping", None, opts)
        .await
        .map(|_| started.elapsed())
}
