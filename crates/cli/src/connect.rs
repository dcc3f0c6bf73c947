//! `lifeline connect NAME`: the stdio MCP server a host (Claude Desktop, Cursor, Claude
//! Code, VS Code) runs in place of the real server, so the host's session survives the
//! server's crashes and reconnects. When the Lifeline app runs, it attaches to the app's
//! own supervisor for NAME over `lifeline_core::local_socket` (the handshake is
//! `gateway::attach`) and only copies bytes between stdio and the app; otherwise (no app,
//! `--no-attach`, or the app refused) it runs NAME's supervisor in this process and serves
//! the host through `lifeline_core::gateway`. stdout carries only JSON-RPC; everything else
//! goes to stderr. Ends when the host closes stdin, stopping an in-process supervisor and
//! its child process (bounded). docs/gateway.md says what falls back when.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::events::{EventBus, HostMode};
use lifeline_core::gateway::attach::{Answer, Request};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::{self, GatewayOptions};
use lifeline_core::local_socket::{self, Stream};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long stopping the supervisor may take on the way out (the stdio shutdown sequence
/// is about 4 s; disposal is bounded at 10 s).
const STOP_LIMIT: Duration = Duration::from_secs(15);

/// How long the app may take to answer an attach request.
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// How long, after the host closed stdin, the app may take to end the session.
const DETACH_WAIT: Duration = Duration::from_secs(5);

/// Exit code when the app went away under an attached host.
const EXIT_APP_GONE: i32 = 1;

pub async fn run(name: &str, config: Option<&Path>, attach: bool) -> i32 {
    if attach {
        match try_attach(name, config).await {
            Attach::Attached(app) => return pump(name, app).await,
            Attach::NoApp => {}
            Attach::Refused(why) => {
                eprintln!("lifeline connect: {why}; running `{name}` in this process instead")
            }
        }
    }
    in_process(name, config).await
}

enum Attach {
    Attached(BufReader<Stream>),
    /// No app listens (the usual headless case): no note.
    NoApp,
    Refused(String),
}

/// Asks the running app, if any, to serve the host with its supervisor for `name`. Only
/// an explicit `--config` is sent: the app attaches then only if it runs that file.
async fn try_attach(name: &str, config: Option<&Path>) -> Attach {
    let Some(dir) =
        lifeline_core::history::resolve_path().and_then(|p| p.parent().map(Path::to_owned))
    else {
        return Attach::NoApp;
    };
    let Ok(stream) = local_socket::connect(&dir).await else {
        return Attach::NoApp;
    };
    let request = Request {
        name: name.to_owned(),
        config: config.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
    };
    let mut app = BufReader::new(stream);
    if app
        .get_mut()
        .write_all(request.to_line().as_bytes())
        .await
        .is_err()
    {
        return Attach::Refused("the Lifeline app's endpoint did not take the request".into());
    }
    let mut line = String::new();
    match tokio::time::timeout(ANSWER_WAIT, app.read_line(&mut line)).await {
        Ok(Ok(0)) => Attach::Refused(
            "the running Lifeline app cannot serve `lifeline connect` (it predates attach v1: update it)"
                .into(),
        ),
        Ok(Ok(_)) => match Answer::parse(&line) {
            Answer::Ok => Attach::Attached(app),
            Answer::Refused { kind, message } => Attach::Refused(format!(
                "the Lifeline app did not attach ({}: {message})",
                kind.as_str()
            )),
            Answer::Other(text) => {
                Attach::Refused(format!("the Lifeline app answered `{text}`, not `ok`"))
            }
        },
        Ok(Err(e)) => Attach::Refused(format!("reading the Lifeline app's answer failed ({e})")),
        Err(_) => Attach::Refused(format!(
            "the Lifeline app did not answer within {}s",
            ANSWER_WAIT.as_secs()
        )),
    }
}

/// Copies the host's bytes to the app and the app's to the host. The host closing stdin
/// ends the session (the app cancels its calls, then closes); the app closing first (it
/// quit) ends this process with a line on stderr: the host sees its server exit and
/// restarts it, which then attaches again or runs in-process.
async fn pump(name: &str, app: BufReader<Stream>) -> i32 {
    tracing::info!("attached to the Lifeline app's supervisor for `{name}`");
    let (mut stdin, mut stdout, writer) = stdio();
    let (mut app_read, mut app_write) = tokio::io::split(app);
    let code = {
        let up = async {
            let _ = tokio::io::copy(&mut stdin, &mut app_write).await;
            let _ = app_write.shutdown().await;
        };
        let down = tokio::io::copy(&mut app_read, &mut stdout);
        tokio::pin!(up, down);
        tokio::select! {
            () = &mut up => {
                let _ = tokio::time::timeout(DETACH_WAIT, &mut down).await;
                EXIT_OK
            }
            _ = &mut down => {
                eprintln!(
                    "lifeline connect: the Lifeline app closed the connection to `{name}` (it quit); \
                     restart the server in your client to reconnect"
                );
                EXIT_APP_GONE
            }
        }
    };
    drop(stdout);
    // Whatever the app sent last reaches the host before the process exits.
    let joined = tokio::task::spawn_blocking(move || writer.join());
    let _ = tokio::time::timeout(DETACH_WAIT, joined).await;
    code
}

/// NAME's supervisor in this process, serving the host on stdio.
async fn in_process(name: &str, config: Option<&Path>) -> i32 {
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
    let bus = Arc::new(EventBus::new(256));
    log_events(&bus);
    let options = GatewayOptions {
        initialize_wait: cfg.request_timeout.min(Duration::from_secs(10)),
        request_wait: cfg.request_timeout,
        redactor,
        hosts: Some(Hosts::new(bus.clone(), HostMode::InProcess)),
    };
    let supervisor = Arc::new(Supervisor::spawn(cfg, bus));
    let (read, write, _writer) = stdio();
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
/// line leaves at once). stdin's EOF ends the read side. The stdout thread ends once the
/// write side is dropped and drained.
fn stdio() -> (
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    std::thread::JoinHandle<()>,
) {
    use std::io::{Read, Write};
    use tokio::io::AsyncReadExt;
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
    let writer = std::thread::spawn(move || {
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
    (read, write, writer)
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
