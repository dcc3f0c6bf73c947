//! The UI's mock host shows the Profiles view and answers its switches the way the shell
//! does, without a copy of the core's naming, counting or filtering: this test builds the
//! view with the shell's own function (`state::profiles::view`, over the core's
//! `aggregate::preview`) and puts each switch through the config's edit path
//! (`set_tool_shown`, `check`), and compares what they answered with the checked-in
//! `ui/src/host/recorded/profiles.json`, which the mock replays (ui/src/host/mock-profiles.ts).
//! It fails when the view or the edits changed; `make recording` (this test with
//! `LIFELINE_WRITE_RECORDING=1`) rewrites the file.
//!
//! The input is the mock's story: its config file's servers (`recording.rs`) with the
//! profiles below, each server's tools at the page load as `scenario.json` recorded them
//! (so `make recording` records that file first), two clients' tokens, Cursor's file with an
//! entry serving `coding`, and one host attached to `coding`. The file holds:
//! - `unbound`, `tokens_problem`: the view's answer beside its profiles;
//! - `states`: views of one profile each, every one once; the first are the profiles at the
//!   load, in the view's order;
//! - `toggles`: from each profile at the load, every switch flipped once (the state it leads
//!   to, or the shell's error), and from each state that leads to, the same switch flipped
//!   back. A switch the recording does not hold gets an error from the mock that says to
//!   record it here.

use super::changes::{check, set_tool_shown};
use super::recording::story;
use crate::error::ErrorView;
use crate::state::profiles::{Inputs, ProfileView, Use, view};
use lifeline_core::config::clients::{self, profile::Endpoint};
use lifeline_core::config::{self, Config};
use lifeline_core::gateway::http::tokens::Client;
use lifeline_core::protocol::mcp::Tool;
use lifeline_core::redact::Redactor;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The mock file's profiles: `coding` leaves two tools out (one by name, one by a glob, so
/// its switch cannot bring it back), `everything` is in search mode; `default` is not in it.
fn lifeline() -> Value {
    json!({"profiles": {
        "coding": {
            "servers": ["filesystem", "github"],
            "tools": {"filesystem": {"exclude": ["crash", "list_*"]}}
        },
        "everything": {"tools": "search"}
    }})
}

/// The clients with a token: `claude-code`'s opens every profile (as in mock-serve.ts),
/// `cursor`'s only `coding`.
fn tokens() -> Vec<Client> {
    let client = |name: &str, profile: Option<&str>| Client {
        name: name.to_owned(),
        created: "2026-12-01T09:12:00.000Z".to_owned(),
        profile: profile.map(str::to_owned),
    };
    vec![
        client("claude-code", None),
        client("cursor", Some("coding")),
    ]
}

/// Cursor's file has one entry, serving `coding` (as `lifeline clients connect cursor
/// --profile coding` writes it).
fn uses() -> Vec<Use> {
    vec![Use {
        client: clients::Client::Cursor,
        path: PathBuf::from("/home/ada/.cursor/mcp.json"),
        endpoint: Endpoint {
            field: "mcpServers.lifeline".to_owned(),
            profile: "coding".to_owned(),
            kind: Some("cursor".to_owned()),
            entry: "lifeline".to_owned(),
        },
    }]
}

/// Each enabled server of `config` with its tools at the page load, as `scenario.json` has
/// them.
pub(super) fn servers(config: &Config) -> Vec<(String, Vec<Tool>)> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/host/recorded/scenario.json");
    let text = std::fs::read_to_string(&path).expect("the recorded scenario");
    let scenario: Value = serde_json::from_str(&text).expect("json");
    let recorded = scenario["servers"].as_array().expect("servers");
    (config.servers.iter())
        .filter(|s| !s.disabled)
        .map(|s| {
            let server = recorded
                .iter()
                .find(|r| r["snapshot"]["server"] == s.name.as_str())
                .unwrap_or_else(|| panic!("{} is not in the scenario", s.name));
            let tools = serde_json::from_value(server["tools"].clone()).expect("tools");
            (s.name.clone(), tools)
        })
        .collect()
}

/// The file after flipping one switch, and the config it loads as, or the shell's error.
fn flip(
    raw: &Value,
    config: &Config,
    (profile, server, tool, shown): (&str, &str, &str, bool),
) -> Result<(Value, Config), ErrorView> {
    let path = PathBuf::from("/home/ada/.config/lifeline/config.json");
    let mut next = raw.clone();
    set_tool_shown(&mut next, config, profile, server, tool, shown)?;
    let loaded = check(raw, &next, &path, None, &Redactor::default())?;
    Ok((next, loaded.unwrap_or_else(|| config.clone())))
}

/// The index of `state` in `states`, added when it is new.
fn state_of(states: &mut Vec<ProfileView>, state: ProfileView) -> usize {
    match states.iter().position(|s| *s == state) {
        Some(i) => i,
        None => {
            states.push(state);
            states.len() - 1
        }
    }
}

fn record() -> Value {
    let raw = json!({"mcpServers": story(), "lifeline": lifeline()});
    let config = config::from_value(raw.clone(), None, &|_| None).expect("the mock's file loads");
    let (servers, tokens) = (servers(&config), Ok(tokens()));
    let attached = BTreeMap::from([(
        "coding".to_owned(),
        vec![Some("cursor-vscode 1.7.2".to_owned())],
    )]);
    let remembered = BTreeMap::new();
    let uses = uses();
    let inputs = Inputs {
        servers: &servers,
        tokens: &tokens,
        uses: &uses,
        attached: &attached,
        remembered: &remembered,
    };
    let profile_of = |config: &Config, name: &str| {
        let view = view(config, &inputs);
        view.profiles
            .into_iter()
            .find(|p| p.preview.profile == name)
            .expect("the profile is still there")
    };
    let initial = view(&config, &inputs);
    let mut states = initial.profiles.clone();
    let mut toggles = Vec::new();
    for (from, at_load) in initial.profiles.iter().enumerate() {
        let name = at_load.preview.profile.as_str();
        let flips = at_load
            .preview
            .tools
            .iter()
            .filter(|_| !at_load.preview.search);
        for t in flips {
            let op = (name, t.server.as_str(), t.tool.as_str(), !t.shown);
            let mut answer = |from: usize,
                              op: (&str, &str, &str, bool),
                              to: Option<usize>,
                              error: Option<&ErrorView>| {
                toggles.push(json!({
                    "from": from, "server": op.1, "tool": op.2, "shown": op.3,
                    "to": to, "error": error,
                }));
            };
            match flip(&raw, &config, op) {
                Err(e) => answer(from, op, None, Some(&e)),
                Ok((flipped, loaded)) => {
                    let to = state_of(&mut states, profile_of(&loaded, name));
                    answer(from, op, Some(to), None);
                    let back = (name, op.1, op.2, t.shown);
                    match flip(&flipped, &loaded, back) {
                        Err(e) => answer(to, back, None, Some(&e)),
                        Ok((_, again)) => {
                            let state = state_of(&mut states, profile_of(&again, name));
                            answer(to, back, Some(state), None);
                        }
                    }
                }
            }
        }
    }
    json!({
        "unbound": initial.unbound,
        "tokens_problem": initial.tokens_problem,
        "states": states,
        "toggles": toggles,
    })
}

#[test]
fn ui_profiles_recording_is_fresh() {
    super::recording::write_or_check(
        "profiles.json",
        &record(),
        "the shell's Profiles view or its switches",
    );
}
