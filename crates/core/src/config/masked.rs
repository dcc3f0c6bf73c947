//! A server's config as the app's detail panel shows it: the file's spelling, every
//! secret masked (pure).

use super::{Secret, ServerConfig, TransportConfig, shown_url};
use crate::redact::{MASK, Redactor, scrub_args};
use serde_json::{Map, Value, json};
use std::time::Duration;

fn masked(pairs: &[(String, Secret)]) -> Value {
    let map: Map<String, Value> = pairs
        .iter()
        .map(|(k, _)| (k.clone(), Value::String(MASK.to_owned())))
        .collect();
    Value::Object(map)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One server as its config file spells it, with nothing secret left in it: env and
/// header values masked, the command, arguments and URL scrubbed, the policy in full.
pub fn server(server: &ServerConfig) -> Value {
    let redactor = Redactor::new(server.secrets());
    let mut out = json!({ "name": server.name });
    let fields = match &server.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            inherit_env,
            cwd,
        } => json!({
            "type": "stdio",
            "command": redactor.scrub(command),
            "args": scrub_args(args, &redactor),
            "env": masked(env),
            "inheritEnv": inherit_env,
            "cwd": cwd.as_ref().map(|p| p.display().to_string()),
        }),
        TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers } => json!({
            "type": server.transport.kind(),
            "url": redactor.scrub(&shown_url(url)),
            "headers": masked(headers),
        }),
    };
    let p = &server.policy;
    let r = &p.reconnect;
    let t = &p.timeouts;
    let policy = json!({
        "disabled": server.disabled,
        "reconnect": {
            "enabled": r.enabled,
            "initialDelayMs": millis(r.initial_delay),
            "maxDelayMs": millis(r.max_delay),
            "maxAttempts": r.max_attempts,
            "quarantineMs": r.quarantine.map(millis),
        },
        "timeouts": {
            "establishMs": millis(t.establish),
            "requestMs": millis(t.request),
            "pingIntervalMs": t.ping_interval.map_or(0, millis),
            "pingTimeoutMs": millis(t.ping_timeout),
        },
        "maxConcurrentCalls": p.max_concurrent_calls,
        "trust": p.trust.as_str(),
    });
    for part in [fields, policy] {
        if let (Some(out), Value::Object(part)) = (out.as_object_mut(), part) {
            out.extend(part);
        }
    }
    out
}
