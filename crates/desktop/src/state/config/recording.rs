//! The UI's mock host edits its config the way the shell does without a copy of the shell's
//! rules: this test puts the editor's edits through the real functions (`add`, `replace`,
//! `check`, `forms`) and compares what they answered with the checked-in
//! `ui/src/host/recorded/config.json`, which the mock replays (ui/src/host/mock-config.ts).
//! It fails when the masking or the validation changed; `make recording` (this test with
//! `LIFELINE_WRITE_RECORDING=1`) rewrites the file.
//!
//! The file holds:
//! - `servers`: the entry behind each row the mock can show (the story's four servers and
//!   the three archetypes generated rows replay), and `clients`: the entries the sample
//!   clients' servers import as;
//! - `masks`: every entry the mock can hold, with its form as `config_get` shows it (no name);
//! - `edits`: each edit the UI's tests and demo make, with what the mock can see of the file
//!   (the edited server's entry, the other servers' names) and the shell's answer: the
//!   entry saved under its name, or the error.
//!
//! An edit that is not recorded gets an error from the mock that says to record it here.

use super::changes::{add, check, replace};
use super::edit::ServerForm;
use super::edit::{KeyValue, form_of};
use crate::error::ErrorView;
use lifeline_core::redact::Redactor;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// One edit the UI makes: a new server, or a change to the server `name`.
enum Op {
    Add(ServerForm),
    Edit(&'static str, ServerForm),
}

/// The story's servers as the mock's config file holds them (tokens made up).
pub(super) fn story() -> Value {
    json!({
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
        "github": {
            "url": "https://github.example.com/mcp",
            "headers": {"Authorization": "Bearer mock-github-token"}
        },
        "linear": {
            "type": "sse",
            "url": "https://linear.example.com/sse",
            "headers": {"Authorization": "Bearer mock-linear-token"}
        },
        "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/home/ada/notes.db"]}
    })
}

/// The entries of the archetypes the mock's generated rows and added servers replay.
fn archetypes() -> Value {
    json!({
        "generated-ok": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
        "generated-refusing": {"url": "http://127.0.0.1:9/mcp"},
        "generated-off": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "disabled": true}
    })
}

/// What the sample clients' servers import as.
fn clients() -> Value {
    json!({
        "claude_desktop": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada"]},
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
            "brave-search": {"command": "npx", "args": ["-y", "brave-search-mcp"], "env": {"BRAVE_API_KEY": "mock-brave-key"}}
        },
        "cursor": {
            "linear": {
                "type": "http",
                "url": "https://mcp.linear.app/mcp",
                "headers": {"Authorization": "Bearer ${env:LINEAR_TOKEN}"}
            }
        }
    })
}

/// An empty form, as the editor starts one.
fn blank(name: &str) -> ServerForm {
    ServerForm {
        name: name.to_owned(),
        transport: "stdio".into(),
        command: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        url: String::new(),
        headers: Vec::new(),
        disabled: false,
    }
}

/// The masked form `config_get` shows for the server `name` of `file`.
fn shown(file: &Value, name: &str) -> ServerForm {
    form_of(name, &file["mcpServers"][name])
}

/// The sequences of edits the UI makes, each from the story's file.
fn sequences() -> Vec<Vec<Op>> {
    let ftp = |name: &str, url: &str| ServerForm {
        transport: "http".into(),
        url: url.into(),
        ..blank(name)
    };
    // The e2e's editor: switching the transport keeps what was typed for the other one.
    let notes = ServerForm {
        command: "notes-mcp".into(),
        args: vec!["--root".into(), "/home/ada/notes".into()],
        env: vec![KeyValue {
            key: "NOTES_TOKEN".into(),
            value: "s3cret-notes".into(),
        }],
        url: "ftp://127.0.0.1/mcp".into(),
        ..blank("notes")
    };
    let story = json!({"mcpServers": story()});
    let notes_shown = {
        let mut file = story.clone();
        add(&mut file, &notes).expect("notes is added");
        ServerForm {
            disabled: true,
            ..shown(&file, "notes")
        }
    };
    vec![
        // ui/src/host/mock-config.test.ts
        vec![
            Op::Add(ServerForm {
                command: "notes-mcp".into(),
                ..blank("notes")
            }),
            Op::Add(ServerForm {
                command: "x".into(),
                ..blank("notes")
            }),
            Op::Add(ftp("web", "ftp://x")),
        ],
        vec![Op::Edit(
            "github",
            ServerForm {
                disabled: true,
                ..shown(&story, "github")
            },
        )],
        // ui/e2e/config.test.mjs
        vec![
            Op::Add(ftp("notes", "ftp://127.0.0.1/mcp")),
            Op::Add(notes),
            Op::Edit("notes", notes_shown),
        ],
    ]
}

fn names_except(file: &Value, except: Option<&str>) -> Vec<String> {
    file["mcpServers"]
        .as_object()
        .map(|s| {
            s.keys()
                .filter(|k| Some(k.as_str()) != except)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Runs every sequence on a copy of the story's file; each edit's record, and every entry
/// saved on the way.
fn record_edits(path: &Path) -> (Vec<Value>, Vec<Value>) {
    let redactor = Redactor::default();
    let mut edits = Vec::new();
    let mut saved = Vec::new();
    for sequence in sequences() {
        let mut file = json!({"mcpServers": story()});
        for op in sequence {
            let (op_name, name, form, old) = match &op {
                Op::Add(form) => ("add", None, form, Value::Null),
                Op::Edit(name, form) => {
                    ("edit", Some(*name), form, file["mcpServers"][name].clone())
                }
            };
            let others = names_except(&file, name);
            let new_name = form.name.trim().to_owned();
            let mut next = file.clone();
            let answer = match &op {
                Op::Add(form) => add(&mut next, form),
                Op::Edit(name, form) => replace(&mut next, name, form),
            }
            .and_then(|()| check(&file, &next, path, Some(&new_name), &redactor));
            let (outcome, error) = match answer {
                Ok(_) => {
                    let entry = next["mcpServers"][&new_name].clone();
                    saved.push(entry.clone());
                    file = next;
                    (json!({"name": new_name, "entry": entry}), Value::Null)
                }
                Err(e) => (Value::Null, error_json(&e)),
            };
            edits.push(json!({
                "op": op_name,
                "name": name,
                "form": form,
                "old": old,
                "others": others,
                "saved": outcome,
                "error": error,
            }));
        }
    }
    (edits, saved)
}

fn error_json(e: &ErrorView) -> Value {
    serde_json::to_value(e).expect("an ErrorView serializes")
}

/// Every entry the mock can hold, each once, with its masked form (its name left out).
fn masks(entries: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for entry in entries {
        if out.iter().any(|m| m["entry"] == entry) {
            continue;
        }
        let mut form = serde_json::to_value(form_of("", &entry)).expect("a form serializes");
        form.as_object_mut().map(|f| f.shift_remove("name"));
        out.push(json!({"entry": entry, "form": form}));
    }
    out
}

fn entries(of: &Value) -> Vec<Value> {
    of.as_object()
        .map(|m: &Map<String, Value>| m.values().cloned().collect())
        .unwrap_or_default()
}

fn record() -> Value {
    let path = PathBuf::from("/home/ada/.config/lifeline/config.json");
    let (edits, saved) = record_edits(&path);
    let (story, archetypes, clients) = (story(), archetypes(), clients());
    let mut servers = story.clone();
    servers
        .as_object_mut()
        .expect("an object")
        .extend(archetypes.as_object().expect("an object").clone());
    let all = entries(&servers)
        .into_iter()
        .chain(
            clients
                .as_object()
                .into_iter()
                .flat_map(|c| c.values().flat_map(entries)),
        )
        .chain(saved);
    json!({
        "servers": servers,
        "clients": clients,
        "masks": masks(all),
        "edits": edits,
    })
}

/// Rewrites `ui/src/host/recorded/{file}` with `recorded` under `make recording`
/// (`LIFELINE_WRITE_RECORDING=1`); otherwise fails while the file differs, saying that
/// `what` changed. The mock host replays these files.
pub(super) fn write_or_check(file: &str, recorded: &Value, what: &str) {
    let text = serde_json::to_string_pretty(recorded).expect("json") + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ui/src/host/recorded")
        .join(file);
    if std::env::var_os("LIFELINE_WRITE_RECORDING").is_some_and(|v| v == "1") {
        std::fs::write(&path, text).expect("write the recording");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "{} is stale: {what} changed. Rewrite it with `make recording` and check the UI tests \
         still pass.",
        path.display()
    );
}

#[test]
fn ui_config_recording_is_fresh() {
    write_or_check("config.json", &record(), "the shell's config editing");
}
