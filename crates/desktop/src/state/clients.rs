//! The "Connect a client" dialog's side of the app: the AI clients found on this machine
//! (Claude Desktop, Claude Code, Cursor, VS Code) with their servers and whether each goes
//! through Lifeline, the masked diff of routing chosen servers through `lifeline connect`,
//! applying it (importing into the app's config first, a backup in Lifeline's data dir, the
//! client's file rewritten) and restoring the backup, asking first when the client changed the file
//! since. All of it is `lifeline_core::config::clients`, exactly what `lifeline clients`
//! does (docs/clients.md); this only gathers the paths and shapes the answers for the UI.

use super::{AppState, lock};
use crate::error::ErrorView;
use lifeline_core::config;
use lifeline_core::config::clients::apply::{self, ClientFile, read_ours};
use lifeline_core::config::clients::{self, Choice, Client, ClientError, Request, backup};
use serde::Serialize;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, ErrorView>;

/// Where everything is: the app's paths, or a test's temp dirs.
#[derive(Debug, Clone)]
pub struct ClientsEnv {
    /// Where connections are recorded (`clients.json`); `None`: no data directory.
    pub state: Option<PathBuf>,
    /// Each client's candidate files, most likely first.
    pub files: Vec<(Client, Vec<PathBuf>)>,
    /// The `lifeline` command the client's entries run.
    pub command: Option<PathBuf>,
    /// Lifeline's config, where chosen servers are imported.
    pub config: PathBuf,
    /// Whether `config` is the default one (`lifeline connect` then needs no `--config`).
    pub config_is_default: bool,
}

/// One server of a client's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ClientServer {
    /// Where it is in the file: `mcpServers.github`, `projects./p.mcpServers.x`.
    pub field: String,
    /// The client's name for it (what connecting takes).
    pub name: String,
    pub through_lifeline: bool,
}

/// One client, found or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ClientView {
    /// `claude-desktop`, `claude-code`, `cursor`, `vscode`.
    pub client: String,
    pub label: String,
    /// Its file; null when none was found.
    pub path: Option<String>,
    pub servers: Vec<ClientServer>,
    /// Lifeline connected this file and can put its backup back.
    pub restorable: bool,
    /// Where that backup is (in Lifeline's data dir, `backups/`); null when not restorable.
    pub backup: Option<String>,
    /// Why the file could not be read, when it could not.
    pub problem: Option<String>,
}

/// An entry connecting would leave alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Unchanged {
    pub field: String,
    pub reason: String,
}

/// What connecting would do (nothing is written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ConnectPreview {
    pub client: String,
    pub path: String,
    /// A unified diff of the client's file, every secret masked (as `lifeline clients
    /// connect --dry-run` prints it); empty when nothing changes.
    pub diff: String,
    /// The fields that would go through Lifeline.
    pub routed: Vec<String>,
    pub unchanged: Vec<Unchanged>,
    /// Servers that would be imported into Lifeline's config first.
    pub import: Vec<String>,
    /// Lifeline's config.
    pub config: String,
}

/// What connecting did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Connected {
    pub path: String,
    /// The backup of the file as it was; null when there was nothing to change.
    pub backup: Option<String>,
    pub routed: Vec<String>,
    pub imported: Vec<String>,
}

/// What restoring did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Restored {
    pub path: String,
    pub backup: String,
    pub servers: Vec<String>,
}

pub(crate) fn label(c: Client) -> &'static str {
    match c {
        Client::ClaudeDesktop => "Claude Desktop",
        Client::ClaudeCode => "Claude Code",
        Client::Cursor => "Cursor",
        Client::VsCode => "VS Code",
    }
}

fn client_error(e: &ClientError) -> ErrorView {
    ErrorView::new("config", e.to_string())
}

fn client_of(id: &str) -> Result<Client> {
    Client::parse(id).map_err(|e| client_error(&e))
}

/// The client's name for the server at `field` (`mcpServers.fs` → `fs`).
fn name_of(field: &str) -> String {
    field
        .rsplit_once(".mcpServers.")
        .map(|(_, n)| n)
        .or_else(|| field.strip_prefix("mcpServers."))
        .or_else(|| field.strip_prefix("servers."))
        .unwrap_or(field)
        .to_owned()
}

impl ClientsEnv {
    /// The app's: its config (else the default one), the user's client files, the
    /// `lifeline` command installed beside the app (else on PATH).
    pub fn for_app(config_path: Option<&str>) -> ClientsEnv {
        let default = config::default_path().map(|p| std::path::absolute(&p).unwrap_or(p));
        let config = config_path
            .map(PathBuf::from)
            .or_else(|| default.clone())
            .unwrap_or_else(|| PathBuf::from("config.json"));
        let config = std::path::absolute(&config).unwrap_or(config);
        ClientsEnv {
            state: backup::default_state_path(),
            files: Client::ALL.into_iter().map(|c| (c, c.paths())).collect(),
            command: lifeline_command(),
            config_is_default: default.as_ref() == Some(&config),
            config,
        }
    }

    fn files(&self, c: Client) -> &[PathBuf] {
        self.files
            .iter()
            .find(|(k, _)| *k == c)
            .map_or(&[], |(_, f)| f.as_slice())
    }

    fn file(&self, c: Client) -> Result<PathBuf> {
        self.files(c)
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or_else(|| ErrorView::new("config", format!("no {} config found", label(c))))
    }

    fn state(&self) -> Result<&Path> {
        backup::require_state(self.state.as_deref()).map_err(|e| client_error(&e))
    }
}

/// `lifeline` beside the running app (how the packages install it), else the first on PATH.
fn lifeline_command() -> Option<PathBuf> {
    let name = format!("lifeline{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(&name)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(&name));
    beside.into_iter().chain(on_path).find(|p| p.is_file())
}

/// Every client, with its servers.
pub fn list(env: &ClientsEnv) -> Vec<ClientView> {
    Client::ALL
        .into_iter()
        .map(|c| {
            let mut view = ClientView {
                client: c.id().to_owned(),
                label: label(c).to_owned(),
                path: None,
                servers: Vec::new(),
                restorable: false,
                backup: None,
                problem: None,
            };
            let Ok(path) = env.file(c) else {
                return view;
            };
            view.path = Some(path.display().to_string());
            let record = env
                .state
                .as_deref()
                .and_then(|s| backup::latest(c, Some(&path), s).ok().flatten());
            view.restorable = record.is_some();
            view.backup = record.map(|r| r.backup.display().to_string());
            let servers = std::fs::read_to_string(&path)
                .map_err(|e| format!("could not read it: {e}"))
                .and_then(|t| clients::servers(c, &path, &t).map_err(|e| e.to_string()));
            match servers {
                Ok(list) => {
                    view.servers = list
                        .into_iter()
                        .map(|(field, routed)| ClientServer {
                            name: name_of(&field),
                            field,
                            through_lifeline: routed,
                        })
                        .collect();
                }
                Err(e) => view.problem = Some(e),
            }
            view
        })
        .collect()
}

/// Plans routing `servers` of `client`; with `apply`, imports, backs up and writes.
fn run(
    env: &ClientsEnv,
    client: &str,
    servers: Vec<String>,
    apply: bool,
) -> Result<(ConnectPreview, Option<Connected>)> {
    let c = client_of(client)?;
    if servers.is_empty() {
        return Err(ErrorView::new("config", "choose at least one server"));
    }
    let path = env.file(c)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ErrorView::new("config", format!("could not read {}: {e}", path.display())))?;
    let command = env.command.as_ref().ok_or_else(|| {
        ErrorView::new(
            "config",
            "the `lifeline` command was not found beside the app or on PATH; install it first",
        )
    })?;
    let ours = read_ours(&env.config).map_err(|e| client_error(&e))?;
    let command = command.display().to_string();
    let choice = Choice::Named(servers);
    let request = Request {
        client: c,
        path: &path,
        text: &text,
        choice: &choice,
        lifeline: &ours,
        command: &command,
        config_arg: (!env.config_is_default).then_some(env.config.as_path()),
    };
    let plan = clients::plan(&request).map_err(|e| client_error(&e))?;
    let routed: Vec<String> = plan.routed.iter().map(|r| r.field.clone()).collect();
    let preview = ConnectPreview {
        client: c.id().to_owned(),
        path: path.display().to_string(),
        diff: plan.diff.clone(),
        routed: routed.clone(),
        unchanged: plan
            .unchanged
            .iter()
            .map(|(field, reason)| Unchanged {
                field: field.clone(),
                reason: reason.clone(),
            })
            .collect(),
        import: plan.import.servers.iter().map(|(n, _)| n.clone()).collect(),
        config: env.config.display().to_string(),
    };
    if !apply {
        return Ok((preview, None));
    }
    let mut done = Connected {
        path: preview.path.clone(),
        backup: None,
        routed,
        imported: Vec::new(),
    };
    if plan.changes() {
        let state = env.state()?;
        let file = ClientFile {
            client: c,
            path: &path,
            text: &text,
        };
        let applied =
            apply::apply(&file, &plan, ours, &env.config, state).map_err(|e| client_error(&e))?;
        done.imported = applied.imported;
        done.backup = Some(applied.backup.display().to_string());
    }
    Ok((preview, Some(done)))
}

/// The masked diff of routing `servers` of `client` through Lifeline; writes nothing.
pub fn preview(env: &ClientsEnv, client: &str, servers: Vec<String>) -> Result<ConnectPreview> {
    run(env, client, servers, false).map(|(p, _)| p)
}

/// Routes `servers` of `client` through Lifeline: imports what Lifeline's config lacks,
/// backs the file up and rewrites it.
pub fn connect(env: &ClientsEnv, client: &str, servers: Vec<String>) -> Result<Connected> {
    let (_, done) = run(env, client, servers, true)?;
    done.ok_or_else(|| ErrorView::new("config", "nothing was applied"))
}

/// Puts the backup of `client`'s latest connect back. Without `force`, a file the client
/// changed since Lifeline wrote it is refused with kind `changed_since`, naming what
/// changed, so the UI can ask.
pub fn restore(env: &ClientsEnv, client: &str, force: bool) -> Result<Restored> {
    let c = client_of(client)?;
    let state = env.state()?;
    let path = env.file(c).ok();
    let latest = backup::latest(c, path.as_deref(), state).map_err(|e| client_error(&e))?;
    let changed = latest.as_ref().is_some_and(backup::changed_since);
    match backup::restore(c, path.as_deref(), force, state) {
        Ok(record) => Ok(Restored {
            path: record.path.display().to_string(),
            backup: record.backup.display().to_string(),
            servers: record.servers,
        }),
        Err(e) if changed && !force => Err(ErrorView::new("changed_since", e.to_string())),
        Err(e) => Err(client_error(&e)),
    }
}

impl AppState {
    /// Where the dialog's clients, backups and Lifeline's config are.
    pub fn clients_env(&self) -> ClientsEnv {
        ClientsEnv::for_app(lock(&self.info).config_path.as_deref())
    }
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
