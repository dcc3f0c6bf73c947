//! `lifeline clients list|connect|restore`: route an AI client's servers through
//! `lifeline connect NAME` and undo it. The planning, backup and restore live in
//! `lifeline_core::config::clients`; this prints what they did.

use crate::output::{EXIT_OK, EXIT_USAGE, Out};
use clap::Subcommand;
use lifeline_core::Error;
use lifeline_core::config::clients::{self, Choice, Client, ClientError, Request, backup};
use lifeline_core::config::{self, import};
use lifeline_core::redact::Redactor;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Subcommand)]
pub enum ClientsCommand {
    /// The clients found on this machine and which of their servers go through Lifeline
    List {
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a client's config so the chosen servers go through `lifeline connect NAME`
    Connect {
        /// claude-desktop | claude-code | cursor | vscode
        client: String,
        /// A server to route, by the client's name for it (repeatable)
        #[arg(long = "server")]
        servers: Vec<String>,
        /// Every server of the client that Lifeline can run
        #[arg(long, conflicts_with = "servers")]
        all: bool,
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
}

pub fn run(command: ClientsCommand) -> i32 {
    match command {
        ClientsCommand::List { json } => list(&out(json)),
        ClientsCommand::Connect {
            client,
            servers,
            all,
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
            let args = ConnectArgs {
                choice,
                dry_run,
                config,
                client_config,
            };
            with_client(&client, &out(json), |c, out| connect(c, &args, out))
        }
        ClientsCommand::Restore {
            client,
            force,
            client_config,
            json,
        } => with_client(&client, &out(json), |c, out| {
            restore(c, force, client_config.as_deref(), out)
        }),
    }
}

fn out(json: bool) -> Out {
    Out {
        json,
        redactor: Redactor::default(),
    }
}

fn with_client(id: &str, out: &Out, f: impl FnOnce(Client, &Out) -> i32) -> i32 {
    match Client::from_id(id) {
        Some(c) => f(c, out),
        None => out.error(&Error::config(format!(
            "unknown client {id:?}: use claude-desktop, claude-code, cursor or vscode"
        ))),
    }
}

fn state_path(out: &Out) -> Result<PathBuf, i32> {
    backup::default_state_path().ok_or_else(|| {
        out.error(&Error::config(
            "this user has no data directory (is HOME set?), so connections cannot be recorded",
        ))
    })
}

/// The client's file: the one given, else the first of its well-known paths that exists.
fn client_file(client: Client, given: Option<&Path>) -> Result<PathBuf, ClientError> {
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

fn list(out: &Out) -> i32 {
    let state = backup::default_state_path();
    let records = state
        .as_deref()
        .and_then(|s| backup::records(s).ok())
        .unwrap_or_default();
    let mut all = Vec::new();
    for client in Client::ALL {
        // Files connected elsewhere than the default path (`--client-config`).
        let elsewhere: Vec<&Path> = records
            .iter()
            .filter(|r| r.client == client.id())
            .map(|r| r.path.as_path())
            .filter(|p| {
                !client
                    .paths()
                    .iter()
                    .any(|d| std::fs::canonicalize(d).ok().as_deref() == Some(*p))
            })
            .collect();
        if !out.json {
            for p in &elsewhere {
                out.line(&format!("{:<15} {} (restorable)", client.id(), p.display()));
            }
        }
        let Some(path) = client.paths().into_iter().find(|p| p.is_file()) else {
            if !out.json && elsewhere.is_empty() {
                out.line(&format!("{:<15} not found", client.id()));
            }
            all.push(
                json!({ "client": client.id(), "found": false, "connected_elsewhere": elsewhere }),
            );
            continue;
        };
        let restorable = state
            .as_deref()
            .and_then(|s| backup::latest(client, Some(&path), s).ok().flatten())
            .is_some();
        let servers = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| clients::servers(client, &path, &t).map_err(|e| e.to_string()));
        if !out.json {
            let undo = if restorable {
                " (restorable: lifeline clients restore)"
            } else {
                ""
            };
            out.line(&format!("{:<15} {}{undo}", client.id(), path.display()));
            match &servers {
                Ok(list) if list.is_empty() => out.line("  no servers"),
                Ok(list) => {
                    for (field, routed) in list {
                        let how = if *routed {
                            "through Lifeline"
                        } else {
                            "direct"
                        };
                        out.line(&format!("  {field:<40} {how}"));
                    }
                }
                Err(e) => out.line(&format!("  cannot read: {e}")),
            }
        }
        let servers: Value = match servers {
            Ok(list) => list
                .iter()
                .map(|(field, routed)| json!({ "field": field, "through_lifeline": routed }))
                .collect(),
            Err(e) => json!({ "error": e }),
        };
        all.push(json!({
            "client": client.id(), "found": true, "path": path,
            "servers": servers, "restorable": restorable, "connected_elsewhere": elsewhere,
        }));
    }
    if out.json {
        out.json_line(&json!({ "ok": true, "result": { "clients": all } }));
    }
    EXIT_OK
}

struct ConnectArgs {
    choice: Choice,
    dry_run: bool,
    config: Option<PathBuf>,
    client_config: Option<PathBuf>,
}

fn connect(client: Client, args: &ConnectArgs, out: &Out) -> i32 {
    if args.choice == Choice::Named(Vec::new()) {
        out.note(&format!(
            "error: name the servers to route with --server NAME, or pass --all (see `lifeline \
             clients list` for {}'s servers)",
            client.id()
        ));
        return EXIT_USAGE;
    }
    let path = match client_file(client, args.client_config.as_deref()) {
        Ok(p) => p,
        Err(e) => return out.error(&Error::from(e)),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            return out.error(&Error::config(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    let ours_path = match config::resolve_path(args.config.as_deref()) {
        Ok(p) => std::path::absolute(&p).unwrap_or(p),
        Err(e) => return out.error(&Error::from(e)),
    };
    let mut ours = match read_ours(&ours_path) {
        Ok(v) => v,
        Err(e) => return out.error(&e),
    };
    // `lifeline connect` finds the default config itself; any other it is told.
    let default = config::default_path().map(|p| std::path::absolute(&p).unwrap_or(p));
    let config_arg = (default.as_ref() != Some(&ours_path)).then_some(ours_path.as_path());
    // As launched, not canonicalized: a package manager's symlink (Homebrew's bin/lifeline)
    // survives upgrades where its versioned target does not, and Windows would get a
    // `\\?\` path.
    let command = match std::env::current_exe() {
        Ok(p) => p.display().to_string(),
        Err(e) => {
            return out.error(&Error::config(format!(
                "could not find this lifeline binary's path: {e}"
            )));
        }
    };
    let request = Request {
        client,
        path: &path,
        text: &text,
        choice: &args.choice,
        lifeline: &ours,
        command: &command,
        config_arg,
    };
    let plan = match clients::plan(&request) {
        Ok(p) => p,
        Err(e) => return out.error(&Error::from(e)),
    };
    let out = Out {
        json: out.json,
        redactor: plan.redactor.clone(),
    };
    let mut backup_path = None;
    let mut imported = Vec::new();
    if !args.dry_run && plan.changes() {
        let state = match state_path(&out) {
            Ok(s) => s,
            Err(code) => return code,
        };
        let merged = match import::merge(&mut ours, &plan.import) {
            Ok(m) => m,
            Err(p) => return out.error(&Error::config(p.to_string())),
        };
        if !merged.added.is_empty()
            && let Err(e) = config::save(&ours, &ours_path)
        {
            return out.error(&Error::from(e));
        }
        imported = merged.added;
        match backup::write(client, &path, &text, &plan, &state, SystemTime::now()) {
            Ok(record) => backup_path = Some(record.backup),
            Err(e) => return out.error(&Error::from(e)),
        }
    }
    let to_import: Vec<&str> = plan
        .import
        .servers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    if out.json {
        let routed: Vec<Value> = plan
            .routed
            .iter()
            .map(|r| json!({ "field": r.field, "server": r.name }))
            .collect();
        let unchanged: Vec<Value> = plan
            .unchanged
            .iter()
            .map(|(f, why)| json!({ "field": f, "reason": why }))
            .collect();
        out.json_line(&json!({ "ok": true, "result": {
            "client": client.id(), "path": path, "config": ours_path, "dry_run": args.dry_run,
            "routed": routed, "unchanged": unchanged, "import": to_import,
            "backup": backup_path, "diff": plan.diff,
        }}));
        return EXIT_OK;
    }
    if !plan.diff.is_empty() {
        out.line(plan.diff.trim_end_matches('\n'));
    }
    for (field, why) in &plan.unchanged {
        out.line(&format!("unchanged {field}: {why}"));
    }
    for (name, warning) in &plan.import.warnings {
        out.line(&format!("note {name}: {warning}"));
    }
    if !plan.changes() {
        out.line(&format!("nothing to change in {}", path.display()));
    } else if args.dry_run {
        if !to_import.is_empty() {
            out.line(&format!(
                "would import into {}: {}",
                ours_path.display(),
                to_import.join(", ")
            ));
        }
        out.line(&format!("dry run: {} was not changed", path.display()));
    } else {
        if !imported.is_empty() {
            out.line(&format!(
                "imported into {}: {}",
                ours_path.display(),
                imported.join(", ")
            ));
        }
        if let Some(b) = &backup_path {
            out.line(&format!("backup {}", b.display()));
        }
        out.line(&format!(
            "wrote {}; restart {} to use it; undo with `lifeline clients restore {}`",
            path.display(),
            client.id(),
            client.id()
        ));
    }
    EXIT_OK
}

/// Our config's JSON, `{"mcpServers": {}}` when there is no file yet.
fn read_ours(path: &Path) -> Result<Value, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::config(format!(
                "{} is not valid JSON (line {}, column {}); fix it before connecting a client",
                path.display(),
                e.line(),
                e.column()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({ "mcpServers": {} })),
        Err(e) => Err(Error::config(format!(
            "could not read {}: {e}",
            path.display()
        ))),
    }
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
