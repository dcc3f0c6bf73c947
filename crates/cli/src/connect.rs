//! `lifeline connect NAME`, `--all` and `--profile P`: the stdio MCP server a host (Claude
//! Desktop, Cursor, Claude Code, VS Code) runs in place of the real server, so the host's
//! session survives the server's crashes and reconnects. NAME is one server; `--profile P`
//! is every enabled server of profile P behind one endpoint (`--all`: `default`), its tools
//! named `server__tool` to fit the host (`lifeline_core::gateway::aggregate`). When the
//! Lifeline app runs, it attaches to the app's own supervisors over
//! `lifeline_core::local_socket` (the handshake is `gateway::attach`) and copies lines
//! between stdio and the app (`bridge.rs`), taking the host's session over with supervisors
//! of its own if the app quits; otherwise (no app, `--no-attach`, or the app refused) it
//! runs them in this process and serves the host through `lifeline_core::gateway`. stdout
//! carries only JSON-RPC; everything else goes to stderr. Ends when the host closes stdin,
//! stopping in-process supervisors and their child processes (bounded). docs/gateway.md
//! says what falls back when.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::events::{EventBus, HostMode};
use lifeline_core::gateway::aggregate::{self, AggregateOptions};
use lifeline_core::gateway::attach::{self, Asked, Request};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::names::{ClientKind, store};
use lifeline_core::gateway::{self, GatewayOptions, Served, Target};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use lifeline_core::{Error, ErrorKind};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long stopping the supervisors may take on the way out (the stdio shutdown sequence
/// is about 4 s; disposal is bounded at 10 s).
const STOP_LIMIT: Duration = Duration::from_secs(15);

/// How long the in-process supervisors' first attempt waits for the host's `initialize`.
const HOST_HOLD: Duration = Duration::from_secs(5);

/// What this bridge serves.
pub enum Serve {
    /// One server, as itself.
    Server(String),
    /// A profile's servers behind one endpoint, named for this host.
    Profile {
        name: String,
        client: Option<ClientKind>,
        entry: String,
    },
}

impl Serve {
    /// A profile to serve; a `--client` that is not a known host is a usage error.
    pub fn profile(name: &str, client: Option<&str>, entry: Option<&str>) -> Result<Serve, i32> {
        let client = client
            .map(str::parse::<ClientKind>)
            .transpose()
            .map_err(|e| out().error(&Error::new(ErrorKind::Config, format!("--client: {e}"))))?;
        Ok(Serve::Profile {
            name: name.to_owned(),
            client,
            entry: entry.unwrap_or("lifeline").to_owned(),
        })
    }

    fn target(&self) -> Target {
        match self {
            Serve::Server(name) => Target::Server(name.clone()),
            Serve::Profile { name, .. } => Target::Profile(name.clone()),
        }
    }

    pub fn shown(&self) -> String {
        self.target().shown()
    }

    /// The name the host knows the server by: its own, or the aggregated endpoint's.
    pub fn server_name(&self) -> &str {
        match self {
            Serve::Server(name) => name,
            Serve::Profile { .. } => "lifeline",
        }
    }
}

fn out() -> Out {
    Out {
        json: false,
        redactor: Redactor::default(),
    }
}

pub async fn run(target: Serve, config: Option<&Path>, attach: bool) -> i32 {
    if attach {
        match try_attach(&target, config).await {
            Asked::Attached(app) => return crate::bridge::pump(&target, config, app).await,
            Asked::NoApp => {}
            Asked::Refused(why) => eprintln!(
                "lifeline connect: {why}; running {} in this process instead",
                target.shown()
            ),
        }
    }
    let local = match start_local(&target, config) {
        Ok(local) => local,
        Err(code) => return code,
    };
    let host = crate::host_stdio::open();
    serve_local(&target, local, host.read, host.write).await
}

/// Asks the running app, if any, to serve the host. Only an explicit `--config` is sent:
/// the app attaches then only if it runs that file.
async fn try_attach(target: &Serve, config: Option<&Path>) -> Asked {
    let Some(dir) =
        lifeline_core::history::resolve_path().and_then(|p| p.parent().map(Path::to_owned))
    else {
        return Asked::NoApp;
    };
    let request = Request {
        target: target.target(),
        config: config.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
    };
    attach::ask(&dir, &request).await
}

/// Supervisors of this process's own and how the host is served on them.
pub struct Local {
    served: Served,
    supervisors: Vec<Arc<Supervisor>>,
}

/// Starts the target's supervisors from the config (each holding its first attempt for the
/// host's `initialize`, so it is initialized with the host's capabilities the first time);
/// on a config error, says it on stderr and gives the exit code.
pub fn start_local(target: &Serve, config: Option<&Path>) -> Result<Local, i32> {
    let out = out();
    let config = fleet::load(config).map_err(|e| out.error(&e))?;
    open_pins(&config, "lifeline connect");
    let bus = Arc::new(EventBus::new(256));
    log_events(&bus);
    let hosts = Hosts::new(bus.clone(), HostMode::InProcess);
    match target {
        Serve::Server(name) => {
            let Some(server) = config.server(name) else {
                return Err(out.error(&fleet::unknown_server(&config, name)));
            };
            let cfg = SupervisorConfig::from_server(server, seed()).map_err(|e| out.error(&e))?;
            let options = GatewayOptions {
                initialize_wait: cfg.request_timeout.min(Duration::from_secs(10)),
                request_wait: cfg.request_timeout,
                redactor: Redactor::new(server.secrets()),
                hosts: Some(hosts),
            };
            cfg.hosts.hold_first_attempt(HOST_HOLD);
            let supervisor = Arc::new(Supervisor::spawn(cfg, bus));
            Ok(Local {
                supervisors: vec![supervisor.clone()],
                served: Served::Server(supervisor, options),
            })
        }
        Serve::Profile {
            name,
            client,
            entry,
        } => {
            let Some(profile) = config.profile(name) else {
                let known = config.profile_names().join(", ");
                let why = format!(
                    "there is no profile `{name}` in the config; its profiles are: {known}"
                );
                return Err(out.error(&Error::new(ErrorKind::Config, why)));
            };
            let servers = aggregate::start_local(&config, &profile, &bus, Some(&hosts), HOST_HOLD)
                .map_err(|e| out.error(&e))?;
            let options = AggregateOptions {
                profile,
                separator: config.separator.clone(),
                client: *client,
                entry: entry.clone(),
                names: store::default_path(),
                ..AggregateOptions::default()
            };
            Ok(Local {
                supervisors: servers.iter().map(|(s, _)| s.clone()).collect(),
                served: Served::Aggregate(servers, options),
            })
        }
    }
}

/// Serves the host on `read`/`write` until it closes, then stops the supervisors.
pub async fn serve_local<R, W>(target: &Serve, local: Local, read: R, write: W) -> i32
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Local {
        served,
        supervisors,
    } = local;
    gateway::serve_session(served.start(), read, write).await;
    tracing::info!("the host closed stdin; stopping {}", target.shown());
    aggregate::stop_local(supervisors, STOP_LIMIT).await;
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

/// The supervisors' events on stderr (with LIFELINE_LOG=info), never stdout.
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

/// Opens this process's tool pins (docs/trust.md) before any supervisor starts: hosts are
/// shown only approved tool definitions. A pins file that could not be used is said on
/// stderr (every tool is held until reviewed). Also starts the watch on the machine's
/// sleep (`system::watch`), so a wake checks every server at once.
pub fn open_pins(config: &lifeline_core::config::Config, who: &str) {
    lifeline_core::system::watch::start();
    let servers = config.servers.iter().map(|s| s.name.as_str());
    let path = lifeline_core::pins::store::default_path();
    if let Some(problem) = lifeline_core::pins::book::open_for_hosts(path, servers) {
        eprintln!("{who}: {problem}");
    }
}
