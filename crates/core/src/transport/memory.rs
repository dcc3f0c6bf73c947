//! An in-process transport: the session on one end, the embedder's server (or a test) on
//! the other. Real channels, no I/O, so session timing can be tested under paused time.

use super::{Connection, INCOMING_CAPACITY, Incoming, Transport};
use crate::error::Error;
use crate::protocol::Message;
use crate::redact::Redactor;
use std::sync::Mutex;
use tokio::sync::mpsc;

pub struct MemoryTransport {
    to_server: mpsc::UnboundedSender<Message>,
    closed: Mutex<Option<Error>>,
}

/// The server's end: what the client sent, and a way to answer or to end the connection.
pub struct ServerEnd {
    pub from_client: mpsc::UnboundedReceiver<Message>,
    pub to_client: mpsc::Sender<Incoming>,
}

pub fn pair() -> (Connection, ServerEnd) {
    let (to_server, from_client) = mpsc::unbounded_channel();
    let (to_client, incoming) = mpsc::channel(INCOMING_CAPACITY);
    let transport = MemoryTransport {
        to_server,
        closed: Mutex::new(None),
    };
    (
        Connection {
            transport: Transport::Memory(transport),
            incoming,
            redactor: Redactor::default(),
        },
        ServerEnd {
            from_client,
            to_client,
        },
    )
}

impl MemoryTransport {
    pub fn send(&self, msg: &Message) -> Result<(), Error> {
        if let Some(cause) = self.closed.lock().expect("lock").as_ref() {
            return Err(Error::closed_because(cause));
        }
        self.to_server
            .send(msg.clone())
            .map_err(|_| Error::transport("the in-process server has gone away"))
    }

    pub fn close(&self) {
        self.closed
            .lock()
            .expect("lock")
            .get_or_insert_with(|| Error::cancelled("the connection was closed by Lifeline"));
    }
}
