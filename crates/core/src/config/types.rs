//! The validated config: servers in file order, each with its transport and its supervisor
//! policy (the global `lifeline` defaults overridden field by field). Built only by
//! `config::parse`/`config::load`, which check every value; env and header values are
//! `Secret`s, and `Debug` never shows a secret.

use super::url::{shown_url, url_secrets};
use crate::auth::{Authorizer, OAuthSettings, SignIn};
use crate::protocol::revision::ProtocolChoice;
use crate::redact::Redactor;
use crate::redact::Secret;
use crate::transport::http::HttpConfig;
use crate::transport::stdio::StdioConfig;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A loaded config file.
#[derive(Clone)]
pub struct Config {
    /// The global `lifeline` policy: built-in defaults overridden by the file.
    pub defaults: ServerPolicy,
    /// `lifeline.serve`: whether the desktop app serves the servers over its local
    /// Streamable HTTP endpoint, and on which port (docs/gateway.md).
    pub serve: ServeSettings,
    /// `lifeline.profiles`, in file order (`profile` adds `default` when the file has none).
    pub profiles: Vec<super::Profile>,
    /// `lifeline.separator`: what joins a server's name to its tools' on the aggregated
    /// endpoint.
    pub separator: super::Separator,
    /// The `mcpServers` entries, in file order.
    pub servers: Vec<ServerConfig>,
    /// Where the file was read from; `None` for a config parsed from a string.
    pub path: Option<PathBuf>,
    /// The file as JSON, unknown keys included. Edits and saves go through this value
    /// (`config::write`), never through the types, so nothing a person wrote is dropped.
    pub raw: Value,
}

impl Config {
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The profile `name`: the file's, or for `default` (when the file has none) every
    /// server with every tool.
    pub fn profile(&self, name: &str) -> Option<super::Profile> {
        let defined = self.profiles.iter().find(|p| p.name == name).cloned();
        defined
            .or_else(|| (name == super::DEFAULT_PROFILE).then(|| super::Profile::everything(name)))
    }

    /// Every profile's name: the file's, and `default`.
    pub fn profile_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
        if !names.contains(&super::DEFAULT_PROFILE) {
            names.insert(0, super::DEFAULT_PROFILE);
        }
        names
    }

    /// Every secret value in the file, for the redactor: header values, env values that
    /// look like secrets (`redact::env_secrets`), the values variables expanded to, secret
    /// arguments, connection-string passwords, and URL credentials, query values and
    /// credential-shaped path segments. No duplicates.
    pub fn secrets(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for s in self.servers.iter().flat_map(ServerConfig::secrets) {
            if !all.contains(&s) {
                all.push(s);
            }
        }
        all
    }
}

impl fmt::Debug for Config {
    /// Leaves out `raw`: it holds the secrets as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("path", &self.path)
            .field("defaults", &self.defaults)
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

/// The port of the local HTTP endpoint (`gateway::http`) unless told otherwise.
pub const DEFAULT_SERVE_PORT: u16 = 7424;

/// The app's local HTTP endpoint (`lifeline.serve`). Off unless the file turns it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSettings {
    pub enabled: bool,
    /// 0: any free port.
    pub port: u16,
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            enabled: false,
            port: DEFAULT_SERVE_PORT,
        }
    }
}

/// One `mcpServers` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: TransportConfig,
    /// `protocol`: auto, or one pinned revision (validated against the transport).
    pub protocol: ProtocolChoice,
    pub disabled: bool,
    pub policy: ServerPolicy,
    /// The `oauth` block of an http or sse server (docs/auth.md); `None` without one.
    pub oauth: Option<OAuthSettings>,
    /// The values `${…}` references expanded to anywhere in this entry (a token in an
    /// argument or a URL). Kept only so the redactor can scrub them.
    pub substituted: Vec<Secret>,
}

impl ServerConfig {
    /// The stdio transport's settings, secrets exposed; `None` for an http or sse server.
    pub fn stdio_config(&self) -> Option<StdioConfig> {
        let TransportConfig::Stdio {
            command,
            args,
            env,
            inherit_env,
            cwd,
        } = &self.transport
        else {
            return None;
        };
        let mut config = StdioConfig::new(command.clone(), args.clone());
        config.env = expose(env);
        config.inherit_env = *inherit_env;
        config.cwd = cwd.clone();
        Some(config)
    }

    /// The HTTP transport's settings, secrets exposed; `None` for a stdio server. An sse
    /// server gets one too: the legacy transport takes the same URL and headers.
    pub fn http_config(&self) -> Option<HttpConfig> {
        let (TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers }) =
            &self.transport
        else {
            return None;
        };
        let mut config = HttpConfig::new(url.clone());
        config.headers = expose(headers);
        // OAuth for a server with an `oauth` block, or with no static Authorization header
        // (its 401 starts discovery; without OAuth metadata the 401 stands). Never both: a
        // configured Authorization header is what the server gets. A supervised connection
        // never opens a browser: with no token it says "sign-in needed". The URL was
        // validated, so only the TLS setup could fail here, and then the transport fails
        // the same way.
        let static_auth = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        config.auth = (!static_auth)
            .then(|| self.oauth.clone().unwrap_or_default())
            .and_then(|settings| Authorizer::new(url, settings, SignIn::Never).ok())
            .map(|a| Arc::new(a.with_store(crate::auth::store::shared())));
        Some(config)
    }

    /// This server's secret values (see `Config::secrets`).
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .substituted
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        match &self.transport {
            TransportConfig::Stdio { env, args, .. } => {
                // Only env values that look like secrets: `NODE_ENV=production` must not
                // mask every "production" in a tool result.
                out.extend(crate::redact::env_secrets(
                    env.iter().map(|(k, v)| (k.as_str(), v.expose())),
                ));
                // A token written straight into the arguments (`--token=…`) is a secret too.
                out.extend(crate::redact::secret_argument_values(args));
            }
            TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers } => {
                out.extend(headers.iter().map(|(_, v)| v.expose().to_owned()));
                out.extend(
                    self.oauth
                        .iter()
                        .filter_map(|o| o.client_secret.as_ref())
                        .map(|s| s.expose().to_owned()),
                );
                out.extend(url_secrets(url));
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }
}

impl fmt::Debug for ServerConfig {
    /// The transport is scrubbed of every secret this server holds: an argument or a URL
    /// may carry an expanded token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = Redactor::new(self.secrets()).scrub(&format!("{:?}", self.transport));
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("transport", &format_args!("{transport}"))
            .field("disabled", &self.disabled)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

fn expose(pairs: &[(String, Secret)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), v.expose().to_owned()))
        .collect()
}

/// How to reach a server.
#[derive(Clone, PartialEq, Eq)]
pub enum TransportConfig {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, Secret)>,
        /// `inheritEnv`: the server gets Lifeline's whole environment, not only the
        /// variables the MCP SDKs pass on (`transport::child_env`).
        inherit_env: bool,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: Vec<(String, Secret)>,
    },
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse {
        url: String,
        headers: Vec<(String, Secret)>,
    },
}

impl TransportConfig {
    /// The `type` as written in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportConfig::Stdio { .. } => "stdio",
            TransportConfig::Http { .. } => "http",
            TransportConfig::Sse { .. } => "sse",
        }
    }
}

impl fmt::Debug for TransportConfig {
    /// URLs show scheme, host, port and path only: userinfo and query values are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportConfig::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", env)
                .field("inherit_env", inherit_env)
                .field("cwd", cwd)
                .finish(),
            TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers } => f
                .debug_struct(if matches!(self, TransportConfig::Http { .. }) {
                    "Http"
                } else {
                    "Sse"
                })
                .field("url", &shown_url(url))
                .field("headers", headers)
                .finish(),
        }
    }
}

/// The supervisor's settings for one server (DESIGN.md, "Supervisor").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPolicy {
    pub reconnect: ReconnectConfig,
    pub timeouts: Timeouts,
    /// Tool calls in flight at once on one connection; more wait in a bounded queue.
    pub max_concurrent_calls: u32,
    /// `trust`: whether hosts are shown only the tool definitions the user approved.
    pub trust: Trust,
}

/// `trust` (docs/trust.md): `pin` holds a changed or new tool out of every host's list
/// until the user approves it; `off` shows every tool as the server lists it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Trust {
    #[default]
    Pin,
    Off,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Pin => "pin",
            Trust::Off => "off",
        }
    }
}

impl Default for ServerPolicy {
    fn default() -> Self {
        ServerPolicy {
            reconnect: ReconnectConfig::default(),
            timeouts: Timeouts::default(),
            max_concurrent_calls: 4,
            trust: Trust::Pin,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconnectConfig {
    pub enabled: bool,
    /// The first backoff delay; it doubles up to `max_delay`.
    pub initial_delay: Duration,
    /// The backoff cap, and the stability window that resets the attempt budget.
    pub max_delay: Duration,
    /// Attempts in one round before quarantine.
    pub max_attempts: u32,
    /// Cooldowns of quarantine levels 1, 2 and 3.
    pub quarantine: [Duration; 3],
}

impl Default for ReconnectConfig {
    fn default() -> Self {
        ReconnectConfig {
            enabled: true,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_attempts: 10,
            quarantine: [30, 60, 120].map(Duration::from_secs),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    /// One deadline over spawn/connect, discovery, initialize and tools/list.
    pub establish: Duration,
    /// One request's timeout, restarted by progress.
    pub request: Duration,
    /// Idle time before a health `ping`; `None` turns pings off (`pingIntervalMs: 0`).
    pub ping_interval: Option<Duration>,
    pub ping_timeout: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            establish: Duration::from_secs(60),
            request: Duration::from_secs(60),
            ping_interval: Some(Duration::from_secs(30)),
            ping_timeout: Duration::from_secs(10),
        }
    }
}
