//! TARGET on the command line: an `http(s)://` URL, or `stdio:COMMAND ARGS...` (one
//! argument, split like a shell would, quotes included).

use lifeline_core::config::{ServerConfig, TransportConfig};
use lifeline_core::protocol::revision::{ProtocolChoice, Revision};
use lifeline_core::session::negotiate::Fallback;
use lifeline_core::transport::http::HttpConfig;
use lifeline_core::transport::stdio::StdioConfig;
use lifeline_core::transport::{self, Connection};
use lifeline_core::{Error, Session, SessionOptions};
use std::sync::Arc;
use std::time::Duration;

/// True when TARGET names a server directly (a URL or a stdio command line) rather than a
/// server in the config.
pub fn is_direct(target: &str) -> bool {
    target.starts_with("stdio:") || target.starts_with("http://") || target.starts_with("https://")
}

#[derive(Debug, Clone)]
pub enum Target {
    /// Streamable HTTP; under `auto`, legacy HTTP+SSE when the server refuses it as an
    /// older server would (`fallback`).
    Http(HttpConfig),
    /// The legacy HTTP+SSE transport (2024-11-05): `type: "sse"` or that pin.
    LegacySse(HttpConfig),
    Stdio(StdioConfig),
}

impl Target {
    /// Parses TARGET with the `--header` and `--env` options that go with it.
    pub fn parse(target: &str, headers: &[String], env: &[String]) -> Result<Target, Error> {
        if let Some(command_line) = target.strip_prefix("stdio:") {
            if !headers.is_empty() {
                return Err(Error::config(
                    "--header applies to http(s) targets only; use --env to pass secrets to a stdio server",
                ));
            }
            let words = shlex::split(command_line).ok_or_else(|| {
                Error::config("the stdio command line has an unclosed quote; check TARGET")
            })?;
            let Some((command, args)) = words.split_first() else {
                return Err(Error::config(
                    "TARGET is `stdio:` without a command; write stdio:COMMAND ARGS...",
                ));
            };
            let mut config = StdioConfig::new(command.clone(), args.to_vec());
            for e in env {
                let (k, v) = e.split_once('=').ok_or_else(|| {
                    Error::config("--env must be NAME=VALUE (the value is kept secret)")
                })?;
                config.env.push((k.to_owned(), v.to_owned()));
            }
            return Ok(Target::Stdio(config));
        }
        if target.starts_with("http://") || target.starts_with("https://") {
            if !env.is_empty() {
                return Err(Error::config(
                    "--env applies to stdio targets only; use --header for http(s)",
                ));
            }
            let mut config = HttpConfig::new(target);
            for h in headers {
                let (name, value) = h.split_once(':').ok_or_else(|| {
                    Error::config("--header must be 'Name: value' (the value is kept secret)")
                })?;
                config
                    .headers
                    .push((name.trim().to_owned(), value.trim().to_owned()));
            }
            return Ok(Target::Http(config));
        }
        Err(Error::config(
            "TARGET must be an http(s):// URL or stdio:COMMAND ARGS... (for example stdio:\"npx -y @modelcontextprotocol/server-everything\")",
        ))
    }

    /// A configured server, connected to directly with its settings.
    pub fn from_server(server: &ServerConfig) -> Target {
        let legacy = matches!(server.transport, TransportConfig::Sse { .. })
            || server.protocol.pinned() == Some(Revision::LEGACY_SSE);
        match (server.stdio_config(), server.http_config()) {
            (Some(stdio), _) => Target::Stdio(stdio),
            (None, Some(http)) if legacy => Target::LegacySse(http),
            (None, Some(http)) => Target::Http(http),
            (None, None) => unreachable!("a server is stdio or http(s)"),
        }
    }

    /// Opens this target and finds the protocol the way the supervisor does
    /// (`supervisor::connect_once`): under `auto` over Streamable HTTP, the stateless revision
    /// first, then `initialize`, then the legacy HTTP+SSE transport, each only on the spec's
    /// signals.
    pub async fn connect(
        &self,
        protocol: ProtocolChoice,
        options: SessionOptions,
    ) -> Result<Arc<Session>, Error> {
        let open = || self.open();
        let legacy_target = self.fallback(protocol);
        let legacy = legacy_target.as_ref().map(|t| move || t.open());
        let fallback = Fallback {
            choice: protocol,
            open: &open,
            legacy: legacy.as_ref().map(|l| l as _),
            stateless_first: matches!(self, Target::Http(_)),
        };
        lifeline_core::supervisor::connect_once(&fallback, options).await
    }

    pub fn set_http_request_timeout(&mut self, limit: Duration) {
        if let Target::Http(c) | Target::LegacySse(c) = self {
            c.request_timeout = c.request_timeout.min(limit);
        }
    }

    /// Every secret value this target was given, for scrubbing output.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            Target::Http(c) | Target::LegacySse(c) => {
                c.headers.iter().map(|(_, v)| v.clone()).collect()
            }
            Target::Stdio(c) => lifeline_core::redact::env_secrets(
                c.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            ),
        }
    }

    pub fn open(&self) -> Result<Connection, Error> {
        match self {
            Target::Http(c) => transport::http::connect(c),
            Target::LegacySse(c) => transport::http::legacy::connect(c),
            Target::Stdio(c) => transport::stdio::spawn(c),
        }
    }

    /// The legacy transport to try when Streamable HTTP is refused, if `auto` allows it.
    pub fn fallback(&self, protocol: ProtocolChoice) -> Option<Target> {
        match self {
            Target::Http(c) if protocol == ProtocolChoice::Auto => {
                Some(Target::LegacySse(c.clone()))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        let t = Target::parse(
            "stdio:node 'my server.js' --x",
            &[],
            &["TOKEN=s3cret".into()],
        )
        .unwrap();
        let Target::Stdio(c) = t else { panic!() };
        assert_eq!(c.command, "node");
        assert_eq!(c.args, ["my server.js", "--x"]);
        assert_eq!(c.env, [("TOKEN".to_owned(), "s3cret".to_owned())]);

        let t = Target::parse(
            "http://127.0.0.1:1/mcp",
            &["Authorization: Bearer x y".into()],
            &[],
        )
        .unwrap();
        let Target::Http(c) = t else { panic!() };
        assert_eq!(
            c.headers,
            [("Authorization".to_owned(), "Bearer x y".to_owned())]
        );
    }

    #[test]
    fn bad_targets_say_what_to_write() {
        let check = |target: &str, headers: &[String], env: &[String], expect: &str| {
            let e = Target::parse(target, headers, env).unwrap_err();
            assert!(e.message().contains(expect), "{target}: {e}");
        };
        check("ftp://x", &[], &[], "http(s):// URL or stdio:");
        check("stdio:", &[], &[], "without a command");
        check("stdio:node 'x", &[], &[], "unclosed quote");
        check("http://x", &["NoColon".into()], &[], "'Name: value'");
        check(
            "stdio:x",
            &["A: b".into()],
            &[],
            "--header applies to http(s)",
        );
        check("http://x", &[], &["A=b".into()], "--env applies to stdio");
    }
}
