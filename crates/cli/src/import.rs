//! `lifeline import claude-desktop|claude-code|cursor|vscode|FILE`: reads another client's
//! MCP config, merges its servers into ours (never overwriting a name we have), saves
//! atomically, and says what it added and what it skipped and why.

use crate::output::{EXIT_OK, Out};
use lifeline_core::Error;
use lifeline_core::config::{self, import};
use lifeline_core::redact::Redactor;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub fn source(name: &str) -> import::Source {
    match name {
        "claude-desktop" => import::Source::ClaudeDesktop,
        "claude-code" => import::Source::ClaudeCode,
        "cursor" => import::Source::Cursor,
        "vscode" => import::Source::VsCode,
        path => import::Source::File(PathBuf::from(path)),
    }
}

pub fn run(from: &str, config: Option<&Path>, dry_run: bool, json_out: bool) -> i32 {
    let out = Out {
        json: json_out,
        redactor: Redactor::default(),
    };
    let src = source(from);
    let report = match &src {
        import::Source::File(path) => import::read_path(&src, path),
        other => import::read(other),
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => return out.error(&Error::from(e)),
    };
    let path = match config::resolve_path(config) {
        Ok(p) => p,
        Err(e) => return out.error(&Error::from(e)),
    };
    let mut raw = match config::read_raw(&path) {
        Ok(v) => v,
        Err(config::RawError::Json { line, column }) => {
            return out.error(&Error::config(format!(
                "{} is not valid JSON (line {line}, column {column}); fix it before importing \
                 into it",
                path.display()
            )));
        }
        Err(config::RawError::Read(e)) => {
            return out.error(&Error::config(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    let merged = match import::merge(&mut raw, &report) {
        Ok(m) => m,
        Err(p) => return out.error(&Error::config(p.to_string())),
    };
    if !dry_run
        && !merged.added.is_empty()
        && let Err(e) = config::save(&raw, &path)
    {
        return out.error(&Error::from(e));
    }
    if out.json {
        let skipped: Vec<Value> = merged
            .skipped
            .iter()
            .map(|(name, why)| json!({ "server": name, "reason": why }))
            .chain(merged.skipped_existing.iter().map(|name| {
                json!({ "server": name, "reason": "a server with this name is already configured" })
            }))
            .collect();
        let warnings: Vec<Value> = report
            .warnings
            .iter()
            .map(|(name, w)| json!({ "server": name, "warning": w }))
            .collect();
        out.json_line(&json!({
            "ok": true,
            "result": {
                "from": report.path, "into": path, "dry_run": dry_run,
                "added": merged.added, "skipped": skipped, "warnings": warnings,
            }
        }));
    } else {
        out.line(&format!("from {}", report.path.display()));
        out.line(&merged.to_string());
        for (name, warning) in &report.warnings {
            out.line(&format!("  note {name}: {warning}"));
        }
        if dry_run {
            out.line(&format!("dry run: {} was not changed", path.display()));
        } else if !merged.added.is_empty() {
            out.line(&format!("saved {}", path.display()));
        }
    }
    EXIT_OK
}
