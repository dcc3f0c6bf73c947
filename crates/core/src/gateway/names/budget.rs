//! Which host a session serves, and what that host takes: how long a tool name may be once
//! it has put its own prefix in front (the name budget), and how many tools it handles.
//! Each figure below names its sources: public issue threads and the hosts' own code, read
//! for issue 27 (docs/gateway.md, "Each host's budget"). Where a figure is not known, the
//! strictest known one is used, so that a name fits every host.
//!
//! The kind comes from an explicit `--client KIND` (or a token bound to one) or else from
//! the `clientInfo.name` of `initialize`. That name is whatever the host says it is: it
//! picks a budget and nothing else — no permission depends on it.

use crate::config::clients::Client;
use crate::config::clients::profile::Endpoint;
use std::fmt;
use std::str::FromStr;

/// The hosts Lifeline knows the limits of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientKind {
    ClaudeCode,
    /// Claude Desktop; claude.ai on the web says the same `clientInfo.name` (`claude-ai`).
    ClaudeDesktop,
    Cursor,
    VsCode,
    Codex,
    Gemini,
    Windsurf,
    /// A host not recognised: it gets the strictest budget known.
    Unknown,
}

/// How much of a `clientInfo.name` is looked at: the known ones are a few dozen bytes.
const MAX_CLIENT_INFO: usize = 256;

/// The longest tool name the model APIs behind these hosts take, their prefix included.
const API_MAX: usize = 64;

/// Parts of `clientInfo.name` as the hosts send it (lowercased; apify/mcp-client-capabilities,
/// `mcp-clients.json`: `claude-code`, `claude-ai`, `cursor-vscode`, `Visual Studio Code`,
/// `codex-mcp-client`, `gemini-cli-mcp-client`, `windsurf-client`…), tried in this order:
/// Cursor and Windsurf before VS Code, whose name theirs contain (`cursor-vscode`).
const PARTS: [(&str, ClientKind); 9] = [
    ("claude-code", ClientKind::ClaudeCode),
    ("claude-ai", ClientKind::ClaudeDesktop),
    ("cursor", ClientKind::Cursor),
    ("windsurf", ClientKind::Windsurf),
    ("codex", ClientKind::Codex),
    ("gemini", ClientKind::Gemini),
    ("visual studio code", ClientKind::VsCode),
    ("visual-studio-code", ClientKind::VsCode),
    ("vscode", ClientKind::VsCode),
];

/// How many tools a host handles, and what happens past that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimit {
    pub max: usize,
    pub over: OverLimit,
}

/// What a host does with more tools than its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverLimit {
    /// Its request to the model fails.
    RequestFails,
    /// The tools past the limit are not given to the model.
    LeftOut,
    /// It asks the person to turn tools off, or what it does is not known.
    Warns,
}

impl ClientKind {
    /// Every kind: those whose name budget is known first (`KNOWN`), then Windsurf and
    /// `Unknown`, which take the least of theirs.
    pub const ALL: [ClientKind; 8] = [
        ClientKind::ClaudeCode,
        ClientKind::ClaudeDesktop,
        ClientKind::Cursor,
        ClientKind::VsCode,
        ClientKind::Codex,
        ClientKind::Gemini,
        ClientKind::Windsurf,
        ClientKind::Unknown,
    ];

    /// The kind's name, as `--client` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::ClaudeCode => "claude-code",
            ClientKind::ClaudeDesktop => "claude-desktop",
            ClientKind::Cursor => "cursor",
            ClientKind::VsCode => "vscode",
            ClientKind::Codex => "codex",
            ClientKind::Gemini => "gemini",
            ClientKind::Windsurf => "windsurf",
            ClientKind::Unknown => "unknown",
        }
    }

    /// The kind's name for people: "Claude Code", …, "Any host" for `Unknown` (whose
    /// budget and limit are the strictest, so that what fits it fits every host).
    pub fn label(self) -> &'static str {
        match self {
            ClientKind::ClaudeCode => "Claude Code",
            ClientKind::ClaudeDesktop => "Claude Desktop",
            ClientKind::Cursor => "Cursor",
            ClientKind::VsCode => "VS Code",
            ClientKind::Codex => "Codex",
            ClientKind::Gemini => "Gemini CLI",
            ClientKind::Windsurf => "Windsurf",
            ClientKind::Unknown => "Any host",
        }
    }

    /// The host that reads a client's file Lifeline rewrites (its id is the kind's name).
    pub fn of_client(client: Client) -> ClientKind {
        client.id().parse().unwrap_or(ClientKind::Unknown)
    }

    /// The host an entry of `client`'s file names its tools for: the entry's `--client`,
    /// else `client`'s own.
    pub fn of_entry(endpoint: &Endpoint, client: Client) -> ClientKind {
        (endpoint.kind.as_deref())
            .and_then(|k| k.parse().ok())
            .unwrap_or_else(|| ClientKind::of_client(client))
    }

    /// The host a `clientInfo.name` says it is: ignoring case and surrounding spaces, an
    /// exact known name, else the first known part it contains, else `Unknown`. Only its
    /// first 256 bytes are looked at.
    pub fn from_client_info(name: &str) -> ClientKind {
        let mut end = name.len().min(MAX_CLIENT_INFO);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let name = name[..end].trim().to_ascii_lowercase();
        PARTS
            .iter()
            .find(|(part, _)| name.contains(part))
            .map_or(ClientKind::Unknown, |&(_, kind)| kind)
    }

    /// How many characters a tool name may have at this host, when its entry for Lifeline
    /// in the host's config is called `entry` (`lifeline` by default; `lifeline clients
    /// connect` knows it). The host's own prefix is taken off; `names::clamp_budget` keeps
    /// the result within what the naming scheme works with.
    ///
    /// - Claude Code, Claude Desktop: `mcp__{entry}__{name}` must be at most 64 characters
    ///   (`^[a-zA-Z0-9_-]{1,64}$`): 57 minus the entry. metatool-ai/metamcp#249;
    ///   anthropics/claude-code#955, #2412, #19770, #19882; awslabs/mcp#2214; Claude
    ///   Desktop's error "tools.N.FrontendRemoteMcpToolDefinition.name … should match
    ///   pattern ^[a-zA-Z0-9_-]{1,64}$" (harsha-iiiv/openapi-mcp-generator#4). That Desktop
    ///   prefixes like Claude Code is not confirmed, so it is counted the same.
    /// - Codex: `mcp__{server}__{tool}`, at most 64 (`MAX_TOOL_NAME_LENGTH` in
    ///   openai/codex `codex-rs/core/src/mcp_connection_manager.rs`; longer ones are cut and
    ///   given a sha1 suffix there): 57 minus the entry.
    /// - Cursor: the entry and the name together under 60 (ComposioHQ/composio#2788: a
    ///   1-character server and a 59-character tool is "length (60) exceeds 60";
    ///   sparfenyuk/mcp-proxy#45, idosal/git-mcp#31, nrwl/nx-console#2876): 59 minus the entry.
    /// - VS Code: the tool's id is `mcp_{label}_{name}` cut to 64, the prefix at most 18
    ///   characters (`McpToolName.MaxPrefixLen`, the label cut to 13, a number added on a
    ///   clash; microsoft/vscode `src/vs/workbench/contrib/mcp/common/mcpService.ts`,
    ///   `mcpServer.ts`; PRs #243602, #249929). The cut is silent, so two long names can
    ///   become one there: 46, whatever the entry.
    /// - Gemini CLI: at most 63, and `{server}__` is put in front when two servers have a
    ///   tool of one name (second-hand: guardian-intelligence/apm2, `provider_gemini_cli.md`):
    ///   61 minus the entry, to be safe.
    /// - Windsurf: not known (docs.windsurf.com/windsurf/cascade/mcp gives no figure): the
    ///   strictest, as for `Unknown`.
    /// - Unknown: the strictest of all the above for this entry.
    pub fn name_budget(self, entry: &str) -> usize {
        budget(self, entry.chars().count())
    }

    /// How many tools the host is known to handle, if it is known.
    ///
    /// - VS Code: 128 per request to the model, its own tools included; more fail the
    ///   request (microsoft/vscode#258890, #261213; microsoft/vscode-copilot-release#11653,
    ///   #13065).
    /// - Cursor: 40 ("only the first 40 tools", docs.cursor.com/context/model-context-protocol
    ///   as quoted in anyproto/anytype-mcp#5 and getsentry/sentry-mcp-stdio#3); later
    ///   versions warn at 80 instead (Snowflake-Labs/mcp#77), so 40 is the safe figure.
    /// - Windsurf: 100 tools in all (docs.windsurf.com/windsurf/cascade/mcp).
    /// - Unknown: the strictest, 40.
    /// - Claude Code, Claude Desktop, Codex, Gemini: none known.
    pub fn tool_limit(self) -> Option<ToolLimit> {
        let limit = |max, over| Some(ToolLimit { max, over });
        match self {
            ClientKind::VsCode => limit(128, OverLimit::RequestFails),
            ClientKind::Cursor => limit(40, OverLimit::LeftOut),
            ClientKind::Windsurf => limit(100, OverLimit::Warns),
            ClientKind::Unknown => limit(40, OverLimit::Warns),
            ClientKind::ClaudeCode
            | ClientKind::ClaudeDesktop
            | ClientKind::Codex
            | ClientKind::Gemini => None,
        }
    }
}

/// The kinds whose budget is known, which `Unknown` and Windsurf take the least of: the
/// first six of `ClientKind::ALL`.
const KNOWN: &[ClientKind] = (&ClientKind::ALL as &[ClientKind]).split_at(6).0;

/// `ClientKind::name_budget` for an entry name of `entry` characters.
fn budget(kind: ClientKind, entry: usize) -> usize {
    match kind {
        ClientKind::ClaudeCode | ClientKind::ClaudeDesktop | ClientKind::Codex => {
            API_MAX.saturating_sub("mcp__".len() + entry + "__".len())
        }
        ClientKind::Cursor => 59usize.saturating_sub(entry),
        ClientKind::VsCode => API_MAX - 18,
        ClientKind::Gemini => 63usize.saturating_sub(entry + "__".len()),
        ClientKind::Windsurf | ClientKind::Unknown => {
            KNOWN.iter().map(|&k| budget(k, entry)).min().unwrap_or(0)
        }
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind `--client` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{shown:?} is not a client kind: claude-code, claude-desktop, cursor, vscode, codex, \
     gemini, windsurf or unknown"
)]
pub struct UnknownKind {
    /// The value, at most its first 32 characters.
    shown: String,
}

impl FromStr for ClientKind {
    type Err = UnknownKind;

    /// A kind's name (`as_str`), ignoring case, or a common other spelling of it
    /// (`claude`, `vs-code`, `visual-studio-code`, `gemini-cli`).
    fn from_str(kind: &str) -> Result<ClientKind, UnknownKind> {
        let lower = kind.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "claude" => Some(ClientKind::ClaudeCode),
            "vs-code" | "visual-studio-code" => Some(ClientKind::VsCode),
            "gemini-cli" => Some(ClientKind::Gemini),
            _ => None,
        };
        alias
            .or_else(|| ClientKind::ALL.into_iter().find(|k| k.as_str() == lower))
            .ok_or_else(|| UnknownKind {
                shown: kind.chars().take(32).collect(),
            })
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
