//! `lifeline clients list|connect|restore|show`: route an AI client's servers through
//! `lifeline connect NAME`, or put them behind one entry serving a profile, undo it, and
//! show what the client sees through Lifeline. The planning, backup and restore live in
//! `lifeline_core::config::clients`; this prints what they did.

mod connect;
mod list;
mod reach;
mod show;

use crate::output::{EXIT_OK, Out};
use clap::Subcommand;
use lifeline_core::Error;
use lifeline_core::config;
use lifeline_core::config::clients::{Choice, Client, ClientError, backup};
use lifeline_core::redact::Redactor;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub enum ClientsCommand {
    /// The clients found on this machine and which of their servers go through Lifeline
    List {
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a client's config so the chosen servers go through `lifeline connect NAME`,
    /// or so one entry serves a profile in place of the servers it serves
    Connect {
        /// claude-desktop | claude-code | cursor | vscode
        client: String,
        /// A server to route, by the client's name for it (repeatable)
        #[arg(long = "server")]
        servers: Vec<String>,
        /// Every server of the client that Lifeline can run
        #[arg(long, conflicts_with = "servers")]
        all: bool,
        /// One entry running `lifeline connect --profile P` in place of the servers profile P
        /// serves (`default`: every server)
        #[arg(long, value_name = "P", conflicts_with_all = ["servers", "all"])]
        profile: Option<String>,
        /// With --profile: the name of that entry in the client's config (default: lifeline)
        #[arg(long, requires = "profile")]
        entry: Option<String>,
        /// Print the diff and write nothing
        #[arg(long)]
        dry_run: bool,
        /// Lifeline's config, where servers are imported (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        /// The client's config file (default: where the client keeps it)
        #[arg(long)]
        client_config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Put back the client's config as it was before the last `clients connect`
    Restore {
        /// claude-desktop | claude-code | cursor | vscode
        client: String,
        /// Restore even if the client's config changed since Lifeline wrote it
        #[arg(long)]
        force: bool,
        /// The client's config file (default: the one last connected)
        #[arg(long)]
        client_config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// What a client sees through Lifeline: each profile's tools under the names it gets,
    /// their estimated tokens, and the client's tool limit
    Show(show::ShowArgs),
}

pub async fn run(command: ClientsCommand) -> i32 {
    match command {
        ClientsCommand::List { json } => list::list(&out(json)),
        ClientsCommand::Connect {
            client,
            servers,
            all,
            profile,
            entry,
            dry_run,
            config,
            client_config,
            json,
        } => {
            let choice = if all {
                Choice::All
            } else {
                Choice::Named(servers)
            };
            let args = connect::ConnectArgs {
                choice,
                profile,
                entry,
                dry_run,
                config,
                client_config,
            };
            with_client(&client, &out(json), |c, out| {
                connect::connect(c, &args, out)
            })
        }
        ClientsCommand::Restore {
            client,
            force,
            client_config,
            json,
        } => with_client(&client, &out(json), |c, out| {
            restore(c, force, client_config.as_deref(), out)
        }),
        ClientsCommand::Show(args) => show::show(&args, out(args.json)).await,
    }
}

fn out(json: bool) -> Out {
    Out {
        json,
        redactor: Redactor::default(),
    }
}

fn with_client(id: &str, out: &Out, f: impl FnOnce(Client, &Out) -> i32) -> i32 {
    match Client::parse(id) {
        Ok(c) => f(c, out),
        Err(e) => out.error(&Error::from(e)),
    }
}

pub(crate) fn state_path(out: &Out) -> Result<PathBuf, i32> {
    let state = backup::default_state_path();
    backup::require_state(state.as_deref())
        .map(Path::to_owned)
        .map_err(|e| out.error(&Error::from(e)))
}

/// The client's file: the one given, else the first of its well-known paths that exists.
pub(crate) fn client_file(client: Client, given: Option<&Path>) -> Result<PathBuf, ClientError> {
    if let Some(p) = given {
        return Ok(p.to_owned());
    }
    let paths = client.paths();
    paths.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        ClientError::new(
            format!("no {} config found", client.id()),
            paths
                .iter()
                .map(|p| config::Problem::new(p.display().to_string(), "not found"))
                .collect(),
            "Point to it with --client-config PATH.",
        )
    })
}

fn restore(client: Client, force: bool, path: Option<&Path>, out: &Out) -> i32 {
    let state = match state_path(out) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match backup::restore(client, path, force, &state) {
        Ok(record) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": {
                    "client": client.id(), "path": record.path, "backup": record.backup,
                    "servers": record.servers,
                }}));
            } else {
                out.line(&format!(
                    "restored {} from {} (as before {}); restart {} to use it",
                    record.path.display(),
                    record.backup.display(),
                    record.at,
                    client.id()
                ));
            }
            EXIT_OK
        }
        Err(e) => out.error(&Error::from(e)),
    }
}
