//! `lifeline clients show CLIENT`: what a client sees through Lifeline. For each profile it
//! uses — the one each of its Lifeline entries serves, else `default`, or `--profile` — the
//! tools of that profile's servers under the names this client gets (shown or filtered
//! out, shortened and why), the estimated tokens of its `tools/list`, and the client's known
//! tool limit (`gateway::aggregate::preview`). The tools come from connecting each server
//! once (`reach.rs`); one that cannot be reached is listed as such, its tools unknown.

use super::client_file;
use super::reach::{Reached, reach};
use crate::fleet;
use crate::output::{EXIT_OK, Out, error_json};
use lifeline_core::config::clients::profile::{DEFAULT_ENTRY, Endpoint, endpoints};
use lifeline_core::config::clients::{Client, ClientError};
use lifeline_core::config::{Config, DEFAULT_PROFILE, Profile, ServerConfig};
use lifeline_core::gateway::aggregate::{self, ProfilePreview};
use lifeline_core::gateway::names::ClientKind;
use lifeline_core::gateway::names::store::{self, List};
use lifeline_core::protocol::mcp::Tool;
use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct ShowArgs {
    /// claude-desktop | claude-code | cursor | vscode
    pub client: String,
    /// This profile (default: the profile of each of the client's Lifeline entries, else
    /// `default`)
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// The name of Lifeline's entry in the client's config (default: as its entry says,
    /// else lifeline)
    #[arg(long)]
    pub entry: Option<String>,
    /// Lifeline's config (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The client's config file (default: where the client keeps it)
    #[arg(long)]
    pub client_config: Option<PathBuf>,
    /// How long each server has to connect and list its tools, e.g. 20s, 1m
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s")]
    pub timeout: Duration,
    #[arg(long)]
    pub json: bool,
}

/// One profile as the client uses it.
struct Use {
    /// The client's entry that serves it, if one does.
    field: Option<String>,
    profile: Profile,
    kind: ClientKind,
    entry: String,
}

pub async fn show(args: &ShowArgs, mut out: Out) -> i32 {
    let client = match Client::parse(&args.client) {
        Ok(c) => c,
        Err(e) => return out.error(&Error::from(e)),
    };
    let config = match fleet::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    out.redactor = Redactor::new(config.secrets());
    let (path, found) = match entries(args, client) {
        Ok(f) => f,
        Err(e) => return out.error(&Error::from(e)),
    };
    let uses = match uses(args, client, &config, &found) {
        Ok(u) => u,
        Err(e) => return out.error(&e),
    };
    let servers: Vec<&ServerConfig> = config
        .servers
        .iter()
        .filter(|s| !s.disabled && uses.iter().any(|u| u.profile.serves(&s.name)))
        .collect();
    let reached = reach(&servers, args.timeout).await;
    let names = store::default_path();
    let mut all = Vec::new();
    if !out.json {
        let at = path
            .as_ref()
            .map_or("no config file found".into(), |p| p.display().to_string());
        out.line(&format!("{} · {at}", client.id()));
    }
    for u in &uses {
        let of_profile = || reached.iter().filter(|r| u.profile.serves(&r.server));
        let tools: Vec<(String, Vec<Tool>)> = of_profile()
            .filter_map(|r| Some((r.server.clone(), r.tools.as_ref().ok()?.clone())))
            .collect();
        let unreachable: Vec<&Reached> = of_profile().filter(|r| r.tools.is_err()).collect();
        let budget = u.kind.name_budget(&u.entry);
        let remembered = names
            .as_deref()
            .map(|p| store::load(p, List::Tools, budget, &config.separator))
            .unwrap_or_default();
        let preview = aggregate::preview(
            &u.profile,
            &config.separator,
            u.kind,
            &u.entry,
            &tools,
            &remembered,
        );
        if out.json {
            let unreachable: Vec<Value> = unreachable
                .iter()
                .filter_map(|r| {
                    let e = r.tools.as_ref().err()?;
                    Some(json!({ "server": r.server, "error": error_json(e) }))
                })
                .collect();
            all.push(json!({
                "field": u.field, "entry": u.entry, "preview": preview,
                "unreachable": unreachable,
            }));
        } else {
            print(&out, u, &preview, &unreachable, &config);
        }
    }
    if out.json {
        out.json_line(&json!({ "ok": true, "result": {
            "client": client.id(), "path": path, "profiles": all,
        }}));
    }
    EXIT_OK
}

/// The client's file, when it has one, and its entries that serve a profile. A file named
/// with `--client-config` must be there; a client without one is shown `default`.
fn entries(
    args: &ShowArgs,
    client: Client,
) -> Result<(Option<PathBuf>, Vec<Endpoint>), ClientError> {
    let Ok(path) = client_file(client, args.client_config.as_deref()) else {
        return Ok((None, Vec::new()));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ClientError::new(
            format!("could not read {}: {e}", path.display()),
            Vec::new(),
            "",
        )
    })?;
    let found = endpoints(client, &path, &text)?;
    Ok((Some(path), found))
}

/// The profiles the client uses: `--profile`, else each entry's, else `default`.
fn uses(
    args: &ShowArgs,
    client: Client,
    config: &Config,
    found: &[Endpoint],
) -> Result<Vec<Use>, Error> {
    let own = ClientKind::of_client(client);
    let profile = |name: &str, field: Option<&str>| {
        config.profile(name).ok_or_else(|| {
            let at = field.map_or(String::new(), |f| format!(" (the client's {f} serves it)"));
            let why = format!(
                "there is no profile `{name}` in the config{at}; its profiles are: {}",
                config.profile_names().join(", ")
            );
            Error::new(ErrorKind::Config, why)
        })
    };
    let kind = |e: &Endpoint| ClientKind::of_entry(e, client);
    let entry = |e: Option<&Endpoint>| {
        let named = args.entry.clone().or_else(|| e.map(|e| e.entry.clone()));
        named.unwrap_or_else(|| DEFAULT_ENTRY.to_owned())
    };
    if let Some(name) = &args.profile {
        let e = found.iter().find(|e| e.profile == *name);
        return Ok(vec![Use {
            field: e.map(|e| e.field.clone()),
            profile: profile(name, None)?,
            kind: e.map_or(own, kind),
            entry: entry(e),
        }]);
    }
    if found.is_empty() {
        return Ok(vec![Use {
            field: None,
            profile: profile(DEFAULT_PROFILE, None)?,
            kind: own,
            entry: entry(None),
        }]);
    }
    found
        .iter()
        .map(|e| {
            Ok(Use {
                field: Some(e.field.clone()),
                profile: profile(&e.profile, Some(&e.field))?,
                kind: kind(e),
                entry: entry(Some(e)),
            })
        })
        .collect()
}

/// One profile, as text: a line per tool, one per unreachable server, and the totals.
fn print(out: &Out, u: &Use, p: &ProfilePreview, unreachable: &[&Reached], config: &Config) {
    let by = u.field.as_deref().map_or_else(
        || "not in the client's file yet".to_owned(),
        |f| format!("as {f} serves it"),
    );
    out.line(&format!(
        "profile {} ({by}): names for {}, at most {} characters with entry `{}`",
        p.profile, p.client, p.budget, u.entry
    ));
    let sep = config.separator.as_str();
    let label = |t: &aggregate::ToolPreview| {
        t.name
            .clone()
            .unwrap_or_else(|| format!("{}{sep}{}", t.server, t.tool.escape_debug()))
    };
    let width = p.tools.iter().map(|t| label(t).len()).max().unwrap_or(0);
    for t in &p.tools {
        let note = match (&t.name, &t.changed) {
            (None, _) => "filtered out by the profile".to_owned(),
            // The server's own name for it is the server's to choose: shown escaped.
            (Some(_), Some(why)) => format!("{} of {}: {why}", t.tool.escape_debug(), t.server),
            (Some(_), None) => String::new(),
        };
        out.line(format!("  {:width$}  {note}", label(t)).trim_end());
    }
    for r in unreachable {
        if let Err(e) = &r.tools {
            out.line(&format!(
                "  {}: cannot connect, its tools are unknown and not counted: {e}",
                r.server
            ));
        }
    }
    if p.search {
        out.line(&format!(
            "  search mode: the client lists find_tools, call_tool and describe_tool; the {} \
             tools above are found and called through them (every tool listed would be \
             about {} tokens)",
            p.tools.iter().filter(|t| t.shown).count(),
            p.full_tokens
        ));
    }
    let limit = match (&p.over_limit, p.limit) {
        (Some(over), _) => over.clone(),
        (None, Some(max)) => format!("within the {max} tools {} handles", p.client),
        (None, None) => format!("{} has no known tool limit", p.client),
    };
    out.line(&format!(
        "  {} tool{} listed · about {} tokens · {limit}",
        p.listed,
        if p.listed == 1 { "" } else { "s" },
        p.tokens
    ));
}
