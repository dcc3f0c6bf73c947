//! `lifeline call` and `lifeline tools`: one tool call, or the tool list, on one TARGET. A URL
//! or stdio command is connected once (`Target::connect`); a configured server's name goes
//! through a supervisor for `call`, and is connected once with its settings for `tools`.

use crate::fleet;
use crate::output::{EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL_ERROR, Out, content_text};
use crate::target::{Target, is_direct};
use lifeline_core::protocol::mcp::Progress;
use lifeline_core::protocol::revision::ProtocolChoice;
use lifeline_core::redact::Redactor;
use lifeline_core::session::RequestOptions;
use lifeline_core::{Error, Session, SessionOptions};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args)]
pub struct TargetArgs {
    /// An http(s):// URL, stdio:"COMMAND ARGS...", or the name of a configured server
    pub target: String,
    /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// An HTTP header for every request, 'Name: value' (repeatable; values are kept secret)
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// An environment variable for a stdio server, NAME=VALUE (repeatable; values are kept secret)
    #[arg(long = "env", short = 'e')]
    pub env: Vec<String>,
    /// Print one JSON object per line; the last line is the outcome
    #[arg(long)]
    pub json: bool,
    /// Per-request timeout, e.g. 30s, 2m, 500ms (progress restarts it; 10 min at most)
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub timeout: Duration,
}

/// Parses the target and opens a session; on failure reports and returns the exit code.
async fn open(args: &TargetArgs) -> Result<(Arc<Session>, Out), i32> {
    let mut out = Out {
        json: args.json,
        redactor: Redactor::default(),
    };
    let (mut target, secrets, protocol) = if is_direct(&args.target) {
        match Target::parse(&args.target, &args.headers, &args.env) {
            Ok(t) => {
                let secrets = t.secrets();
                (t, secrets, ProtocolChoice::Auto)
            }
            Err(e) => return Err(out.error(&e)),
        }
    } else {
        // A configured server's name: connect to it directly, once, with its settings.
        let config = fleet::load(args.config.as_deref()).map_err(|e| out.error(&e))?;
        let server = config
            .server(&args.target)
            .ok_or_else(|| out.error(&fleet::unknown_server(&config, &args.target)))?;
        let target = Target::from_server(server);
        (target, config.secrets(), server.protocol)
    };
    out.redactor = Redactor::new(secrets);
    target.set_http_request_timeout(args.timeout);
    let options = SessionOptions {
        request_timeout: args.timeout,
        pinned: protocol.pinned(),
        ..SessionOptions::default()
    };
    match interruptible(target.connect(protocol, options)).await {
        Some(Ok(session)) => Ok((session, out)),
        Some(Err(e)) => Err(out.error(&e)),
        None => Err(EXIT_INTERRUPTED),
    }
}

/// Runs `fut` unless Ctrl-C comes first (then the future is dropped, which cancels it).
pub async fn interruptible<T>(fut: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        v = fut => Some(v),
        _ = tokio::signal::ctrl_c() => None,
    }
}

pub async fn call(args: TargetArgs, tool: String, raw_args: String) -> i32 {
    let arguments: Value = match serde_json::from_str(&raw_args) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            let out = Out {
                json: args.json,
                redactor: Redactor::default(),
            };
            return out.error(&Error::config(format!(
                "ARGS_JSON must be a JSON object, like '{{\"text\":\"hi\"}}'; got {}",
                lifeline_core::redact::cap(&raw_args, 80)
            )));
        }
    };
    if !is_direct(&args.target) {
        return supervised_call(args, tool, arguments).await;
    }
    let (session, out) = match open(&args).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = RequestOptions {
        timeout: Some(args.timeout),
        progress: Some(progress_tx),
    };
    // Boxed so that it can be dropped (which cancels it) before the session closes.
    let mut call = Box::pin(session.call_tool(&tool, arguments, opts));
    let show = |p: Progress| {
        if out.json {
            out.json_line(&json!({ "progress": p }));
        } else {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = p
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            out.note(&format!("progress {}{total}{msg}", p.progress));
        }
    };
    let outcome = loop {
        tokio::select! {
            r = &mut call => break Some(r),
            Some(p) = progress_rx.recv() => show(p),
            _ = tokio::signal::ctrl_c() => break None,
        }
    };
    drop(call);
    // Progress that came with the answer is still shown, before the outcome line.
    while let Ok(p) = progress_rx.try_recv() {
        show(p);
    }
    let code = match outcome {
        None => {
            out.note("interrupted: the call was cancelled (notifications/cancelled sent)");
            EXIT_INTERRUPTED
        }
        Some(Err(e)) => out.error(&e),
        Some(Ok(result)) => print_result(&out, &result),
    };
    session.close().await;
    code
}

pub async fn tools(args: TargetArgs) -> i32 {
    let (session, out) = match open(&args).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let code = match interruptible(session.list_tools()).await {
        None => EXIT_INTERRUPTED,
        Some(Err(e)) => out.error(&e),
        Some(Ok(tools)) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": { "tools": tools } }));
            } else {
                let server = session.server().and_then(|s| s.server_info.as_ref());
                if let (Some(info), Some(init)) = (server, session.server()) {
                    out.note(&format!(
                        "{} {} · protocol {}",
                        info.name, info.version, init.protocol_version
                    ));
                }
                let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
                for t in &tools {
                    let desc = t
                        .description
                        .as_deref()
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or("");
                    out.line(format!("{:width$}  {desc}", t.name).trim_end());
                }
                out.note(&format!(
                    "{} tool{}",
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" }
                ));
            }
            EXIT_OK
        }
    };
    session.close().await;
    code
}

/// `lifeline call SERVER TOOL`: through a supervisor, which connects (retrying per the
/// server's policy) for up to `--timeout`, then makes the call once.
async fn supervised_call(args: TargetArgs, tool: String, arguments: Value) -> i32 {
    use lifeline_core::events::{EventBus, StateName};
    use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
    let mut out = Out {
        json: args.json,
        redactor: Redactor::default(),
    };
    let config = match fleet::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    out.redactor = Redactor::new(config.secrets());
    let Some(server) = config.server(&args.target) else {
        return out.error(&fleet::unknown_server(&config, &args.target));
    };
    let mut cfg = match SupervisorConfig::from_server(server, std::process::id().into()) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    cfg.request_timeout = args.timeout;
    cfg.disabled = false;
    let supervisor = Supervisor::spawn(cfg, Arc::new(EventBus::new(1024)));
    let settled = |s: &lifeline_core::supervisor::Snapshot| {
        matches!(
            s.state.state,
            Some(StateName::Ready | StateName::Retired | StateName::GaveUp)
        )
    };
    let waited = tokio::time::timeout(args.timeout, supervisor.wait_for(settled));
    let code = match interruptible(waited).await {
        None => EXIT_INTERRUPTED,
        // Not ready in time, or never will be: the call explains the state and the cause.
        Some(_) => match interruptible(supervisor.call(&tool, arguments)).await {
            None => EXIT_INTERRUPTED,
            Some(Err(e)) => out.error(&e),
            Some(Ok(result)) => print_result(&out, &result),
        },
    };
    supervisor.stop().await;
    code
}

/// Prints a tool result; exit 1 when the tool reported an error (`isError`).
fn print_result(out: &Out, result: &Value) -> i32 {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if out.json {
        out.json_line(&json!({ "ok": true, "result": result }));
    } else if is_error {
        out.note(&format!(
            "the tool reported an error:\n{}",
            content_text(result)
        ));
    } else {
        out.line(&content_text(result));
    }
    if is_error { EXIT_TOOL_ERROR } else { EXIT_OK }
}
