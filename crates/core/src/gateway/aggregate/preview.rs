//! What one host would be shown on the aggregated endpoint, worked out without a session:
//! the Profiles view of the app and `lifeline clients show CLIENT`. For a profile, the tools
//! of its servers (each shown or filtered out, under the name this host gets, shortened or
//! not and why), how many the host is given, an estimate of what its `tools/list` costs in
//! tokens, and whether that is over a limit the host is known to have. Pure: the tools come
//! from the caller (the app's supervisors, or servers connected once).
//!
//! Tokens are estimated as the bytes of the `tools/list` result's JSON divided by 4. The
//! hosts' tokenizers are not public (Claude's) or differ by model, and over JSON tool
//! definitions this stays within about a quarter of each; it is a comparison between
//! profiles, not a bill.

use super::catalog::assemble;
use super::search_mode;
use crate::config::{Profile, Separator};
use crate::gateway::names::{Change, ClientKind, OverLimit, Remembered, Why};
use crate::protocol::mcp::Tool;
use serde::Serialize;
use serde_json::{Value, json};

/// One tool of a profile's servers, as one host would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolPreview {
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    /// Whether the profile shows it (in search mode: whether it can be found).
    pub shown: bool,
    /// The name the host calls it by; `null` when it is not shown.
    pub name: Option<String>,
    /// Why the name is not `server` + separator + `tool`, in words; `null` when it is.
    pub changed: Option<String>,
}

/// A profile as one host would be given it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ProfilePreview {
    pub profile: String,
    /// The host kind the names are fitted to (`claude-code`, …, `unknown`).
    pub client: String,
    /// How long a name may be at this host.
    pub budget: usize,
    /// Whether the host is shown search mode's meta-tools instead of the list.
    pub search: bool,
    /// Every tool of the profile's servers, by server in the config's order.
    pub tools: Vec<ToolPreview>,
    /// How many tools the host's `tools/list` holds.
    pub listed: usize,
    /// The estimated tokens of that `tools/list` (bytes ÷ 4).
    pub tokens: usize,
    /// The estimated tokens of every shown tool listed (what search mode saves).
    pub full_tokens: usize,
    /// The most tools the host is known to handle; `null` when none is known.
    pub limit: Option<usize>,
    /// What passing `limit` does there, in words; `null` when it is not passed.
    pub over_limit: Option<String>,
}

/// The estimated tokens of `value` as a host receives it: its JSON's bytes ÷ 4, rounded up.
pub fn estimate_tokens(value: &Value) -> usize {
    value.to_string().len().div_ceil(4)
}

/// `profile` as a host of kind `client` would be given it, its entry for Lifeline called
/// `entry`: `servers` are the profile's servers with their tools (in order; servers the
/// profile does not serve are left out here), `remembered` the names kept on disk.
pub fn preview(
    profile: &Profile,
    separator: &Separator,
    client: ClientKind,
    entry: &str,
    servers: &[(String, Vec<Tool>)],
    remembered: &Remembered,
) -> ProfilePreview {
    let budget = client.name_budget(entry);
    let served: Vec<&(String, Vec<Tool>)> = servers
        .iter()
        .filter(|(server, _)| profile.serves(server))
        .collect();
    let shown: Vec<(&str, Vec<Tool>)> = served
        .iter()
        .map(|(server, tools)| {
            let kept = tools.iter().filter(|t| profile.shows(server, &t.name));
            (server.as_str(), kept.cloned().collect())
        })
        .collect();
    let catalog = assemble(&shown, &[], budget, separator, remembered, false);
    let mut tools = Vec::new();
    for (server, list) in &served {
        for tool in list {
            let entry = catalog.names.entry(server, &tool.name);
            tools.push(ToolPreview {
                server: server.clone(),
                tool: tool.name.clone(),
                shown: entry.is_some(),
                name: entry.map(|e| e.name.clone()),
                changed: entry.and_then(|e| changed(&e.change, separator)),
            });
        }
    }
    let full = json!({ "tools": catalog.tools });
    let full_tokens = estimate_tokens(&full);
    let search = profile.search();
    let (listed, tokens) = if search {
        let meta = json!({ "tools": search_mode::meta_tools() });
        (3, estimate_tokens(&meta))
    } else {
        (catalog.tools.len(), full_tokens)
    };
    let limit = client.tool_limit();
    let over_limit = limit.filter(|l| listed > l.max).map(|l| {
        let what = match l.over {
            OverLimit::RequestFails => "its requests to the model fail",
            OverLimit::LeftOut => "the tools past it are not given to the model",
            OverLimit::Warns => "it asks you to turn tools off",
        };
        format!(
            "{listed} tools is over the {} {} handles: {what}; use a profile with fewer \
             tools, or search mode",
            l.max,
            client.as_str()
        )
    });
    ProfilePreview {
        profile: profile.name.clone(),
        client: client.as_str().to_owned(),
        budget,
        search,
        tools,
        listed,
        tokens,
        full_tokens,
        limit: limit.map(|l| l.max),
        over_limit,
    }
}

/// A name's change in words.
fn changed(change: &Change, separator: &Separator) -> Option<String> {
    let sep = separator.as_str();
    match change {
        Change::None => None,
        Change::Sanitized => Some(format!(
            "characters other than letters, digits, `_` and `-` became `_` (or a `t` went \
             first, so that it starts with a letter), joined by `{sep}`"
        )),
        Change::Shortened(Why::TooLong { len, budget }) => Some(format!(
            "shortened: the whole name has {len} characters, over this host's {budget}"
        )),
        Change::Shortened(Why::Taken { server, tool }) => Some(format!(
            "shortened: `{tool}` of `{server}` has the whole name (ignoring case)"
        )),
        Change::Shortened(Why::Remembered) => {
            Some("kept as it was first given, so that it does not change".to_owned())
        }
    }
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;
