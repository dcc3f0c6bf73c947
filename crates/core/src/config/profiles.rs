//! What the aggregated endpoint serves (docs/config.md, "Profiles"): `lifeline.profiles`,
//! named sets of servers and tools (`lifeline connect --profile P`, `/profiles/P/mcp`), and
//! `lifeline.separator`, what joins a server's name to its tools'. `default` is every enabled
//! server with every tool unless the file defines it. Also the rule that two servers may
//! not differ only in case or in `.`, `-` and `_`: their tools' names would be confused.
//!
//! ```json
//! "lifeline": { "profiles": {
//!   "coding": { "servers": ["github", "file*"],
//!               "tools": { "github": { "exclude": ["delete_*"] } } },
//!   "everything": { "tools": "search" }
//! } }
//! ```
//!
//! Globs are `*` (any run of characters) and `?` (one), matched against the whole name,
//! case-sensitively (`wildmatch`).

use super::error::Problem;
use super::validate::{self, join};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use wildmatch::WildMatch;

/// The profile every endpoint serves when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// The most profiles a file may define.
const MAX_PROFILES: usize = 64;
/// The most globs in one list.
const MAX_GLOBS: usize = 256;

/// Which names a list of globs lets through: every name an `include` glob matches (every
/// name when there is none) and no `exclude` glob matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Selection {
    pub fn admits(&self, name: &str) -> bool {
        let any = |globs: &[String]| globs.iter().any(|g| WildMatch::new(g).matches(name));
        (self.include.is_empty() || any(&self.include)) && !any(&self.exclude)
    }
}

/// How a profile shows its tools to a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tools {
    /// Every tool of its servers, less what a filter keeps out: per server glob, a selection
    /// of tool names (each filter whose glob matches the server applies).
    List(Vec<(String, Selection)>),
    /// A few meta-tools (`find_tools`, `call_tool`) instead of the list.
    Search,
}

/// One named set of servers and tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub servers: Selection,
    pub tools: Tools,
}

impl Profile {
    /// Every server, every tool: `default` unless the file defines it.
    pub fn everything(name: &str) -> Profile {
        Profile {
            name: name.to_owned(),
            servers: Selection::default(),
            tools: Tools::List(Vec::new()),
        }
    }

    /// Whether the server `server` is in the profile (a disabled one never serves).
    pub fn serves(&self, server: &str) -> bool {
        self.servers.admits(server)
    }

    /// Whether `tool` of `server` is shown (in search mode: can be found and called).
    pub fn shows(&self, server: &str, tool: &str) -> bool {
        match &self.tools {
            Tools::Search => true,
            Tools::List(filters) => filters
                .iter()
                .filter(|(glob, _)| WildMatch::new(glob).matches(server))
                .all(|(_, selection)| selection.admits(tool)),
        }
    }

    pub fn search(&self) -> bool {
        self.tools == Tools::Search
    }
}

/// What joins a server's name to its tool's on the aggregated endpoint: 1 to 3 of
/// `A-Z a-z 0-9 _ -`, `__` by default.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Separator(String);

impl Separator {
    /// The separator `sep`, or why it is not one.
    pub fn try_new(sep: &str) -> Result<Separator, BadSeparator> {
        let ok = (1..=3).contains(&sep.len())
            && sep
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(Separator(sep.to_owned()))
        } else {
            let shown: String = sep.chars().take(16).collect();
            Err(BadSeparator { shown })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Separator {
    /// `__`, as most gateways and hosts write `server__tool`.
    fn default() -> Separator {
        Separator("__".to_owned())
    }
}

/// A separator refused by `Separator::try_new`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the name separator must be 1 to 3 of `A-Z`, `a-z`, `0-9`, `_` and `-` (not {shown:?})")]
pub struct BadSeparator {
    /// The value, at most its first 16 characters.
    shown: String,
}

/// Two configured servers whose tools' names and resource URIs could be confused: their
/// names are equal in lowercase once `.`, `-` and `_` are taken as one character. The
/// config refuses them rather than telling them apart, since any way of telling them apart
/// makes one server's names depend on whether the other is there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "servers `{first}` and `{second}` differ only in case or in `.`, `-` and `_`, so their \
     tools' names would be confused; rename one of them"
)]
pub struct ServerClash {
    /// The first of the two in byte order.
    pub first: String,
    pub second: String,
}

/// A server name as `server_clashes` compares it: ASCII lowercase (server names are ASCII),
/// `.`, `-` and `_` all `_`.
pub fn fold_server(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '.' | '-' | '_' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Every pair of `servers` that clash, in byte order: each server clashing with the first
/// of its kind, so three twins are two clashes. None for distinct names.
pub fn server_clashes<'a>(servers: impl IntoIterator<Item = &'a str>) -> Vec<ServerClash> {
    let sorted: BTreeSet<&str> = servers.into_iter().collect();
    let mut first: HashMap<String, &str> = HashMap::new();
    let mut out = Vec::new();
    for server in sorted {
        match first.get(&fold_server(server)) {
            Some(holder) => out.push(ServerClash {
                first: (*holder).to_owned(),
                second: server.to_owned(),
            }),
            None => {
                first.insert(fold_server(server), server);
            }
        }
    }
    out
}

/// `lifeline.separator`.
pub(crate) fn separator(v: &Value, problems: &mut Vec<Problem>) -> Separator {
    let field = "lifeline.separator";
    match validate::string(v, field, problems).map(Separator::try_new) {
        Some(Ok(sep)) => sep,
        Some(Err(e)) => {
            problems.push(Problem::new(field, e.to_string()));
            Separator::default()
        }
        None => Separator::default(),
    }
}

/// `lifeline.profiles`: each profile, checked against the configured `servers`. A server
/// named without a glob that is not configured is a problem; a glob may match none.
pub(crate) fn profiles(v: &Value, servers: &[&str], problems: &mut Vec<Problem>) -> Vec<Profile> {
    let field = "lifeline.profiles";
    let Some(map) = validate::object(v, field, problems) else {
        return Vec::new();
    };
    if map.len() > MAX_PROFILES {
        problems.push(Problem::new(
            field,
            format!(
                "at most {MAX_PROFILES} profiles (this file has {})",
                map.len()
            ),
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, body) in map {
        let at = join(field, name);
        if let Some(why) = validate::check_name(name) {
            problems.push(Problem::new(
                &at,
                why.replace("server name", "profile name"),
            ));
            continue;
        }
        let Some(body) = validate::object(body, &at, problems) else {
            continue;
        };
        if let Some(p) = profile(name, body, &at, servers, problems) {
            out.push(p);
        }
    }
    out
}

fn profile(
    name: &str,
    body: &Map<String, Value>,
    at: &str,
    servers: &[&str],
    problems: &mut Vec<Problem>,
) -> Option<Profile> {
    let before = problems.len();
    for key in body.keys() {
        if !matches!(key.as_str(), "servers" | "tools") {
            problems.push(Problem::new(
                join(at, key),
                "is not a profile field; a profile has `servers` and `tools`",
            ));
        }
    }
    let servers_at = join(at, "servers");
    let chosen = match body.get("servers") {
        Some(v) => selection(v, &servers_at, problems),
        None => Selection::default(),
    };
    for glob in &chosen.include {
        known(glob, &servers_at, servers, problems);
    }
    let tools_at = join(at, "tools");
    let tools = match body.get("tools") {
        None => Tools::List(Vec::new()),
        Some(Value::String(s)) if s == "search" => Tools::Search,
        Some(v) => match validate::object(v, &tools_at, problems) {
            Some(filters) => Tools::List(
                filters
                    .iter()
                    .map(|(server, v)| {
                        let at = join(&tools_at, server);
                        known(server, &tools_at, servers, problems);
                        (server.clone(), selection(v, &at, problems))
                    })
                    .collect(),
            ),
            None => {
                problems.push(Problem::new(
                    &tools_at,
                    "is either \"search\" or an object of filters by server",
                ));
                Tools::List(Vec::new())
            }
        },
    };
    (problems.len() == before).then(|| Profile {
        name: name.to_owned(),
        servers: chosen,
        tools,
    })
}

/// A server named outright (no glob) that is not configured.
fn known(name: &str, at: &str, servers: &[&str], problems: &mut Vec<Problem>) {
    let glob = name.contains(['*', '?']);
    if !glob && !servers.contains(&name) {
        problems.push(
            Problem::new(
                at,
                format!(
                    "names `{name}`, which is not a configured server; the servers are: {}",
                    servers.join(", ")
                ),
            )
            .with_value(name),
        );
    }
}

/// A list of globs (`["a", "b*"]`, the names to include) or `{"include": […], "exclude":
/// […]}`.
fn selection(v: &Value, at: &str, problems: &mut Vec<Problem>) -> Selection {
    match v {
        Value::Array(_) => Selection {
            include: globs(v, at, problems),
            exclude: Vec::new(),
        },
        Value::Object(o) => {
            for key in o.keys() {
                if !matches!(key.as_str(), "include" | "exclude") {
                    problems.push(Problem::new(
                        join(at, key),
                        "is not a filter field; a filter has `include` and `exclude`",
                    ));
                }
            }
            let list = |key: &str, problems: &mut Vec<Problem>| {
                o.get(key)
                    .map(|v| globs(v, &join(at, key), problems))
                    .unwrap_or_default()
            };
            Selection {
                include: list("include", problems),
                exclude: list("exclude", problems),
            }
        }
        _ => {
            problems.push(validate::wrong_type(
                at,
                "a list of names or {\"include\": […], \"exclude\": […]}",
                v,
            ));
            Selection::default()
        }
    }
}

fn globs(v: &Value, at: &str, problems: &mut Vec<Problem>) -> Vec<String> {
    let Some(items) = validate::array(v, at, problems) else {
        return Vec::new();
    };
    if items.len() > MAX_GLOBS {
        problems.push(Problem::new(at, format!("at most {MAX_GLOBS} names")));
        return Vec::new();
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let at = format!("{at}[{i}]");
            let s = validate::string(item, &at, problems)?;
            if s.is_empty() || s.len() > 256 {
                problems.push(Problem::new(at, "must be 1 to 256 characters"));
                return None;
            }
            Some(s.to_owned())
        })
        .collect()
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
