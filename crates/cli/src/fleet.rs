//! Running the configured servers from the command line: load the config, wait for a
//! signal or a duration, name an unknown server helpfully.

use crate::output::Out;
use lifeline_core::config::{self, Config};
use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use std::path::Path;
use std::time::Duration;

/// Loads the config named by `--config`, `LIFELINE_CONFIG` or the default location.
pub fn load(path: Option<&Path>) -> Result<Config, Error> {
    let path = config::resolve_path(path).map_err(Error::from)?;
    config::load(&path).map_err(Error::from)
}

/// Loads the config — or, when TARGETs are given, a config of just those servers — and an
/// output whose redactor knows every secret in it; on failure, reports and returns the
/// exit code.
pub fn load_for_output(
    path: Option<&Path>,
    targets: &[String],
    json: bool,
) -> Result<(Config, Out), i32> {
    let mut out = Out {
        json,
        redactor: Redactor::default(),
    };
    let config = if targets.is_empty() {
        load(path)
    } else {
        config_of_targets(targets)
    }
    .map_err(|e| out.error(&e))?;
    out.redactor = Redactor::new(config.secrets());
    Ok((config, out))
}

/// A config of the servers named on the command line: `http(s)://` URLs (the protocol
/// found by `auto`) and `stdio:COMMAND ARGS...`, each with the default policy, named after
/// its host and port or its command (`127.0.0.1-8080`, `server-everything`).
pub fn config_of_targets(targets: &[String]) -> Result<Config, Error> {
    let mut servers = serde_json::Map::new();
    for target in targets {
        let (name, entry) = if target.starts_with("http://") || target.starts_with("https://") {
            let url = authority_name(target);
            (url, serde_json::json!({ "url": target }))
        } else if let Some(line) = target.strip_prefix("stdio:") {
            let words = shlex::split(line)
                .filter(|w| !w.is_empty())
                .ok_or_else(|| {
                    Error::config(format!(
                        "{target:?}: the stdio command line is empty or has an unclosed quote"
                    ))
                })?;
            let command = words[0].rsplit('/').next().unwrap_or(&words[0]).to_owned();
            (
                command,
                serde_json::json!({ "command": words[0], "args": &words[1..] }),
            )
        } else {
            return Err(Error::config(format!(
                "{target:?} is not a server: give http(s)://… URLs or stdio:\"COMMAND ARGS\" \
                 (or no TARGET, to use the config)"
            )));
        };
        let base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '-'
                }
            })
            .take(48)
            .collect();
        let base = if base.is_empty() {
            "server".to_owned()
        } else {
            base
        };
        let mut unique = base.clone();
        for n in 2.. {
            if !servers.contains_key(&unique) {
                break;
            }
            unique = format!("{base}-{n}");
        }
        servers.insert(unique, entry);
    }
    let raw = serde_json::json!({ "mcpServers": servers });
    config::from_value(raw, None, &config::env_lookup).map_err(Error::from)
}

/// `host-port` of a URL, without parsing more than needed (no userinfo, no path).
fn authority_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    host_port.replace(':', "-")
}

/// Resolves on SIGINT or SIGTERM (Windows: Ctrl+C, Ctrl+Break or the console closing), or
/// after `limit` if given. The handlers are installed by this call, not when the future is
/// first polled: a signal that arrived in between would take the default action and kill the
/// process without disposal, leaving stdio servers (each in its own process group) running.
/// On Windows they would die with it anyway (each is in a job that closes with us), but
/// without their stdin closed first.
pub fn until_stopped(limit: Option<Duration>) -> impl std::future::Future<Output = ()> {
    let stopped = stop_signals();
    async move {
        let timer = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stopped => {}
            () = timer => {}
        }
    }
}

#[cfg(unix)]
fn stop_signals() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    async fn recv(s: Option<&mut Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    async move {
        tokio::select! {
            () = recv(int.as_mut()) => {}
            () = recv(term.as_mut()) => {}
        }
    }
}

#[cfg(windows)]
fn stop_signals() -> impl std::future::Future<Output = ()> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let mut c = ctrl_c().ok();
    let mut brk = ctrl_break().ok();
    let mut close = ctrl_close().ok();
    async move {
        let c = async {
            match c.as_mut() {
                Some(s) => drop(s.recv().await),
                None => std::future::pending().await,
            }
        };
        let brk = async {
            match brk.as_mut() {
                Some(s) => drop(s.recv().await),
                None => std::future::pending().await,
            }
        };
        let close = async {
            match close.as_mut() {
                Some(s) => drop(s.recv().await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = c => {}
            () = brk => {}
            () = close => {}
        }
    }
}

/// The error for a server name that is not in the config, listing the names that are.
pub fn unknown_server(config: &Config, name: &str) -> Error {
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    let known = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    let path = config
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    Error::new(
        ErrorKind::Config,
        format!(
            "no server named `{name}` in {path} (configured: {known}); TARGET may also be an http(s):// URL or stdio:COMMAND"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_become_servers_named_after_where_they_are() {
        let c = config_of_targets(&[
            "http://127.0.0.1:8080/mcp".into(),
            "https://user:pw@api.example.com/mcp?key=1".into(),
            "http://127.0.0.1:8080/other".into(),
            "stdio:/usr/bin/npx -y server-everything".into(),
        ])
        .unwrap();
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "127.0.0.1-8080",
                "api.example.com",
                "127.0.0.1-8080-2",
                "npx"
            ]
        );
        let e = config_of_targets(&["mcp.example.com".into()]).unwrap_err();
        assert!(e.message().contains("http(s)://"), "{e}");
        let e = config_of_targets(&["stdio:".into()]).unwrap_err();
        assert!(e.message().contains("empty"), "{e}");
    }
}
