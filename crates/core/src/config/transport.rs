//! Reading a server entry's transport: `type` (or what it implies), `command`, `args`,
//! `env`, `inheritEnv`, `cwd` for stdio, `url` and `headers` for http and sse. Every string field is
//! expanded (`expand`: `${env:NAME}`, `${keyring:NAME}`); env and header values become `Secret`s.

use super::error::Problem;
use super::expand::{self, Ctx};
use super::types::TransportConfig;
use super::validate::{self, join};
use crate::protocol::revision::{ProtocolChoice, Revision};
use crate::redact::Secret;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The transport an entry describes, and the variable values expanded into it. `None` when
/// it has problems (all recorded).
pub(super) fn read(
    o: &Map<String, Value>,
    path: &str,
    ctx: Ctx,
    problems: &mut Vec<Problem>,
) -> (Option<TransportConfig>, Vec<String>) {
    let mut reader = Reader {
        o,
        path,
        ctx,
        problems,
        substituted: Vec::new(),
    };
    let transport = reader.transport();
    (transport, reader.substituted)
}

struct Reader<'a, 'p> {
    o: &'a Map<String, Value>,
    path: &'a str,
    ctx: Ctx<'a>,
    problems: &'p mut Vec<Problem>,
    substituted: Vec<String>,
}

/// A value read and expanded; `resolved` is false when a disabled server's reference was
/// left as written.
struct Text {
    value: String,
    resolved: bool,
}

impl Reader<'_, '_> {
    fn transport(&mut self) -> Option<TransportConfig> {
        let kind = match self.o.get("type") {
            Some(v) => {
                let field = join(self.path, "type");
                let t = validate::string(v, &field, self.problems)?;
                if !matches!(t, "stdio" | "http" | "sse") {
                    self.problems.push(
                        Problem::new(field, "must be one of stdio, http, sse")
                            .with_value(format!("{t:?}")),
                    );
                    return None;
                }
                t
            }
            None => match (self.o.contains_key("command"), self.o.contains_key("url")) {
                (true, false) => "stdio",
                (false, true) => "http",
                (true, true) => {
                    self.problems.push(Problem::new(
                        self.path,
                        "has both `command` and `url`; set `type` to stdio, http or sse",
                    ));
                    return None;
                }
                (false, false) => {
                    self.problems.push(Problem::new(
                        self.path,
                        "needs `command` (a stdio server) or `url` (an http or sse server)",
                    ));
                    return None;
                }
            },
        };
        if kind == "stdio" {
            self.stdio()
        } else {
            let url = self.url();
            let headers = self.pairs("headers", check_header);
            let (url, headers) = (url?, headers?);
            Some(match kind {
                "http" => TransportConfig::Http { url, headers },
                _ => TransportConfig::Sse { url, headers },
            })
        }
    }

    fn stdio(&mut self) -> Option<TransportConfig> {
        let command = match self.o.get("command") {
            Some(v) => self.text(v, &join(self.path, "command")),
            None => {
                self.problems.push(Problem::new(
                    join(self.path, "command"),
                    "is required for a stdio server",
                ));
                None
            }
        };
        if let Some(c) = &command
            && c.value.trim().is_empty()
        {
            self.problems.push(Problem::new(
                join(self.path, "command"),
                "must not be empty",
            ));
        }
        let mut args = Some(Vec::new());
        if let Some(v) = self.o.get("args") {
            let field = join(self.path, "args");
            args = validate::array(v, &field, self.problems).and_then(|items| {
                let read: Vec<Option<Text>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, a)| self.text(a, &format!("{field}[{i}]")))
                    .collect();
                read.into_iter().map(|t| t.map(|t| t.value)).collect()
            });
        }
        let env = self.pairs("env", check_env_name);
        let mut inherit_env = Some(false);
        if let Some(v) = self.o.get("inheritEnv") {
            inherit_env = validate::boolean(v, &join(self.path, "inheritEnv"), self.problems);
        }
        let mut cwd = Some(None);
        if let Some(v) = self.o.get("cwd") {
            let field = join(self.path, "cwd");
            cwd = self.text(v, &field).map(|t| Some(PathBuf::from(t.value)));
            if matches!(&cwd, Some(Some(p)) if p.as_os_str().is_empty()) {
                self.problems.push(Problem::new(
                    field,
                    "must not be empty; leave it out instead",
                ));
            }
        }
        Some(TransportConfig::Stdio {
            command: command?.value,
            args: args?,
            env: env?,
            inherit_env: inherit_env?,
            cwd: cwd?,
        })
    }

    fn url(&mut self) -> Option<String> {
        let field = join(self.path, "url");
        let Some(v) = self.o.get("url") else {
            self.problems
                .push(Problem::new(field, "is required for an http or sse server"));
            return None;
        };
        let text = self.text(v, &field)?;
        if text.resolved
            && let Some(why) = check_url(&text.value)
        {
            self.problems.push(Problem::new(field, why));
            return None;
        }
        Some(text.value)
    }

    /// `env` or `headers`: an object of strings, values expanded and held as secrets.
    fn pairs(
        &mut self,
        key: &str,
        check_key: fn(&str) -> Option<String>,
    ) -> Option<Vec<(String, Secret)>> {
        let Some(v) = self.o.get(key) else {
            return Some(Vec::new());
        };
        let field = join(self.path, key);
        let map = validate::object(v, &field, self.problems)?;
        let mut out = Some(Vec::new());
        for (k, v) in map {
            let field = join(&field, k);
            if let Some(why) = check_key(k) {
                self.problems.push(Problem::new(&field, why));
                out = None;
            }
            let text = self.text(v, &field);
            if key == "headers"
                && let Some(t) = &text
                && reqwest::header::HeaderValue::from_str(&t.value).is_err()
            {
                self.problems.push(Problem::new(
                    &field,
                    "contains a character a header value cannot hold (a line break or another \
                     control character)",
                ));
                out = None;
            }
            match (text, out.as_mut()) {
                (Some(t), Some(pairs)) => pairs.push((k.clone(), Secret::from(t.value))),
                _ => out = None,
            }
        }
        out
    }

    /// A string field, expanded.
    fn text(&mut self, v: &Value, field: &str) -> Option<Text> {
        let raw = validate::string(v, field, self.problems)?;
        match expand::expand_with(raw, self.ctx.lookup, self.ctx.secrets) {
            Ok(e) => {
                self.substituted.extend(e.substituted);
                Some(Text {
                    value: e.value,
                    resolved: true,
                })
            }
            Err(_) if !self.ctx.strict => Some(Text {
                value: raw.to_owned(),
                resolved: false,
            }),
            Err(errors) => {
                self.problems
                    .extend(errors.iter().map(|e| Problem::new(field, e.to_string())));
                None
            }
        }
    }
}

fn check_url(url: &str) -> Option<String> {
    match reqwest::Url::parse(url) {
        Err(e) => Some(format!("is not a valid URL ({e})")),
        Ok(u) if !matches!(u.scheme(), "http" | "https") => Some(format!(
            "must be an http:// or https:// URL, not {}:",
            u.scheme()
        )),
        Ok(u) if u.host_str().is_none_or(str::is_empty) => Some("has no host".to_owned()),
        Ok(_) => None,
    }
}

fn check_env_name(name: &str) -> Option<String> {
    (name.is_empty() || name.contains(['=', '\0']))
        .then(|| "an environment variable name must be non-empty, without `=`".to_owned())
}

fn check_header(name: &str) -> Option<String> {
    reqwest::header::HeaderName::from_bytes(name.as_bytes())
        .is_err()
        .then(|| "is not a valid HTTP header name".to_owned())
}

/// Reads `protocol` (default auto). A pin must fit the transport: `type: "sse"` speaks
/// 2024-11-05 only.
pub(super) fn protocol(
    o: &Map<String, Value>,
    path: &str,
    transport: Option<&TransportConfig>,
    problems: &mut Vec<Problem>,
) -> ProtocolChoice {
    let Some(v) = o.get("protocol") else {
        return ProtocolChoice::Auto;
    };
    let field = join(path, "protocol");
    let Some(text) = validate::string(v, &field, problems) else {
        return ProtocolChoice::Auto;
    };
    let choice = match ProtocolChoice::parse(text) {
        Ok(c) => c,
        Err(why) => {
            problems.push(Problem::new(field, why).with_value(format!("{text:?}")));
            return ProtocolChoice::Auto;
        }
    };
    if let (Some(TransportConfig::Sse { .. }), Some(v)) = (transport, choice.pinned())
        && v != Revision::LEGACY_SSE
    {
        let legacy = Revision::LEGACY_SSE;
        problems.push(
            Problem::new(
                field,
                format!(
                    "type \"sse\" is the legacy transport, which speaks {legacy} only; use \"auto\", \"{legacy}\", or type \"http\" for {v}"
                ),
            )
            .with_value(format!("{text:?}")),
        );
    }
    choice
}
