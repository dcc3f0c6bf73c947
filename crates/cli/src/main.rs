//! `lifeline`: call and list tools on any MCP server from a terminal, and act as the client
//! the official conformance suite drives. Thin: every decision lives in lifeline-core.

mod bundle;
mod clients;
mod conformance;
mod connect;
mod fleet;
mod host_stdio;
mod import;
mod login;
mod output;
mod secrets;
mod serve;
mod table;
mod takeover;
mod target;
mod watch;

use clap::{Parser, Subcommand};
use lifeline_core::config::TransportConfig;
use lifeline_core::policy::fallback::is_initialize_answer_to_stateless;
use lifeline_core::protocol::mcp::Progress;
use lifeline_core::protocol::revision::{ProtocolChoice, Revision};
use lifeline_core::redact::Redactor;
use lifeline_core::session::RequestOptions;
use lifeline_core::session::negotiate::{self, Fallback, Step};
use lifeline_core::{Error, Session, SessionOptions};
use output::{EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL_ERROR, Out, content_text};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use target::{Target, is_direct};

#[derive(Parser)]
#[command(
    name = "lifeline",
    version,
    about = "Supervised MCP connections: call tools, list tools, run conformance"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct TargetArgs {
    /// An http(s):// URL, stdio:"COMMAND ARGS...", or the name of a configured server
    target: String,
    /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
    #[arg(long)]
    config: Option<PathBuf>,
    /// An HTTP header for every request, 'Name: value' (repeatable; values are kept secret)
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// An environment variable for a stdio server, NAME=VALUE (repeatable; values are kept secret)
    #[arg(long = "env", short = 'e')]
    env: Vec<String>,
    /// Print one JSON object per line; the last line is the outcome
    #[arg(long)]
    json: bool,
    /// Per-request timeout, e.g. 30s, 2m, 500ms (progress restarts it; 10 min at most)
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    timeout: Duration,
}

#[derive(Subcommand)]
enum Command {
    /// Call one tool and print its result
    Call {
        #[command(flatten)]
        target: TargetArgs,
        /// The tool's name
        tool: String,
        /// The tool's arguments as a JSON object
        #[arg(default_value = "{}")]
        args: String,
    },
    /// List the server's tools
    Tools {
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Supervise every configured server (or the TARGETs) and print each lifecycle event until stopped
    Watch {
        /// Servers to supervise instead of the config's: http(s):// URLs, stdio:"COMMAND ARGS..."
        targets: Vec<String>,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long, conflicts_with = "targets")]
        config: Option<PathBuf>,
        /// One JSON event per line (the schema in docs/events.md)
        #[arg(long)]
        json: bool,
        /// Stop after this long, e.g. 30s or 5m (default: until SIGINT/SIGTERM)
        #[arg(long = "for", value_parser = humantime::parse_duration)]
        duration: Option<Duration>,
    },
    /// Connect every configured server (or the TARGETs) once and report; non-zero if any is not ready
    Check {
        /// Servers to check instead of the config's: http(s):// URLs, stdio:"COMMAND ARGS..."
        targets: Vec<String>,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long, conflicts_with = "targets")]
        config: Option<PathBuf>,
        /// One JSON object with every server
        #[arg(long)]
        json: bool,
        /// How long to wait for the servers to settle
        #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
        deadline: Duration,
    },
    /// Import servers from another client's config (claude-desktop, claude-code, cursor, vscode, or a file)
    Import {
        /// claude-desktop | claude-code | cursor | vscode | PATH
        from: String,
        /// The config file to merge into (created if missing)
        #[arg(long)]
        config: Option<PathBuf>,
        /// Show what would be imported without saving
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Write a diagnostic bundle (a zip, secrets removed) after running every configured server briefly
    Bundle {
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where to write the zip, e.g. lifeline-diagnostics.zip
        #[arg(long)]
        out: PathBuf,
        /// Run the servers at most this long (less once every server has settled)
        #[arg(long = "for", value_parser = humantime::parse_duration, default_value = "30s")]
        duration: Duration,
        /// The log folder to take the tail of (default: the desktop app's log folder)
        #[arg(long)]
        logs: Option<PathBuf>,
        /// Print one JSON object: the path, size, file count and diagnostics id
        #[arg(long)]
        json: bool,
    },
    /// Route an AI client's servers through Lifeline, and undo it (docs/clients.md)
    Clients {
        #[command(subcommand)]
        command: clients::ClientsCommand,
    },
    /// Serve a configured server to an AI client over stdio, through Lifeline's supervisor
    /// (use as the client's command: `lifeline connect NAME`)
    Connect {
        /// The configured server's name
        name: String,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        /// Run the server's supervisor in this process even when the Lifeline app runs
        /// (by default the app's own supervisor serves the client)
        #[arg(long)]
        no_attach: bool,
    },
    /// Store, remove and list the secrets a config uses as ${keyring:NAME} (docs/secrets.md)
    Secrets {
        #[command(subcommand)]
        command: secrets::SecretsCommand,
    },
    /// Serve every configured server (or the TARGETs) to AI clients that take a URL, over
    /// Streamable HTTP at http://127.0.0.1:PORT/servers/NAME/mcp, until stopped
    #[command(args_conflicts_with_subcommands = true)]
    Serve {
        #[command(subcommand)]
        command: Option<serve::ServeCommand>,
        /// Servers to serve instead of the config's: http(s):// URLs, stdio:"COMMAND ARGS..."
        targets: Vec<String>,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long, conflicts_with = "targets")]
        config: Option<PathBuf>,
        /// The port on 127.0.0.1 (0: any free port, printed)
        #[arg(long, default_value_t = lifeline_core::gateway::http::DEFAULT_PORT)]
        port: u16,
        /// Take requests without a bearer token (for test suites: any program on this
        /// machine can then call the servers)
        #[arg(long)]
        no_auth: bool,
        /// Stop after this long, e.g. 30s or 5m (default: until SIGINT/SIGTERM)
        #[arg(long = "for", value_parser = humantime::parse_duration)]
        duration: Option<Duration>,
    },
    /// Sign in to a configured remote server with OAuth (opens the browser); the sign-in is
    /// kept in the OS keychain for the app and every run (docs/auth.md)
    Login {
        /// The configured server's name
        name: String,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the sign-in address instead of opening a browser
        #[arg(long)]
        no_browser: bool,
        #[arg(long)]
        json: bool,
    },
    /// Forget a server's OAuth sign-in (revoking its tokens where the server allows)
    Logout {
        /// The configured server's name
        name: String,
        /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The client the MCP conformance suite launches (scenario in MCP_CONFORMANCE_SCENARIO)
    Conformance {
        /// The scenario server's URL (appended by the runner)
        url: String,
    },
}

fn main() {
    init_logging();
    let cli = Cli::parse();
    // A host such as Claude Desktop starts `connect` with the desktop's minimal PATH.
    if matches!(cli.command, Command::Connect { .. }) {
        lifeline_core::login_path::adopt_in_background(lifeline_core::login_path::DEFAULT_TIMEOUT);
    }
    // Servers a crashed run left behind end now; this run's are recorded from here on.
    if let Some(dir) = lifeline_core::transport::runs::default_dir() {
        lifeline_core::transport::runs::track(&dir);
    }
    // A bridge serves one host and one server: on one thread, a message crosses it with no
    // wake-up of another worker (docs/benchmarks.md, "Through the gateway").
    let mut builder = if matches!(cli.command, Command::Connect { .. }) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    };
    let runtime = builder.enable_all().build().expect("a tokio runtime");
    let code = runtime.block_on(run(cli));
    // Do not wait for detached tasks (a hung GET listener) on the way out.
    runtime.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(code);
}

/// Logs go to stderr, off unless LIFELINE_LOG is set (e.g. LIFELINE_LOG=debug).
fn init_logging() {
    if let Ok(filter) = std::env::var("LIFELINE_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

async fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Call { target, tool, args } => call(target, tool, args).await,
        Command::Tools { target } => tools(target).await,
        Command::Watch {
            targets,
            config,
            json,
            duration,
        } => watch::watch(config, &targets, json, duration).await,
        Command::Check {
            targets,
            config,
            json,
            deadline,
        } => watch::check(config, &targets, json, deadline).await,
        Command::Import {
            from,
            config,
            dry_run,
            json,
        } => import::run(&from, config.as_deref(), dry_run, json),
        Command::Conformance { url } => conformance::run(&url).await,
        Command::Clients { command } => clients::run(command),
        Command::Secrets { command } => secrets::run(command),
        Command::Login {
            name,
            config,
            no_browser,
            json,
        } => login::login(&name, config.as_deref(), no_browser, json).await,
        Command::Logout { name, config, json } => {
            login::logout(&name, config.as_deref(), json).await
        }
        Command::Connect {
            name,
            config,
            no_attach,
        } => connect::run(&name, config.as_deref(), !no_attach).await,
        Command::Serve {
            command: Some(serve::ServeCommand::Token { command }),
            ..
        } => serve::token(command),
        Command::Serve {
            command: None,
            targets,
            config,
            port,
            no_auth,
            duration,
        } => {
            let args = serve::Args {
                targets,
                config,
                port,
                no_auth,
                duration,
            };
            serve::run(args).await
        }
        Command::Bundle {
            config,
            out,
            duration,
            logs,
            json,
        } => {
            let args = bundle::Args {
                config,
                out,
                duration,
                logs,
                json,
            };
            bundle::run(args).await
        }
    }
}

/// Parses the target and opens a session; on failure reports and returns the exit code.
async fn open(args: &TargetArgs) -> Result<(Session, Out), i32> {
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
        let legacy = matches!(server.transport, TransportConfig::Sse { .. })
            || server.protocol.pinned() == Some(Revision::LEGACY_SSE);
        let target = match (server.stdio_config(), server.http_config()) {
            (Some(stdio), _) => Target::Stdio(stdio),
            (None, Some(http)) if legacy => Target::LegacySse(http),
            (None, Some(http)) => Target::Http(http),
            (None, None) => unreachable!("a server is stdio or http(s)"),
        };
        (target, config.secrets(), server.protocol)
    };
    out.redactor = Redactor::new(secrets);
    target.set_http_request_timeout(args.timeout);
    let options = SessionOptions {
        request_timeout: args.timeout,
        pinned: protocol.pinned(),
        ..SessionOptions::default()
    };
    match interruptible(connect(&target, protocol, options)).await {
        Some(Ok(session)) => Ok((session, out)),
        Some(Err(e)) => Err(out.error(&e)),
        None => Err(EXIT_INTERRUPTED),
    }
}

/// Opens `target` and finds the protocol the way the supervisor does
/// (`session::negotiate`): under `auto` over Streamable HTTP, the stateless revision first,
/// then `initialize`, then the legacy HTTP+SSE transport, each only on the spec's signals.
async fn connect(
    target: &Target,
    protocol: ProtocolChoice,
    options: SessionOptions,
) -> Result<Session, Error> {
    let open = || target.open();
    let legacy_target = target.fallback(protocol);
    let legacy = legacy_target.as_ref().map(|t| move || t.open());
    let fallback = Fallback {
        choice: protocol,
        open: &open,
        legacy: legacy.as_ref().map(|l| l as _),
        stateless_first: matches!(target, Target::Http(_)),
    };
    let mut opts = |_| Ok(options.clone());
    let (session, step) = negotiate::connect(&fallback, None, &mut opts, |e, _| e).await?;
    if step != Step::Stateless || !fallback.steps().contains(&Step::Initialize) {
        return Ok(session);
    }
    // As the supervisor does: a server whose discovery lists the stateless revision but that
    // answers its tool listing the way older servers do gets one `initialize` attempt.
    match session.list_tools().await {
        Err(e) if is_initialize_answer_to_stateless(&e) => {
            session.close().await;
            let retried =
                negotiate::connect(&fallback, Some(Step::Initialize), &mut opts, |e, _| e);
            retried.await.map(|(s, _)| s).map_err(|later| {
                let message = format!(
                    "{}; `initialize` was tried because the server, though its server/discover \
                     lists 2026-07-28, answered tools/list the way older servers answer ({})",
                    later.message(),
                    e.message()
                );
                later.restated(message)
            })
        }
        _ => Ok(session),
    }
}

/// Runs `fut` unless Ctrl-C comes first (then the future is dropped, which cancels it).
async fn interruptible<T>(fut: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        v = fut => Some(v),
        _ = tokio::signal::ctrl_c() => None,
    }
}

async fn call(args: TargetArgs, tool: String, raw_args: String) -> i32 {
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

async fn tools(args: TargetArgs) -> i32 {
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
