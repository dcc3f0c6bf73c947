//! `lifeline clients list`: each client's file, its servers and whether each goes through
//! Lifeline, and what `restore` would put back.

use crate::output::{EXIT_OK, Out};
use lifeline_core::config::clients::{self, Client, backup};
use serde_json::{Value, json};
use std::path::Path;

pub fn list(out: &Out) -> i32 {
    let state = backup::default_state_path();
    let records = state
        .as_deref()
        .and_then(|s| backup::records(s).ok())
        .unwrap_or_default();
    // The latest record per file: what `restore` would put back, and from where.
    let latest = |client: Client, path: &Path| {
        records
            .iter()
            .rev()
            .find(|r| r.client == client.id() && r.path == path)
    };
    let mut all = Vec::new();
    for client in Client::ALL {
        let elsewhere = backup::elsewhere(client, &records);
        if !out.json {
            for r in &elsewhere {
                out.line(&format!(
                    "{:<15} {} (restorable)",
                    client.id(),
                    r.path.display()
                ));
                out.line(&format!("  backup {}", r.backup.display()));
            }
        }
        let elsewhere_json: Vec<Value> = elsewhere
            .iter()
            .map(|r| json!({ "path": r.path, "backup": r.backup }))
            .collect();
        let Some(path) = client.paths().into_iter().find(|p| p.is_file()) else {
            if !out.json && elsewhere.is_empty() {
                out.line(&format!("{:<15} not found", client.id()));
            }
            all.push(json!({
                "client": client.id(), "found": false, "connected_elsewhere": elsewhere_json,
            }));
            continue;
        };
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        let record = latest(client, &canonical);
        let servers = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| clients::servers(client, &path, &t).map_err(|e| e.to_string()));
        if !out.json {
            let undo = if record.is_some() {
                " (restorable: lifeline clients restore)"
            } else {
                ""
            };
            out.line(&format!("{:<15} {}{undo}", client.id(), path.display()));
            if let Some(r) = record {
                out.line(&format!("  backup {}", r.backup.display()));
            }
            match &servers {
                Ok(list) if list.is_empty() => out.line("  no servers"),
                Ok(list) => {
                    for (field, routed) in list {
                        let how = if *routed {
                            "through Lifeline"
                        } else {
                            "direct"
                        };
                        out.line(&format!("  {field:<40} {how}"));
                    }
                }
                Err(e) => out.line(&format!("  cannot read: {e}")),
            }
        }
        let servers: Value = match servers {
            Ok(list) => list
                .iter()
                .map(|(field, routed)| json!({ "field": field, "through_lifeline": routed }))
                .collect(),
            Err(e) => json!({ "error": e }),
        };
        all.push(json!({
            "client": client.id(), "found": true, "path": path, "servers": servers,
            "restorable": record.is_some(), "backup": record.map(|r| &r.backup),
            "connected_elsewhere": elsewhere_json,
        }));
    }
    if out.json {
        out.json_line(&json!({ "ok": true, "result": { "clients": all } }));
    }
    EXIT_OK
}
