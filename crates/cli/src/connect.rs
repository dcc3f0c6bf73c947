//! `lifeline connect NAME`: the stdio MCP server a host (Claude Desktop, Cursor, Claude
//! Code, VS Code) runs in place of the real server, so the host's session survives the
//! server's crashes and reconnects. When the Lifeline app runs, it attaches to the app's
//! own supervisor for NAME over `lifeline_core::local_socket` (the handshake is
//! `gateway::attach`) and copies lines between stdio and the app, taking the host's
//! session over with a supervisor of its own if the app quits (`takeover`); otherwise (no app,
//! `--no-attach`, or the app refused) it runs NAME's supervisor in this process and serves
//! the host through `lifeline_core::gateway`. stdout carries only JSON-RPC; everything else
//! goes to stderr. Ends when the host closes stdin, stopping an in-process supervisor and
//! its child process (bounded). docs/gateway.md says what falls back when.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use crate::takeover::Tap;
use lifeline_core::events::{EventBus, HostMode};
use lifeline_core::gateway::attach::{self, Asked, Request};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::{self, GatewayOptions};
use lifeline_core::lines::{LineRead, fmt_bytes, read_line_capped};
use lifeline_core::local_socket::Stream;
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// How long stopping the supervisor may take on the way out (the stdio shutdown sequence
/// is about 4 s; disposal is bounded at 10 s).
const STOP_LIMIT: Duration = Duration::from_secs(15);

/// How long, after the host closed stdin, the app may take to end the session.
const DETACH_WAIT: Duration = Duration::from_secs(5);

/// The longest line the app (or this process's own gateway) may send towards the host.
/// Its lines carry upstream answers, each capped on the way in (16 MiB by default) and then
/// wrapped by the gateway, so the cap is looser than the host's own (`gateway::MAX_LINE`):
/// it only keeps a broken peer from being unbounded memory.
const ANSWER_LINE_MAX: usize = 4 * gateway::MAX_LINE;

/// Exit code when the app went away under an attached host.
const EXIT_APP_GONE: i32 = 1;

pub async fn run(name: &str, config: Option<&Path>, attach: bool) -> i32 {
    if attach {
        match try_attach(name, config).await {
            Asked::Attached(app) => return pump(name, config, app).await,
            Asked::NoApp => {}
            Asked::Refused(why) => {
                eprintln!("lifeline connect: {why}; running `{name}` in this process instead")
            }
        }
    }
    in_process(name, config).await
}

/// Asks the running app, if any, to serve the host with its supervisor for `name`. Only
/// an explicit `--config` is sent: the app attaches then only if it runs that file.
async fn try_attach(name: &str, config: Option<&Path>) -> Asked {
    let Some(dir) =
        lifeline_core::history::resolve_path().and_then(|p| p.parent().map(Path::to_owned))
    else {
        return Asked::NoApp;
    };
    let request = Request {
        name: name.to_owned(),
        config: config.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
    };
    attach::ask(&dir, &request).await
}

/// Copies the host's lines to the app and the app's to the host, keeping a `Tap` on them.
/// The host closing stdin ends the session (the app cancels its calls, then closes). The
/// app closing first (it quit) hands the host's session to a supervisor in this process
/// (`takeover`), so the host keeps working; only when NAME cannot run here does the bridge
/// exit, with a line on stderr.
async fn pump(name: &str, config: Option<&Path>, app: BufReader<Stream>) -> i32 {
    tracing::info!("attached to the Lifeline app's supervisor for `{name}`");
    let host = crate::host_stdio::open();
    let mut host_in = BufReader::new(host.read);
    let mut host_out = host.write;
    let (app_read, mut app_write) = tokio::io::split(app);
    let mut app_in = BufReader::new(app_read);
    let mut tap = Tap::default();
    // A line cut short by the other branch stays in its buffer: the reader appends.
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let app_gone = loop {
        tokio::select! {
            r = read_line_capped(&mut host_in, &mut up, gateway::MAX_LINE) => {
                if !framed(r, &mut up, "your MCP client", gateway::MAX_LINE) {
                    break false;
                }
                // Not sent (the app is gone): it stays in `up` for the takeover.
                if app_write.write_all(&up).await.is_err() {
                    break true;
                }
                tap.host_said(&up);
                up.clear();
            }
            r = read_line_capped(&mut app_in, &mut down, ANSWER_LINE_MAX) => {
                match r {
                    Ok(LineRead::Line) => down.push(b'\n'),
                    Ok(LineRead::TooLong) => {
                        refuse_line("the Lifeline app", ANSWER_LINE_MAX);
                        break false;
                    }
                    Ok(LineRead::Eof) | Err(_) => break true,
                }
                tap.app_said(&down);
                if host_out.write_all(&down).await.is_err() {
                    break false;
                }
                down.clear();
            }
        }
    };
    let code = if app_gone {
        take_over(name, config, tap, up, host_in, host_out).await
    } else {
        // The host is done: the app's last answers still reach it, bounded.
        let _ = app_write.shutdown().await;
        let _ = tokio::time::timeout(DETACH_WAIT, async {
            loop {
                let r = read_line_capped(&mut app_in, &mut down, ANSWER_LINE_MAX).await;
                if !framed(r, &mut down, "the Lifeline app", ANSWER_LINE_MAX)
                    || host_out.write_all(&down).await.is_err()
                {
                    break;
                }
                down.clear();
            }
        })
        .await;
        let _ = host_out.flush().await;
        EXIT_OK
    };
    // Whatever was written last reaches the host before the process exits.
    if let Some(writer) = host.writer {
        let joined = tokio::task::spawn_blocking(move || writer.join());
        let _ = tokio::time::timeout(DETACH_WAIT, joined).await;
    }
    code
}

/// Whether a read gave a line to forward; the line gets its `\n` back. A line over `max`
/// from `who` ends the bridge with a line on stderr naming the cap: the stream cannot be
/// framed past it.
fn framed(read: std::io::Result<LineRead>, line: &mut Vec<u8>, who: &str, max: usize) -> bool {
    match read {
        Ok(LineRead::Line) => {
            line.push(b'\n');
            true
        }
        Ok(LineRead::TooLong) => {
            refuse_line(who, max);
            false
        }
        Ok(LineRead::Eof) | Err(_) => false,
    }
}

fn refuse_line(who: &str, max: usize) {
    eprintln!(
        "lifeline connect: {who} sent a line longer than {}; closing the connection",
        fmt_bytes(max)
    );
}

/// The app quit under the host: NAME's supervisor starts in this process and the host's
/// session continues on it (module `takeover`). `pending` is the start of a host line the
/// app never got.
async fn take_over(
    name: &str,
    config: Option<&Path>,
    tap: Tap,
    pending: Vec<u8>,
    mut host_in: BufReader<std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>>,
    mut host_out: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
) -> i32 {
    let Ok(local) = start_in_process(name, config) else {
        eprintln!(
            "lifeline connect: the Lifeline app closed the connection to `{name}` (it quit), \
             and `{name}` cannot run in this process (above); restart the server in your \
             client to reconnect"
        );
        return EXIT_APP_GONE;
    };
    eprintln!(
        "lifeline connect: the Lifeline app closed the connection to `{name}` (it quit); \
         serving `{name}` from this process now"
    );
    let mut over = tap.hand_over(name);
    for line in &over.to_host {
        let _ = host_out.write_all(format!("{line}\n").as_bytes()).await;
    }
    let (gw_read, mut feed) = tokio::io::duplex(1 << 16);
    let (gw_write, gw_out) = tokio::io::duplex(1 << 16);
    let replay = std::mem::take(&mut over.replay);
    let feeder = tokio::spawn(async move {
        for line in replay {
            if feed
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
        if feed.write_all(&pending).await.is_ok() {
            let _ = tokio::io::copy_buf(&mut host_in, &mut feed).await;
        }
        // Dropping `feed` is the gateway's EOF.
    });
    let relay = tokio::spawn(async move {
        let mut from_gateway = BufReader::new(gw_out);
        let mut line = Vec::new();
        loop {
            let r = read_line_capped(&mut from_gateway, &mut line, ANSWER_LINE_MAX).await;
            if !framed(r, &mut line, "this process's gateway", ANSWER_LINE_MAX) {
                break;
            }
            if !over.swallows(&line) && host_out.write_all(&line).await.is_err() {
                break;
            }
            line.clear();
        }
        let _ = host_out.flush().await;
    });
    let code = serve_in_process(name, local, gw_read, gw_write).await;
    feeder.abort();
    let _ = tokio::time::timeout(DETACH_WAIT, relay).await;
    code
}

/// How long the in-process supervisor's first attempt waits for the host's `initialize`.
const HOST_HOLD: Duration = Duration::from_secs(5);

/// NAME's supervisor in this process, serving the host on stdio.
async fn in_process(name: &str, config: Option<&Path>) -> i32 {
    let local = match start_in_process(name, config) {
        Ok(local) => local,
        Err(code) => return code,
    };
    let host = crate::host_stdio::open();
    serve_in_process(name, local, host.read, host.write).await
}

/// A supervisor of this process's own and how its gateway serves.
struct Local {
    supervisor: Arc<Supervisor>,
    options: GatewayOptions,
}

/// Starts NAME's supervisor from the config; on a config error, says it on stderr and
/// gives the exit code.
fn start_in_process(name: &str, config: Option<&Path>) -> Result<Local, i32> {
    let out = Out {
        json: false,
        redactor: Redactor::default(),
    };
    let config = fleet::load(config).map_err(|e| out.error(&e))?;
    let Some(server) = config.server(name) else {
        return Err(out.error(&fleet::unknown_server(&config, name)));
    };
    let redactor = Redactor::new(server.secrets());
    let cfg = SupervisorConfig::from_server(server, seed()).map_err(|e| out.error(&e))?;
    let bus = Arc::new(EventBus::new(256));
    log_events(&bus);
    let options = GatewayOptions {
        initialize_wait: cfg.request_timeout.min(Duration::from_secs(10)),
        request_wait: cfg.request_timeout,
        redactor,
        hosts: Some(Hosts::new(bus.clone(), HostMode::InProcess)),
    };
    // The host's `initialize` comes at once: the first attempt waits for it, so the server
    // is initialized with the host's capabilities (roots, sampling, elicitation) the first
    // time instead of reconnected for them.
    cfg.hosts.hold_first_attempt(HOST_HOLD);
    Ok(Local {
        supervisor: Arc::new(Supervisor::spawn(cfg, bus)),
        options,
    })
}

/// Serves the host on `read`/`write` until it closes, then stops the supervisor.
async fn serve_in_process<R, W>(name: &str, local: Local, read: R, write: W) -> i32
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Local {
        supervisor,
        options,
    } = local;
    gateway::serve_lines(supervisor.clone(), read, write, options).await;
    tracing::info!("the host closed stdin; stopping `{name}`");
    match Arc::try_unwrap(supervisor) {
        Ok(s) => {
            let _ = tokio::time::timeout(STOP_LIMIT, s.stop()).await;
        }
        Err(_) => tracing::warn!("a request still held the supervisor; leaving it to the exit"),
    }
    EXIT_OK
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
pub fn log_events(bus: &EventBus) {
    let mut rx = bus.subscribe();
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv().await {
            if let Ok(line) = serde_json::to_string(&ev) {
                tracing::info!(target: "lifeline::connect", "{line}");
            }
        }
    });
}
