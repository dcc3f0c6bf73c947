//! `lifeline serve`: every configured server (or the TARGETs) supervised in this process and
//! served to AI clients that take a URL, over Streamable HTTP at
//! `http://127.0.0.1:PORT/servers/NAME/mcp` (`lifeline_core::gateway::http`), until
//! SIGINT/SIGTERM. `lifeline serve token add|list|show|remove CLIENT` manages the bearer
//! tokens clients must send, `token add CLIENT --profile P` one that opens profile P alone.
//! docs/gateway.md, "The local HTTP endpoint".

use crate::fleet;
use crate::output::{EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, Out};
use clap::Subcommand;
use lifeline_core::events::EventBus;
use lifeline_core::gateway::aggregate;
use lifeline_core::gateway::attach::Refusal;
use lifeline_core::gateway::http::{self, Auth, Endpoint, Resolve, Tokens, tokens};
use lifeline_core::gateway::{GatewayOptions, Served, Target};
use lifeline_core::supervisor::{Fleet, Supervisor};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Subcommand)]
pub enum ServeCommand {
    /// Manage the bearer tokens clients send (`Authorization: Bearer TOKEN`)
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Make a token for CLIENT (a new one replaces its old one) and print how to use it
    Add {
        /// A name for the client: claude-code, vscode, cursor, …
        client: String,
        /// Bind the token to profile P: it opens /mcp as P, /profiles/P/mcp, and nothing else
        #[arg(long, value_name = "P")]
        profile: Option<String>,
        /// The config whose profiles --profile is checked against (default: $LIFELINE_CONFIG,
        /// else the platform config dir's lifeline/config.json)
        #[arg(long, requires = "profile")]
        config: Option<PathBuf>,
        /// The port the endpoint listens on, for the printed URLs
        #[arg(long, default_value_t = http::DEFAULT_PORT)]
        port: u16,
    },
    /// List the clients that have a token (not the tokens), and the profile each is bound to
    List,
    /// Print CLIENT's token
    Show { client: String },
    /// Remove CLIENT's token: its requests are refused and its open sessions end
    Remove { client: String },
}

#[derive(clap::Args)]
pub struct Args {
    /// Servers to serve instead of the config's: http(s):// URLs, stdio:"COMMAND ARGS..."
    pub targets: Vec<String>,
    /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
    #[arg(long, conflicts_with = "targets")]
    pub config: Option<PathBuf>,
    /// The port on 127.0.0.1 (0: any free port, printed)
    #[arg(long, default_value_t = http::DEFAULT_PORT)]
    pub port: u16,
    /// Take requests without a bearer token (for test suites: any program on this
    /// machine can then call the servers)
    #[arg(long)]
    pub no_auth: bool,
    /// Stop after this long, e.g. 30s or 5m (default: until SIGINT/SIGTERM)
    #[arg(long = "for", value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
}

pub async fn run(args: Args) -> i32 {
    let (config, out) = match fleet::load_for_output(args.config.as_deref(), &args.targets, false) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let auth = if args.no_auth {
        // Not through `out`: its redactor knows nothing secret here, and its free-text
        // rules would mask words of this line.
        eprintln!(
            "lifeline serve: --no-auth: any program on this machine can call these servers \
             (meant for test suites)"
        );
        Auth::Open
    } else {
        let Some(path) = tokens::default_path() else {
            out.note("lifeline serve: no data directory for the tokens file; use --no-auth");
            return EXIT_USAGE;
        };
        Auth::Tokens(Tokens::new(path))
    };
    // Room for the endpoint's connections; the servers get the original limit back.
    lifeline_core::nofile::raise();
    crate::connect::open_pins(&config, "lifeline serve");
    let stopped = fleet::until_stopped(args.duration);
    let bus = Arc::new(EventBus::new(1024));
    let fleet = match Fleet::start(&config, bus) {
        Ok(f) => f,
        Err(e) => return out.error(&e),
    };
    let served: BTreeMap<String, (Arc<Supervisor>, GatewayOptions)> = config
        .servers
        .iter()
        .filter_map(|server| {
            let supervisor = fleet.get(&server.name)?.share();
            Some((
                server.name.clone(),
                (Arc::new(supervisor), GatewayOptions::for_server(server)),
            ))
        })
        .collect();
    let served = Arc::new(served);
    let resolve: Resolve = {
        let served = served.clone();
        let config = Arc::new(config.clone());
        Arc::new(move |target: Target| {
            let found = match target {
                Target::Server(name) => match served.get(&name) {
                    Some((s, o)) => Ok(Served::Server(s.clone(), o.clone())),
                    None => Err((
                        Refusal::Unknown,
                        format!(
                            "no server named `{name}` here (served: {})",
                            served.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    )),
                },
                Target::Profile(name) => {
                    let share = |server: &str| served.get(server).map(|(s, _)| s.clone());
                    aggregate::serve_profile(&config, &name, share, None)
                }
            };
            Box::pin(async move { found })
        })
    };
    let endpoint = match Endpoint::bind(args.port, resolve, auth).await {
        Ok(e) => e,
        Err(e) => {
            out.note(&format!(
                "lifeline serve: {}",
                http::bind_problem(args.port, &e, "pick another with --port (0: any free port)")
            ));
            drop(served);
            fleet.stop().await;
            return EXIT_UNAVAILABLE;
        }
    };
    let port = endpoint.addr().port();
    out.line(&format!(
        "lifeline serve: listening on http://127.0.0.1:{port}"
    ));
    for name in served.keys() {
        out.line(&format!("  {name}  {}", endpoint.url(name)));
    }
    for profile in config.profile_names() {
        out.line(&format!(
            "  profile {profile}  {}",
            http::profile_url(port, profile)
        ));
    }
    if !args.no_auth {
        out.line(
            "Clients send `Authorization: Bearer TOKEN`; `lifeline serve token add CLIENT` makes one.",
        );
    }
    stopped.await;
    endpoint.stop().await;
    drop(served);
    fleet.stop().await;
    EXIT_OK
}

pub fn token(command: TokenCommand) -> i32 {
    let out = Out {
        json: false,
        redactor: Default::default(),
    };
    // `lifeline serve token add: …`, never `token: …`, which the redactor reads as a header
    // line and masks the next word of.
    let verb = match &command {
        TokenCommand::Add { .. } => "add",
        TokenCommand::List => "list",
        TokenCommand::Show { .. } => "show",
        TokenCommand::Remove { .. } => "remove",
    };
    let Some(path) = tokens::default_path() else {
        out.note(&format!(
            "lifeline serve token {verb}: no data directory for the tokens file"
        ));
        return EXIT_USAGE;
    };
    let failed = |e: std::io::Error| {
        out.note(&format!("lifeline serve token {verb}: {e}"));
        EXIT_USAGE
    };
    match command {
        TokenCommand::Add {
            client,
            profile,
            config,
            port,
        } => {
            if let Some(p) = &profile
                && let Err(why) = check_profile(p, config.as_deref(), &out)
            {
                out.note(&format!("lifeline serve token {verb}: {why}"));
                return EXIT_USAGE;
            }
            match tokens::add_bound(&path, &client, profile.as_deref()) {
                Ok(token) => {
                    // Printed as is: `Out` would scrub the token, which is the point here.
                    let usage = tokens::usage(&path, &client, &token, profile.as_deref(), port);
                    print!("{usage}");
                    EXIT_OK
                }
                Err(e) => failed(e),
            }
        }
        TokenCommand::List => match tokens::list(&path) {
            Ok(clients) if clients.is_empty() => {
                out.line(&format!("no client has a token ({})", path.display()));
                EXIT_OK
            }
            Ok(clients) => {
                for c in clients {
                    let bound = c
                        .profile
                        .map(|p| format!(", bound to profile {p}"))
                        .unwrap_or_default();
                    out.line(&format!("{}  (made {}{bound})", c.name, c.created));
                }
                EXIT_OK
            }
            Err(e) => failed(e),
        },
        TokenCommand::Show { client } => match tokens::get(&path, &client) {
            Ok(Some(token)) => {
                println!("{token}");
                EXIT_OK
            }
            Ok(None) => {
                out.note(&format!(
                    "lifeline serve token {verb}: `{client}` has no token (lifeline serve token add {client})"
                ));
                EXIT_USAGE
            }
            Err(e) => failed(e),
        },
        TokenCommand::Remove { client } => match tokens::remove(&path, &client) {
            Ok(true) => {
                out.line(&format!("removed `{client}`'s token"));
                EXIT_OK
            }
            Ok(false) => {
                out.note(&format!(
                    "lifeline serve token {verb}: `{client}` has no token"
                ));
                EXIT_USAGE
            }
            Err(e) => failed(e),
        },
    }
}

/// Why a token cannot be bound to `profile`: its name, or a profile the config lacks. The
/// config `--config` names must load; the default one need not (then only the name is
/// checked, and that is said).
fn check_profile(profile: &str, config: Option<&Path>, out: &Out) -> Result<(), String> {
    tokens::check_profile(profile, None)?;
    match fleet::load(config) {
        Ok(loaded) => tokens::check_profile(profile, Some(&loaded)),
        Err(e) if config.is_some() => Err(e.to_string()),
        Err(e) => {
            let why = e.to_string();
            out.note(&format!(
                "lifeline serve token add: profile `{profile}` is not checked against the \
                 config, which did not load ({})",
                why.lines().next().unwrap_or_default()
            ));
            Ok(())
        }
    }
}
