//! `lifeline connect` attached to the running app: the host's lines copied to the app and
//! back, and the host's session taken over in this process if the app quits (`takeover`).
//! `connect.rs` decides whether to attach; docs/gateway.md, "Attach mode".

use crate::connect::{self, Serve};
use crate::output::EXIT_OK;
use crate::takeover::Tap;
use lifeline_core::gateway;
use lifeline_core::lines::{LineRead, fmt_bytes, read_line_capped};
use lifeline_core::local_socket::Stream;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// How long, after the host closed stdin, the app may take to end the session.
const DETACH_WAIT: Duration = Duration::from_secs(5);

/// The longest line the app (or this process's own gateway) may send towards the host.
/// Its lines carry upstream answers, each capped on the way in (16 MiB by default) and then
/// wrapped by the gateway, so the cap is looser than the host's own (`gateway::MAX_LINE`):
/// it only keeps a broken peer from being unbounded memory.
const ANSWER_LINE_MAX: usize = 4 * gateway::MAX_LINE;

/// Exit code when the app went away under an attached host.
const EXIT_APP_GONE: i32 = 1;

/// Copies the host's lines to the app and the app's to the host, keeping a `Tap` on them.
/// The host closing stdin ends the session (the app cancels its calls, then closes). The
/// app closing first (it quit) hands the host's session to supervisors in this process
/// (`takeover`), so the host keeps working; only when the target cannot run here does the
/// bridge exit, with a line on stderr.
pub async fn pump(target: &Serve, config: Option<&Path>, app: BufReader<Stream>) -> i32 {
    tracing::info!("attached to the Lifeline app for {}", target.shown());
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
        take_over(target, config, tap, up, host_in, host_out).await
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

/// The app quit under the host: the target's supervisors start in this process and the
/// host's session continues on them (module `takeover`). `pending` is the start of a host
/// line the app never got.
async fn take_over(
    target: &Serve,
    config: Option<&Path>,
    tap: Tap,
    pending: Vec<u8>,
    mut host_in: BufReader<std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>>,
    mut host_out: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
) -> i32 {
    let shown = target.shown();
    let Ok(local) = connect::start_local(target, config) else {
        eprintln!(
            "lifeline connect: the Lifeline app closed the connection to {shown} (it quit), \
             and {shown} cannot run in this process (above); restart the server in your \
             client to reconnect"
        );
        return EXIT_APP_GONE;
    };
    eprintln!(
        "lifeline connect: the Lifeline app closed the connection to {shown} (it quit); \
         serving {shown} from this process now"
    );
    let mut over = tap.hand_over(target.server_name());
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
    let code = connect::serve_local(target, local, gw_read, gw_write).await;
    feeder.abort();
    let _ = tokio::time::timeout(DETACH_WAIT, relay).await;
    code
}
