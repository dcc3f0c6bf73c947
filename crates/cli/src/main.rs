//! `lifeline`: call and list tools on any MCP server from a terminal, and act as the client
//! the official conformance suite drives. Thin: every decision lives in lifeline-core.

mod bridge;
mod bundle;
mod call;
mod clients;
mod conformance;
mod connect;
mod fleet;
mod host_stdio;
mod import;
mod login;
mod output;
mod review;
mod secrets;
mod serve;
mod table;
mod takeover;
mod target;
mod watch;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

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

#[derive(Subcommand)]
enum Command {
    /// Call one tool and print its result
    Call {
        #[command(flatten)]
        target: call::TargetArgs,
        /// The tool's name
        tool: String,
        /// The tool's arguments as a JSON object
        #[arg(default_value = "{}")]
        args: String,
    },
    /// List the server's tools; `review`, `approve`, `reject`: what Lifeline holds back
    /// from hosts until you look (docs/trust.md)
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Tools {
        #[command(subcommand)]
        command: Option<review::ToolsCommand>,
        #[command(flatten)]
        target: Option<call::TargetArgs>,
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
    Bundle(bundle::Args),
    /// Route an AI client's servers through Lifeline, and undo it (docs/clients.md)
    Clients {
        #[command(subcommand)]
        command: clients::ClientsCommand,
    },
    /// Serve a configured server to an AI client over stdio, through Lifeline's supervisor
    /// (use as the client's command: `lifeline connect NAME`, or `--all` for every server
    /// behind one entry)
    Connect {
        /// The configured server's name
        #[arg(required_unless_present_any = ["all", "profile"], conflicts_with_all = ["all", "profile"])]
        name: Option<String>,
        /// Every enabled server behind this one entry, tools named `server__tool` (the
        /// `default` profile)
        #[arg(long, conflicts_with = "profile")]
        all: bool,
        /// The servers and tools of profile P (`lifeline.profiles` in the config) behind
        /// this one entry
        #[arg(long, value_name = "P")]
        profile: Option<String>,
        /// With --all or --profile: the client, for its tool-name limit (claude-code,
        /// claude-desktop, cursor, vscode, codex, gemini, windsurf; default: what the client
        /// says it is)
        #[arg(long)]
        client: Option<String>,
        /// With --all or --profile: the name of this entry in the client's config
        /// (default: lifeline)
        #[arg(long)]
        entry: Option<String>,
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
        #[command(flatten)]
        args: serve::Args,
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
        Command::Call { target, tool, args } => call::call(target, tool, args).await,
        Command::Tools {
            command: Some(command),
            ..
        } => review::run(command),
        Command::Tools {
            target: Some(target),
            ..
        } => call::tools(target).await,
        Command::Tools { .. } => unreachable!("clap requires a target or a subcommand"),
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
        Command::Clients { command } => clients::run(command).await,
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
            profile,
            client,
            entry,
            ..
        } => {
            let target = match name {
                Some(name) => connect::Serve::Server(name),
                None => {
                    let profile = profile
                        .as_deref()
                        .unwrap_or(lifeline_core::config::DEFAULT_PROFILE);
                    match connect::Serve::profile(profile, client.as_deref(), entry.as_deref()) {
                        Ok(target) => target,
                        Err(code) => return code,
                    }
                }
            };
            connect::run(target, config.as_deref(), !no_attach).await
        }
        Command::Serve {
            command: Some(serve::ServeCommand::Token { command }),
            ..
        } => serve::token(command),
        Command::Serve {
            command: None,
            args,
        } => serve::run(args).await,
        Command::Bundle(args) => bundle::run(args).await,
    }
}
