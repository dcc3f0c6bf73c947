//! `lifeline connect NAME`: the stdio MCP server a host (Claude Desktop, Cursor, Claude
//! Code, VS Code) runs in place of the real server. It runs NAME's supervisor in this
//! process (headless) and serves the host on stdin/stdout through `lifeline_core::gateway`,
//! so the host's session survives the server's crashes and reconnects. stdout carries only
//! JSON-RPC; everything else goes to stderr. Ends when the host closes stdin, stopping the
//! supervisor and its child process (bounded). Attaching to a running app's supervisor over
//! `lifeline_core::local_socket` is the next slice (docs/gateway.md).

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::events::EventBus;
use lifeline_core::gateway::{self, GatewayOptions};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long stopping the supervisor may take on the way out (the stdio shutdown sequence
/// is about 4 s; disposal is bounded at 10 s).
const STOP_LIMIT: Duration = Duration::from_secs(15);

pub async fn run(name: &str, config: Option<&Path>) -> i32 {
    let out = Out {
        json: false,
        redactor: Redactor::default(),
    };
    let config = match fleet::load(config) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let Some(server) = config.server(name) else {
        return out.error(&fleet::unknown_server(&config, name));
    };
    let redactor = Redactor::new(server.secrets());
    let cfg = match SupervisorConfig::from_server(server, seed()) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let options = GatewayOptions {
        initialize_wait: cfg.request_timeout.min(Duration::from_secs(10)),
        request_wait: cfg.request_timeout,
        redactor,
    };
    let bus = Arc::new(EventBus::new(256));
    log_events(&bus);
    let supervisor = Arc::new(Supervisor::spawn(cfg, bus));
    let (read, write) = stdio();
    gateway::serve(supervisor.clone(), read, write, options).await;
    tracing::info!("the host closed stdin; stopping `{name}`");
    match Arc::try_unwrap(supervisor) {
        Ok(s) => {
            let _ = tokio::time::timeout(STOP_LIMIT, s.stop()).await;
        }
        Err(_) => tracing::warn!("a request still held the supervisor; leaving it to the exit"),
    }
    EXIT_OK
}

/// stdin and stdout as async streams: a thread per direction copies between the blocking
/// standard streams and an in-process pipe (stdout flushed per write, so each JSON-RPC
/// line leaves at once). stdin's EOF ends the read side.
fn stdio() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    use std::io::{Read, Write};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let handle = tokio::runtime::Handle::current();
    let (read, mut feed) = tokio::io::duplex(1 << 16);
    let (write, mut drain) = tokio::io::duplex(1 << 16);
    let h = handle.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if h.block_on(feed.write_all(&buf[..n])).is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping `feed` is the gateway's EOF.
    });
    std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match handle.block_on(drain.read(&mut buf)) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout
                        .write_all(&buf[..n])
                        .and_then(|()| stdout.flush())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    (read, write)
}

/// Each run its own jitter, so several hosts' bridges to one server do not retry together.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

/// The supervisor's events on stderr (with LIFELINE_LOG=info), never stdout.
fn log_events(bus: &EventBus) {
    let mut rx = bus.subscribe();
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv().await {
            if let Ok(line) = serde_json::to_string(&ev) {
                tracing::info!(target: "lifeline::connect", "{line}");
            }
        }
    });
}
