//! `lifeline clients connect CLIENT`: plan routing the chosen servers through `lifeline
//! connect NAME` (`config::clients::plan`), or with `--profile P` one entry serving P in
//! place of the servers it serves (`config::clients::profile`), carry it out
//! (`config::clients::apply`) unless `--dry-run`, and print the diff and what was done.

use super::{client_file, state_path};
use crate::output::{EXIT_OK, EXIT_USAGE, Out};
use lifeline_core::Error;
use lifeline_core::config;
use lifeline_core::config::clients::apply::{Applied, ClientFile, apply, read_ours};
use lifeline_core::config::clients::profile::{
    DEFAULT_ENTRY, ProfileRequest, plan_profile, profile_of,
};
use lifeline_core::config::clients::{self, Choice, Client, Plan, Request};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub struct ConnectArgs {
    pub choice: Choice,
    /// One entry serving this profile instead of an entry per server.
    pub profile: Option<String>,
    /// That entry's name.
    pub entry: Option<String>,
    pub dry_run: bool,
    pub config: Option<PathBuf>,
    pub client_config: Option<PathBuf>,
}

pub fn connect(client: Client, args: &ConnectArgs, out: &Out) -> i32 {
    if args.profile.is_none() && args.choice == Choice::Named(Vec::new()) {
        out.note(&format!(
            "error: name the servers to route with --server NAME, pass --all, or put them \
             behind one entry with --profile P (see `lifeline clients list` for {}'s servers)",
            client.id()
        ));
        return EXIT_USAGE;
    }
    let path = match client_file(client, args.client_config.as_deref()) {
        Ok(p) => p,
        Err(e) => return out.error(&Error::from(e)),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            return out.error(&Error::config(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    let ours_path = match config::resolve_path(args.config.as_deref()) {
        Ok(p) => std::path::absolute(&p).unwrap_or(p),
        Err(e) => return out.error(&Error::from(e)),
    };
    let ours = match read_ours(&ours_path) {
        Ok(v) => v,
        Err(e) => return out.error(&Error::from(e)),
    };
    // `lifeline connect` finds the default config itself; any other it is told.
    let default = config::default_path().map(|p| std::path::absolute(&p).unwrap_or(p));
    let config_arg = (default.as_ref() != Some(&ours_path)).then_some(ours_path.as_path());
    // As launched, not canonicalized: a package manager's symlink (Homebrew's bin/lifeline)
    // survives upgrades where its versioned target does not, and Windows would get a
    // `\\?\` path.
    let command = match std::env::current_exe() {
        Ok(p) => p.display().to_string(),
        Err(e) => {
            return out.error(&Error::config(format!(
                "could not find this lifeline binary's path: {e}"
            )));
        }
    };
    let entry = args.entry.as_deref().unwrap_or(DEFAULT_ENTRY);
    let planned = match &args.profile {
        None => clients::plan(&Request {
            client,
            path: &path,
            text: &text,
            choice: &args.choice,
            lifeline: &ours,
            command: &command,
            config_arg,
        }),
        Some(name) => profile_of(&ours, name).and_then(|profile| {
            plan_profile(&ProfileRequest {
                client,
                path: &path,
                text: &text,
                profile: &profile,
                entry,
                lifeline: &ours,
                command: &command,
                config_arg,
            })
        }),
    };
    let plan = match planned {
        Ok(p) => p,
        Err(e) => return out.error(&Error::from(e)),
    };
    let out = Out {
        json: out.json,
        redactor: plan.redactor.clone(),
    };
    let mut applied = None;
    if !args.dry_run && plan.changes() {
        let state = match state_path(&out) {
            Ok(s) => s,
            Err(code) => return code,
        };
        let file = ClientFile {
            client,
            path: &path,
            text: &text,
        };
        match apply(&file, &plan, ours, &ours_path, &state) {
            Ok(a) => applied = Some(a),
            Err(e) => return out.error(&Error::from(e)),
        }
    }
    let shown = Shown {
        client,
        path: &path,
        ours_path: &ours_path,
        dry_run: args.dry_run,
        profile: args.profile.as_deref(),
        entry,
    };
    print_connect(&out, &shown, &plan, applied.as_ref());
    EXIT_OK
}

/// Where `connect` wrote, for what it prints.
struct Shown<'a> {
    client: Client,
    path: &'a Path,
    ours_path: &'a Path,
    dry_run: bool,
    /// With `--profile`: the profile and its entry's name.
    profile: Option<&'a str>,
    entry: &'a str,
}

/// What `connect` planned and did: the diff, what stays and why, what was imported.
fn print_connect(out: &Out, shown: &Shown, plan: &Plan, applied: Option<&Applied>) {
    let Shown {
        client,
        path,
        ours_path,
        ..
    } = *shown;
    let backup_path = applied.map(|a| &a.backup);
    let imported = applied.map(|a| a.imported.as_slice()).unwrap_or_default();
    let to_import: Vec<&str> = plan
        .import
        .servers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    if out.json {
        let routed: Vec<Value> = plan
            .routed
            .iter()
            .map(|r| json!({ "field": r.field, "server": r.name }))
            .collect();
        let unchanged: Vec<Value> = plan
            .unchanged
            .iter()
            .map(|(f, why)| json!({ "field": f, "reason": why }))
            .collect();
        let removed: Vec<Value> = plan
            .removed
            .iter()
            .map(|r| json!({ "field": r.field, "server": r.name }))
            .collect();
        out.json_line(&json!({ "ok": true, "result": {
            "client": client.id(), "path": path, "config": ours_path, "dry_run": shown.dry_run,
            "profile": shown.profile, "entry": shown.profile.map(|_| shown.entry),
            "routed": routed, "removed": removed, "unchanged": unchanged, "import": to_import,
            "backup": backup_path, "diff": plan.diff,
        }}));
        return;
    }
    if !plan.diff.is_empty() {
        out.line(plan.diff.trim_end_matches('\n'));
    }
    if let Some(profile) = shown.profile {
        print_profile(out, shown, profile, plan);
    }
    for (field, why) in &plan.unchanged {
        out.line(&format!("unchanged {field}: {why}"));
    }
    for (name, warning) in &plan.import.warnings {
        out.line(&format!("note {name}: {warning}"));
    }
    if !plan.changes() {
        out.line(&format!("nothing to change in {}", path.display()));
    } else if shown.dry_run {
        if !to_import.is_empty() {
            out.line(&format!(
                "would import into {}: {}",
                ours_path.display(),
                to_import.join(", ")
            ));
        }
        out.line(&format!("dry run: {} was not changed", path.display()));
    } else {
        if !imported.is_empty() {
            out.line(&format!(
                "imported into {}: {}",
                ours_path.display(),
                imported.join(", ")
            ));
        }
        if let Some(b) = backup_path {
            out.line(&format!("backup {}", b.display()));
        }
        out.line(&format!(
            "wrote {}; restart {} to use it; undo with `lifeline clients restore {}`",
            path.display(),
            client.id(),
            client.id()
        ));
    }
}

/// What `--profile` does besides the diff: the one entry, and each entry it replaces.
fn print_profile(out: &Out, shown: &Shown, profile: &str, plan: &Plan) {
    let kind = shown.client.id();
    let entry = shown.entry;
    for r in &plan.routed {
        out.line(&format!(
            "entry {}: runs `lifeline connect --profile {profile} --client {kind} --entry \
             {entry}`",
            r.field
        ));
    }
    let imported: Vec<&str> = plan
        .import
        .servers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    for r in &plan.removed {
        let first = if imported.contains(&r.name.as_str()) {
            "; imported into Lifeline's config first"
        } else {
            ""
        };
        out.line(&format!(
            "removed {}: server {} is served behind `{entry}` (profile {profile}){first}",
            r.field, r.name
        ));
    }
}
