//! From the file's JSON to a `Config`: the global `lifeline` policy, then each `mcpServers`
//! entry in file order (name, `disabled`, transport, policy). Every problem is collected;
//! unknown keys are ignored here and kept in `Config::raw`.

use super::error::{ConfigError, ConfigErrorKind, Problem};
use super::expand::{Ctx, Lookup, SecretLookup};
use super::oauth;
use super::policy;
use super::profiles;
use super::transport;
use super::types::{Config, ServeSettings, ServerConfig, ServerPolicy, TransportConfig};
use super::validate::{self, join};
use crate::redact::Secret;
use serde_json::Value;
use std::path::PathBuf;

impl Config {
    /// A config with no servers and the built-in policy: what runs when there is no usable
    /// file.
    pub fn empty() -> Config {
        super::parse(r#"{"mcpServers": {}}"#, None, &|_| None).expect("an empty config is valid")
    }
}

/// Builds a config from the file's JSON; `raw` is kept as it is. `${keyring:NAME}` values
/// come from this process's secret store (`SecretStore::open`), opened only when the file
/// has such a reference.
pub fn from_value(
    raw: Value,
    path: Option<PathBuf>,
    lookup: Lookup,
) -> Result<Config, ConfigError> {
    let store = std::sync::OnceLock::new();
    let secrets = |name: &str| {
        store
            .get_or_init(crate::secrets::SecretStore::open)
            .lookup(name)
    };
    from_value_with(raw, path, lookup, &secrets)
}

/// `from_value` with `${keyring:NAME}` values from `secrets`.
pub fn from_value_with(
    raw: Value,
    path: Option<PathBuf>,
    lookup: Lookup,
    secrets: SecretLookup,
) -> Result<Config, ConfigError> {
    let mut problems = Vec::new();
    let Some(top) = raw.as_object() else {
        problems.push(Problem::new(
            "",
            format!(
                "the file must hold an object such as {{\"mcpServers\": {{}}}}, not {}",
                validate::type_name(&raw)
            ),
        ));
        return Err(ConfigError::new(ConfigErrorKind::Invalid, path, problems));
    };
    let defaults = match top.get("lifeline") {
        Some(v) => match validate::object(v, "lifeline", &mut problems) {
            Some(block) => {
                policy::parse(block, &ServerPolicy::default(), "lifeline", &mut problems)
            }
            None => ServerPolicy::default(),
        },
        None => ServerPolicy::default(),
    };
    let serve = top
        .get("lifeline")
        .and_then(Value::as_object)
        .and_then(|block| block.get("serve"))
        .map(|v| serve(v, &mut problems))
        .unwrap_or_default();
    let mut servers = Vec::new();
    match top.get("mcpServers") {
        Some(v) => {
            if let Some(entries) = validate::object(v, "mcpServers", &mut problems) {
                for (name, entry) in entries {
                    let ctx = Ctx {
                        lookup,
                        secrets,
                        strict: true,
                    };
                    if let Some(s) =
                        server("mcpServers", name, entry, &defaults, ctx, &mut problems)
                    {
                        servers.push(s);
                    }
                }
            }
        }
        None if top.get("servers").is_some_and(Value::is_object) => problems.push(Problem::new(
            "servers",
            "Lifeline reads servers from `mcpServers`; `servers` is VS Code's shape: rename \
             the key, or import the file with `lifeline import` (vscode)",
        )),
        None => {}
    }
    for clash in profiles::server_clashes(servers.iter().map(|s| s.name.as_str())) {
        problems.push(Problem::new(
            join("mcpServers", &clash.second),
            clash.to_string(),
        ));
    }
    let block = top.get("lifeline").and_then(Value::as_object);
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    let profiles = block
        .and_then(|b| b.get("profiles"))
        .map(|v| profiles::profiles(v, &names, &mut problems))
        .unwrap_or_default();
    let separator = block
        .and_then(|b| b.get("separator"))
        .map(|v| profiles::separator(v, &mut problems))
        .unwrap_or_default();
    if problems.is_empty() {
        Ok(Config {
            defaults,
            serve,
            profiles,
            separator,
            servers,
            path,
            raw,
        })
    } else {
        Err(ConfigError::new(ConfigErrorKind::Invalid, path, problems))
    }
}

/// `lifeline.serve`: `{"enabled": bool, "port": 0–65535}`, each optional.
fn serve(v: &Value, problems: &mut Vec<Problem>) -> ServeSettings {
    let mut settings = ServeSettings::default();
    let Some(o) = validate::object(v, "lifeline.serve", problems) else {
        return settings;
    };
    if let Some(v) = o.get("enabled")
        && let Some(b) = validate::boolean(v, "lifeline.serve.enabled", problems)
    {
        settings.enabled = b;
    }
    if let Some(v) = o.get("port")
        && let Some(n) = validate::integer(v, "lifeline.serve.port", validate::PORT, problems)
    {
        settings.port = n as u16;
    }
    settings
}

/// Reads one server entry at `section.name`. `None` when it has problems (all recorded).
pub(crate) fn server(
    section: &str,
    name: &str,
    entry: &Value,
    defaults: &ServerPolicy,
    ctx: Ctx,
    problems: &mut Vec<Problem>,
) -> Option<ServerConfig> {
    let path = join(section, name);
    let before = problems.len();
    if let Some(why) = validate::check_name(name) {
        problems.push(Problem::new(&path, why));
    }
    let o = validate::object(entry, &path, problems)?;
    let disabled = match o.get("disabled") {
        Some(v) => validate::boolean(v, &join(&path, "disabled"), problems).unwrap_or(false),
        None => false,
    };
    let ctx = Ctx {
        strict: ctx.strict && !disabled,
        ..ctx
    };
    let (transport, substituted) = transport::read(o, &path, ctx, problems);
    let protocol = transport::protocol(o, &path, transport.as_ref(), problems);
    let policy = policy::parse(o, defaults, &path, problems);
    let oauth = match &transport {
        Some(TransportConfig::Http { .. } | TransportConfig::Sse { .. }) => {
            oauth::read(o, &path, problems)
        }
        _ => None,
    };
    if problems.len() > before {
        return None;
    }
    Some(ServerConfig {
        name: name.to_owned(),
        transport: transport?,
        protocol,
        disabled,
        policy,
        oauth,
        substituted: substituted.into_iter().map(Secret::from).collect(),
    })
}
