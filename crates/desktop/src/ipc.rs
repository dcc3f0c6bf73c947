//! The window process's commands, over the local socket (`lifeline_core::local_socket`,
//! per-user: 0600 on Unix, a local-only named pipe on Windows) to the core process, which
//! runs them with `dispatch::run`. One connection per command:
//!
//! ```text
//! → ipc v1
//! → {"command": "call_tool", "args": {…}, "channels": ["progress"], "caller": "main"}
//! ← {"channel": {"name": "progress", "data": {…}}}      (any number, before or after the answer)
//! ← {"ok": VALUE}  or  {"err": VALUE}                     (exactly one)
//! ```
//!
//! A command with Channel arguments keeps its connection after the answer for as long as the
//! core sends on them (`subscribe`: until the window goes); the core ends it when its sinks are
//! gone, the window when a Channel's receiver is gone (the page went away). Nothing here logs
//! arguments or answers: they may hold secrets (`secret_set`, `gateway_token_add`).

use crate::Core;
use crate::dispatch::{self, Call, Reply, Sink};
use crate::error::ErrorView;
use lifeline_core::local_socket::{self, Stream};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The first line of a command's connection.
pub const HELLO: &str = "ipc v1";

/// The largest request the core reads (a config form, a secret: far less).
const MAX_REQUEST: u64 = 16 << 20;

/// How long the core waits for the request line after the hello.
const READ_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    command: String,
    #[serde(default)]
    args: Value,
    /// The keys of `args` that are Channels.
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    caller: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Ok(Value),
    Err(Value),
    Channel { name: String, data: Value },
}

/// Answers one command connection whose hello the caller has read (instance.rs).
pub async fn answer(core: Arc<Core>, mut reader: BufReader<Stream>) {
    let mut line = String::new();
    let mut limited = AsyncReadExt::take(&mut reader, MAX_REQUEST);
    let read = limited.read_line(&mut line);
    if !matches!(tokio::time::timeout(READ_WITHIN, read).await, Ok(Ok(n)) if n > 0) {
        return;
    }
    let (mut read, mut write) = tokio::io::split(reader);
    let (tx, mut rx) = mpsc::unbounded_channel::<Line>();
    let writer = tokio::spawn(async move {
        let mut probe = [0u8; 1];
        loop {
            let line = tokio::select! {
                line = rx.recv() => line,
                // The caller hung up (or broke the protocol by writing more): stop sending,
                // so the sinks report nobody is listening.
                _ = read.read(&mut probe) => None,
            };
            let Some(line) = line else { return };
            let mut text = serde_json::to_string(&line).unwrap_or_else(|_| "{}".into());
            text.push('\n');
            if write.write_all(text.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let reply = match serde_json::from_str::<Request>(&line) {
        Err(e) => Err(Value::String(format!(
            "not a request of the app's protocol ({HELLO}): {e}"
        ))),
        Ok(request) => {
            let channels = request
                .channels
                .into_iter()
                .map(|name| {
                    let tx = tx.clone();
                    let key = name.clone();
                    let sink: Sink = Box::new(move |data| {
                        let name = name.clone();
                        tx.send(Line::Channel { name, data }).is_ok()
                    });
                    (key, sink)
                })
                .collect();
            let call = Call {
                command: request.command,
                args: request.args,
                channels,
                caller: request.caller,
            };
            dispatch::run(&core, call).await
        }
    };
    let _ = tx.send(match reply {
        Ok(value) => Line::Ok(value),
        Err(value) => Line::Err(value),
    });
    drop(tx);
    let _ = writer.await;
}

/// The core process, as the window process reaches it: the directory of its socket.
#[derive(Debug, Clone)]
pub struct Remote {
    pub dir: PathBuf,
}

impl Remote {
    /// Runs `call` in the core process. Messages on its Channels keep being delivered after
    /// the answer, on a task of their own, until either side is done with them.
    pub async fn call(&self, call: Call) -> Reply {
        let Call {
            command,
            args,
            channels,
            caller,
        } = call;
        let request = Request {
            command,
            args,
            channels: channels.keys().cloned().collect(),
            caller,
        };
        let stream = local_socket::connect(&self.dir)
            .await
            .map_err(|e| unreachable_core(&e.to_string()))?;
        let mut text = format!("{HELLO}\n");
        text.push_str(
            &serde_json::to_string(&request).map_err(|e| unreachable_core(&e.to_string()))?,
        );
        text.push('\n');
        let mut lines = BufReader::new(stream);
        lines
            .write_all(text.as_bytes())
            .await
            .map_err(|e| unreachable_core(&e.to_string()))?;
        let mut sinks = channels;
        let answer = loop {
            match next(&mut lines).await {
                Some(Line::Channel { name, data }) => deliver(&mut sinks, &name, data),
                Some(Line::Ok(value)) => break Ok(value),
                Some(Line::Err(value)) => break Err(value),
                None => {
                    break Err(unreachable_core(
                        "it closed the connection without an answer",
                    ));
                }
            };
        };
        if !sinks.is_empty() {
            tokio::spawn(async move {
                while let Some(line) = next(&mut lines).await {
                    if let Line::Channel { name, data } = line
                        && !deliver(&mut sinks, &name, data)
                    {
                        return; // the receiver is gone: hang up, the core stops sending
                    }
                }
            });
        }
        answer
    }
}

/// The next line from the core; `None` at the end (or on a line this build cannot read).
async fn next(lines: &mut BufReader<Stream>) -> Option<Line> {
    let mut line = String::new();
    match lines.read_line(&mut line).await {
        Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
        _ => None,
    }
}

/// Hands `data` to the Channel `name`; false once its receiver is gone.
fn deliver(sinks: &mut HashMap<String, Sink>, name: &str, data: Value) -> bool {
    sinks.get_mut(name).is_none_or(|sink| sink(data))
}

fn unreachable_core(why: &str) -> Value {
    serde_json::to_value(ErrorView::new(
        "closing",
        format!(
            "the Lifeline core process did not answer ({why}); open Lifeline again from the tray"
        ),
    ))
    .unwrap_or(Value::Null)
}

#[cfg(test)]
#[path = "ipc_socket_tests.rs"]
mod tests;
