//! The Profiles view of a running app: a real `lifeline-fixture` server, a config file with
//! profiles in a temp directory, a tokens file beside it, and the commands as the window
//! process sends them (`profiles_get`, `profile_tool_set`).

use crate::core_process::{Core, Headless};
use crate::serve::Served;
use crate::test_support::{block_on, fixture, invoke, start};
use lifeline_core::config::clients::Client as ClientFile;
use lifeline_core::gateway::Target;
use lifeline_core::gateway::attach::Request;
use lifeline_core::gateway::http::tokens;
use serde_json::{Value, json};
use std::sync::Arc;

/// `fs` (the fixture), `off` (disabled) and three profiles: `default` (not in the file),
/// `coding` (fs without `crash` and `std*`) and `everything` (search mode).
fn file() -> Value {
    json!({
        "mcpServers": {
            "fs": {"command": fixture(), "args": ["stdio"]},
            "off": {"command": fixture(), "args": ["stdio"], "disabled": true}
        },
        "lifeline": {"profiles": {
            "coding": {"servers": ["fs", "off"], "tools": {"fs": {"exclude": ["crash", "std*"]}}},
            "everything": {"tools": "search"}
        }}
    })
}

struct App {
    dir: tempfile::TempDir,
    core: Arc<Core>,
    /// The fixture's tools, as `tool_list` gives them.
    tools: Vec<String>,
}

impl App {
    fn start() -> App {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, serde_json::to_string_pretty(&file()).unwrap()).unwrap();
        let tokens_file = tokens::path_in(dir.path());
        tokens::add_bound(&tokens_file, "cursor", Some("coding")).unwrap();
        tokens::add(&tokens_file, "claude-code").unwrap();
        let state = start(lifeline_core::config::load(&path).unwrap(), Some(&path));
        block_on(state.wait_for("fs", |s| !s.tools.is_empty()));
        let headless = Arc::new(Headless::new(|| {}));
        let core = Core::with_served(state, Served::new(Some(tokens_file)), None, headless);
        let listed = invoke(&core, "tool_list", json!({"server": "fs"})).unwrap();
        let tools = (listed.as_array().unwrap().iter())
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        App { dir, core, tools }
    }

    fn view(&self) -> Value {
        invoke(&self.core, "profiles_get", json!({})).unwrap()
    }

    fn set(&self, profile: &str, tool: &str, shown: bool) -> Result<Value, Value> {
        let args = json!({"profile": profile, "server": "fs", "tool": tool, "shown": shown});
        invoke(&self.core, "profile_tool_set", args)
    }

    fn file(&self) -> Value {
        let text = std::fs::read_to_string(self.dir.path().join("config.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn stop(self) {
        block_on(self.core.state.shutdown());
    }
}

/// The profile `name` of `view`.
fn profile<'a>(view: &'a Value, name: &str) -> &'a Value {
    let all = view["profiles"].as_array().unwrap();
    all.iter()
        .find(|p| p["preview"]["profile"] == name)
        .unwrap_or_else(|| panic!("no profile {name} in {view}"))
}

#[test]
fn each_profile_shows_its_tools_names_tokens_and_clients() {
    let app = App::start();
    let view = app.view();
    let names: Vec<&Value> = view["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["preview"]["profile"])
        .collect();
    assert_eq!(names, ["default", "coding", "everything"]);
    let n = app.tools.len();
    assert!(
        n > 3 && app.tools.iter().any(|t| t == "stderr"),
        "{:?}",
        app.tools
    );

    let default = profile(&view, "default");
    assert_eq!(default["defined"], false);
    assert_eq!(default["preview"]["client"], "unknown");
    assert_eq!(default["preview"]["listed"], n);
    assert_eq!(
        default["preview"]["tools"][0]["name"],
        format!("fs__{}", app.tools[0])
    );
    assert!(default["preview"]["tokens"].as_u64().unwrap() > 0);
    assert_eq!(default["tokens"], json!([]));
    assert_eq!(
        default["no_tools"],
        json!([]),
        "a disabled server is not in a profile"
    );

    let coding = profile(&view, "coding");
    assert_eq!(coding["defined"], true);
    assert_eq!(
        coding["preview"]["listed"],
        n - 2,
        "crash and stderr are left out"
    );
    assert!(coding["preview"]["tokens"].as_u64() < default["preview"]["tokens"].as_u64());
    assert_eq!(coding["tokens"], json!(["cursor"]));
    // `crash` is the switch's to turn on; `stderr` is left out by a glob.
    let fixed = coding["fixed"].as_array().unwrap();
    assert_eq!(fixed.len(), 1, "{fixed:?}");
    assert_eq!(fixed[0]["tool"], "stderr");
    assert!(
        fixed[0]["why"].as_str().unwrap().contains("`std*`"),
        "{fixed:?}"
    );

    let everything = profile(&view, "everything");
    assert_eq!(everything["preview"]["search"], true);
    assert_eq!(everything["preview"]["listed"], 3);
    assert_eq!(
        everything["preview"]["full_tokens"],
        default["preview"]["tokens"]
    );
    assert!(
        everything["preview"]["tokens"].as_u64() < everything["preview"]["full_tokens"].as_u64()
    );
    assert_eq!(everything["fixed"], json!([]));

    assert_eq!(view["unbound"], json!(["claude-code"]));
    assert_eq!(view["tokens_problem"], Value::Null);
    app.stop();
}

#[test]
fn a_switch_writes_the_exclude_and_the_view_follows() {
    let app = App::start();
    let n = app.tools.len();
    let echo = app.tools[0].clone();
    let view = app.set("default", &echo, false).unwrap();
    assert_eq!(profile(&view, "default")["preview"]["listed"], n - 1);
    assert_eq!(profile(&view, "default")["defined"], true);
    let file = app.file();
    assert_eq!(
        file["lifeline"]["profiles"]["default"],
        json!({"tools": {"fs": {"exclude": [echo]}}})
    );
    assert_eq!(
        file["lifeline"]["profiles"]["coding"],
        self::file()["lifeline"]["profiles"]["coding"]
    );

    let view = app.set("default", &echo, true).unwrap();
    assert_eq!(profile(&view, "default")["preview"]["listed"], n);
    let view = app.set("coding", "crash", true).unwrap();
    assert_eq!(profile(&view, "coding")["preview"]["listed"], n - 1);
    assert_eq!(
        app.file()["lifeline"]["profiles"]["coding"]["tools"]["fs"],
        json!({"exclude": ["std*"]})
    );

    // What a switch cannot do is refused, and nothing is written.
    let before = app.file();
    let refused = app.set("coding", "stderr", true).unwrap_err();
    assert_eq!(refused["kind"], "config");
    assert!(
        refused["message"].as_str().unwrap().contains("`std*`"),
        "{refused}"
    );
    let refused = app.set("everything", &echo, false).unwrap_err();
    assert!(
        refused["message"].as_str().unwrap().contains("search mode"),
        "{refused}"
    );
    assert_eq!(app.file(), before);
    app.stop();
}

#[test]
fn the_hosts_attached_to_a_profile_are_named_while_their_sessions_last() {
    let app = App::start();
    let attach = |profile: &str| {
        let request = Request {
            target: Target::Profile(profile.to_owned()),
            config: None,
        };
        block_on(app.core.state.attach(&request)).unwrap_or_else(|e| panic!("{e:?}"))
    };
    let attached = |view: &Value, name: &str| profile(view, name)["attached"].clone();
    let mut session = {
        let _runtime = crate::test_support::runtime().enter();
        attach("coding").start()
    };
    let dropped = attach("coding");
    let everything = attach("everything");
    let view = app.view();
    assert_eq!(
        attached(&view, "coding"),
        json!([null, null]),
        "no host said its name"
    );
    assert_eq!(attached(&view, "everything"), json!([null]));
    assert_eq!(attached(&view, "default"), json!([]));

    // The host's initialize names it: its clientInfo, cleaned.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cursor-vscode\u{7}", "version": "1.7.2"}
    }});
    let message = lifeline_core::protocol::Message::from_value(initialize).unwrap();
    session.input.send(message).unwrap();
    let answered = block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(30), session.output.recv()).await
    });
    assert!(
        matches!(answered, Ok(Some(_))),
        "the session did not answer initialize within 30 s: {answered:?}"
    );
    let view = app.view();
    let mut coding: Vec<Value> = attached(&view, "coding").as_array().unwrap().clone();
    coding.sort_by_key(|v| v.is_null());
    assert_eq!(coding, [json!("cursor-vscode 1.7.2"), Value::Null]);

    // A session that ended (here: never started) is forgotten.
    drop((dropped, everything));
    let view = app.view();
    assert_eq!(attached(&view, "coding"), json!(["cursor-vscode 1.7.2"]));
    assert_eq!(attached(&view, "everything"), json!([]));
    drop(session);
    app.stop();
}

#[test]
fn the_clients_whose_file_serves_a_profile_and_each_hosts_names_are_shown() {
    let app = App::start();
    // Cursor's file serves `coding` under the entry `ll`; Claude Code's serves `default`
    // (`--all`) for Codex's names; VS Code's serves nothing of Lifeline's.
    let cursor = app.dir.path().join("cursor.json");
    let entry = |args: &[&str]| json!({"command": "/usr/bin/lifeline", "args": args});
    let file = |servers: Value| serde_json::to_string(&json!({"mcpServers": servers})).unwrap();
    std::fs::write(
        &cursor,
        file(json!({
            "ll": entry(&["connect", "--profile", "coding", "--client", "cursor", "--entry", "ll"]),
            "other": {"command": "npx", "args": ["x"]}
        })),
    )
    .unwrap();
    let claude = app.dir.path().join("claude.json");
    std::fs::write(
        &claude,
        file(json!({"lifeline": entry(&["connect", "--all", "--client", "codex"])})),
    )
    .unwrap();
    let files = vec![
        (
            ClientFile::Cursor,
            vec![app.dir.path().join("missing.json"), cursor.clone()],
        ),
        (ClientFile::ClaudeCode, vec![claude.clone()]),
        (
            ClientFile::VsCode,
            vec![app.dir.path().join("missing.json")],
        ),
    ];
    let view = block_on(app.core.state.profiles(Ok(Vec::new()), files)).unwrap();
    let view = serde_json::to_value(view).unwrap();
    let coding = profile(&view, "coding");
    assert_eq!(
        coding["clients"],
        json!([{"client": "cursor", "label": "Cursor", "field": "mcpServers.ll",
                "path": cursor.display().to_string()}])
    );
    assert_eq!(
        profile(&view, "default")["clients"][0]["label"],
        "Claude Code"
    );
    assert_eq!(profile(&view, "everything")["clients"], json!([]));

    // Every known host but the unknown one, in order, with the entry its names make room for.
    let host = |p: &Value, kind: &str| {
        (p["hosts"].as_array().unwrap().iter())
            .find(|h| h["client"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no host {kind} in {p}"))
    };
    let kinds: Vec<&Value> = (coding["hosts"].as_array().unwrap().iter())
        .map(|h| &h["client"])
        .collect();
    assert_eq!(
        kinds,
        [
            "claude-code",
            "claude-desktop",
            "cursor",
            "vscode",
            "codex",
            "gemini",
            "windsurf"
        ]
    );
    assert_eq!(host(coding, "cursor")["entry"], "ll");
    assert_eq!(
        host(coding, "cursor")["budget"],
        57,
        "59 less the entry's 2"
    );
    assert_eq!(host(coding, "cursor")["limit"], 40);
    assert_eq!(host(coding, "vscode")["entry"], "lifeline");
    assert_eq!(host(profile(&view, "default"), "codex")["budget"], 49);
    assert_eq!(
        host(coding, "claude-code")["listed"],
        coding["preview"]["listed"]
    );
    // The fixture's names are short: no host renames one.
    assert_eq!(host(coding, "claude-code")["renamed"], json!([]));
    app.stop();
}

#[test]
fn the_tokens_file_that_cannot_be_read_is_said_and_the_profiles_still_shown() {
    let app = App::start();
    std::fs::write(tokens::path_in(app.dir.path()), "not json").unwrap();
    let view = app.view();
    assert_eq!(view["unbound"], json!([]));
    let problem = view["tokens_problem"].as_str().unwrap_or_default();
    assert!(problem.contains("tokens"), "{view}");
    assert_eq!(profile(&view, "coding")["tokens"], json!([]));
    app.stop();
}
