//! The diagnostic bundle (docs/bundle.md): a zip a person attaches to a bug report. The
//! builder takes plain inputs (versions, the config as written, per server its state,
//! events, failures and stderr tails, a log tail), so it can be filled from a live fleet or
//! from stored history; it scrubs every string through one `Redactor`, bounds the total
//! by dropping the oldest entries first, and lists every file with its size and sha256 in
//! `manifest.json`. `Bundle::files` is the preview: exactly what `Bundle::write` puts in
//! the zip.

use super::bundle_config::{redact_config, scrub_json};
use crate::events::Generation;
use crate::redact::{Redactor, cap, learn_from};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::time::SystemTime;

/// Bumped when a file is renamed or a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// The default bound on the bundle's size.
pub const DEFAULT_LIMIT_BYTES: usize = 5 * 1024 * 1024;

/// Kept free under the limit for `manifest.json` and the zip's own headers, so the file
/// on disk stays under the limit even when nothing compresses.
const RESERVE_BYTES: usize = 64 * 1024;

/// One log line or stderr line longer than this is cut: a runaway line must not crowd
/// out every other entry.
const MAX_LINE_BYTES: usize = 8 * 1024;

/// What goes into a bundle. Every string is scrubbed by the builder, whatever scrubbing
/// the caller already did.
#[derive(Clone, Default)]
pub struct BundleInput {
    /// The program that made the bundle: "lifeline" (the CLI) or "lifeline-app".
    pub app: String,
    pub app_version: String,
    /// The config file as written (`Config::raw`); `None` when there is none.
    pub config: Option<Value>,
    /// Every configured secret value (`Config::secrets`), scrubbed from every file.
    pub secrets: Vec<String>,
    pub servers: Vec<ServerInput>,
    /// The end of the app's or the CLI's log, oldest line first.
    pub log_tail: Vec<String>,
}

/// One server's part of the bundle. Entries are oldest first.
#[derive(Clone, Default)]
pub struct ServerInput {
    pub name: String,
    /// The supervisor's snapshot (`Snapshot` serialized), or whatever history recorded.
    pub state: Value,
    pub events: Vec<Value>,
    pub failures: Vec<Value>,
    /// `(generation, text)` for the last generations of a stdio server.
    pub stderr: Vec<(Generation, String)>,
}

#[derive(Debug, Clone, Copy)]
pub struct BundleOptions {
    /// The bound on the zip's size; the oldest entries are dropped to stay under it.
    pub limit_bytes: usize,
    pub created: SystemTime,
}

impl Default for BundleOptions {
    fn default() -> Self {
        BundleOptions {
            limit_bytes: DEFAULT_LIMIT_BYTES,
            created: SystemTime::now(),
        }
    }
}

/// One file of the bundle, exactly as it will be written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BundleFile {
    pub path: String,
    /// Bytes, before compression. At most the limit, so it fits in a u32 (and in a JS number).
    pub size: u32,
    pub sha256: String,
    pub content: String,
}

impl BundleFile {
    fn new(path: String, content: String) -> Self {
        BundleFile {
            size: u32::try_from(content.len()).unwrap_or(u32::MAX),
            sha256: hex(&Sha256::digest(content.as_bytes())),
            path,
            content,
        }
    }
}

/// A built bundle: `manifest.json` first, then every file it lists.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub(super) files: Vec<BundleFile>,
    pub(super) created: SystemTime,
    id: String,
}

impl Bundle {
    /// Everything the zip will hold, contents included: the preview.
    pub fn files(&self) -> &[BundleFile] {
        &self.files
    }

    /// The diagnostics id in the manifest, for a person to quote in a report.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A file made of entries (lines) that may be dropped, oldest first, to fit the limit.
struct Entries {
    path: String,
    lines: VecDeque<String>,
    bytes: usize,
    dropped: usize,
}

impl Entries {
    fn new(path: String, lines: impl IntoIterator<Item = String>) -> Self {
        let lines: VecDeque<String> = lines.into_iter().collect();
        Entries {
            path,
            bytes: lines.iter().map(|l| l.len() + 1).sum(),
            lines,
            dropped: 0,
        }
    }

    fn drop_oldest(&mut self) {
        if let Some(line) = self.lines.pop_front() {
            self.bytes -= line.len() + 1;
            self.dropped += 1;
        }
    }

    fn content(&self) -> String {
        let mut s = String::with_capacity(self.bytes);
        for line in &self.lines {
            s.push_str(line);
            s.push('\n');
        }
        s
    }
}

/// Builds a bundle in memory. Nothing is written; `Bundle::write` does that.
pub fn build(input: &BundleInput, options: BundleOptions) -> Bundle {
    let redactor = Redactor::new(input.secrets.iter().cloned());
    learn(input);
    let mut slots: Vec<Slot> = Vec::new();
    let mut entries: Vec<Entries> = Vec::new();
    let mut add_entries = |slots: &mut Vec<Slot>, e: Entries| {
        slots.push(Slot::Entries(entries.len()));
        entries.push(e);
    };
    if let Some(config) = &input.config {
        let redacted = redact_config(config, &redactor);
        slots.push(Slot::Fixed(BundleFile::new(
            "config.redacted.json".into(),
            pretty(&redacted),
        )));
    }
    let mut dirs: Vec<String> = Vec::new();
    for server in &input.servers {
        let dir = format!("servers/{}", unique_dir(&server.name, &mut dirs));
        slots.push(Slot::Fixed(BundleFile::new(
            format!("{dir}/state.json"),
            pretty(&scrub_json(&server.state, &redactor)),
        )));
        let jsonl = |values: &[Value]| -> Vec<String> {
            values
                .iter()
                .map(|v| scrub_json(v, &redactor).to_string())
                .collect()
        };
        add_entries(
            &mut slots,
            Entries::new(format!("{dir}/events.jsonl"), jsonl(&server.events)),
        );
        add_entries(
            &mut slots,
            Entries::new(format!("{dir}/failures.jsonl"), jsonl(&server.failures)),
        );
        for (generation, text) in &server.stderr {
            add_entries(
                &mut slots,
                Entries::new(
                    format!("{dir}/stderr-gen-{generation}.txt"),
                    scrub_lines(text.lines(), &redactor),
                ),
            );
        }
    }
    add_entries(
        &mut slots,
        Entries::new(
            "logs/tail.log".into(),
            scrub_lines(input.log_tail.iter().map(String::as_str), &redactor),
        ),
    );

    let budget = options.limit_bytes.saturating_sub(RESERVE_BYTES);
    let fixed_bytes: usize = slots
        .iter()
        .map(|s| match s {
            Slot::Fixed(f) => f.content.len(),
            Slot::Entries(_) => 0,
        })
        .sum();
    fit(&mut entries, budget.saturating_sub(fixed_bytes));

    let mut files: Vec<BundleFile> = slots
        .into_iter()
        .map(|s| match s {
            Slot::Fixed(f) => f,
            Slot::Entries(i) => BundleFile::new(entries[i].path.clone(), entries[i].content()),
        })
        .collect();
    let id = diagnostics_id(&files, options.created);
    let manifest = manifest(input, &options, &id, &files, &entries, &redactor);
    files.insert(
        0,
        BundleFile::new("manifest.json".into(), pretty(&manifest)),
    );
    Bundle {
        files,
        created: options.created,
        id,
    }
}

/// Reads everything the bundle will hold through the rules before any file is made, so a
/// secret learned from one file (a server's `{"password":"…"}` on stderr) is masked in
/// every other (the same value as a positional argument in the config), whatever their
/// order.
fn learn(input: &BundleInput) {
    let json = |v: &Value| learn_json(v);
    if let Some(config) = &input.config {
        json(config);
    }
    for server in &input.servers {
        json(&server.state);
        server.events.iter().for_each(json);
        server.failures.iter().for_each(json);
        for (_, text) in &server.stderr {
            text.lines().for_each(learn_from);
        }
    }
    input.log_tail.iter().for_each(|l| learn_from(l));
}

fn learn_json(v: &Value) {
    match v {
        Value::String(s) => learn_from(s),
        Value::Array(items) => items.iter().for_each(learn_json),
        Value::Object(map) => {
            for (k, v) in map {
                learn_from(k);
                learn_json(v);
            }
        }
        _ => {}
    }
}

/// A file in the order it will be written: whole, or made of droppable entries.
enum Slot {
    Fixed(BundleFile),
    Entries(usize),
}

/// Drops the oldest entry of the largest file until everything fits in `budget`: no single
/// noisy server or log empties the others.
fn fit(entries: &mut [Entries], budget: usize) {
    let mut total: usize = entries.iter().map(|e| e.bytes).sum();
    while total > budget {
        let Some(largest) = entries
            .iter_mut()
            .filter(|e| !e.lines.is_empty())
            .max_by_key(|e| e.bytes)
        else {
            return;
        };
        let before = largest.bytes;
        largest.drop_oldest();
        total -= before - largest.bytes;
    }
}

fn manifest(
    input: &BundleInput,
    options: &BundleOptions,
    id: &str,
    files: &[BundleFile],
    entries: &[Entries],
    redactor: &Redactor,
) -> Value {
    let dropped: Vec<Value> = entries
        .iter()
        .filter(|e| e.dropped > 0)
        .map(|e| json!({ "path": e.path, "entries": e.dropped }))
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "diagnostics_id": id,
        "created": humantime::format_rfc3339_seconds(options.created).to_string(),
        "app": { "name": input.app, "version": input.app_version },
        "core_version": env!("CARGO_PKG_VERSION"),
        "os": { "name": std::env::consts::OS, "family": std::env::consts::FAMILY, "arch": std::env::consts::ARCH },
        "limit_bytes": options.limit_bytes,
        "truncated": !dropped.is_empty(),
        "dropped_oldest": dropped,
        "redactions": redactor.counts(),
        "files": files.iter().map(|f| json!({ "path": f.path, "size": f.size, "sha256": f.sha256 })).collect::<Vec<_>>(),
    })
}

/// 16 hex digits from the creation time, the process and the contents: distinct per
/// bundle, meaningless on its own.
fn diagnostics_id(files: &[BundleFile], created: SystemTime) -> String {
    let mut h = Sha256::new();
    let nanos = created
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    for f in files {
        h.update(f.sha256.as_bytes());
    }
    hex(&h.finalize()[..8])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// A server name as a folder name: safe characters only, and distinct from the others.
fn unique_dir(name: &str, taken: &mut Vec<String>) -> String {
    let base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = match base.trim_matches('.') {
        "" => "server".to_owned(),
        b => b.to_owned(),
    };
    let mut dir = base.clone();
    let mut n = 2;
    while taken.contains(&dir) {
        dir = format!("{base}-{n}");
        n += 1;
    }
    taken.push(dir.clone());
    dir
}

fn scrub_lines<'a>(lines: impl Iterator<Item = &'a str>, redactor: &Redactor) -> Vec<String> {
    lines
        .map(|l| cap(&redactor.scrub(l), MAX_LINE_BYTES))
        .collect()
}

/// Where the desktop app writes its log files (the same rule as the app's `logs::dir`):
/// Linux `$XDG_STATE_HOME/lifeline/logs` (`~/.local/state/lifeline/logs`), macOS
/// `~/Library/Logs/Lifeline`, elsewhere `<local data dir>/lifeline/logs`.
pub fn default_log_dir() -> Option<std::path::PathBuf> {
    match std::env::consts::OS {
        "linux" => dirs::state_dir()
            .or_else(|| dirs::home_dir().map(|h| h.join(".local").join("state")))
            .map(|d| d.join("lifeline").join("logs")),
        "macos" => dirs::home_dir().map(|h| h.join("Library").join("Logs").join("Lifeline")),
        _ => dirs::data_local_dir().map(|d| d.join("lifeline").join("logs")),
    }
}

/// How much of the end of each log file is read: a log that grew huge (or a file that is
/// not a log) costs a bundle this much memory at most.
pub const LOG_TAIL_BYTES: u64 = 1024 * 1024;

#[cfg(test)]
#[path = "bundle_log_tests.rs"]
mod log_tests;

/// The last `limit` bytes of a file, and whether anything before them was left out.
fn read_end(path: &std::path::Path, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(limit);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok((bytes, start > 0))
}

/// The last `max_lines` lines of the newest log files in `dir` (oldest first), each file's
/// part headed by its name; only the last `LOG_TAIL_BYTES` of each file are read. A missing
/// or unreadable folder gives no lines: a bundle is still worth having without logs.
pub fn read_log_tail(dir: &std::path::Path, max_lines: usize) -> Vec<String> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(SystemTime, std::path::PathBuf)> = listing
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort();
    let mut lines: VecDeque<String> = VecDeque::new();
    for (_, path) in files.iter().rev() {
        if lines.len() >= max_lines {
            break;
        }
        let Ok((bytes, cut)) = read_end(path, LOG_TAIL_BYTES) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut part: Vec<String> = text.lines().map(str::to_owned).collect();
        if cut && !part.is_empty() {
            // The first line was cut by the byte limit.
            part.remove(0);
        }
        let keep = max_lines.saturating_sub(lines.len() + 1);
        part.drain(..part.len().saturating_sub(keep));
        for line in part.into_iter().rev() {
            lines.push_front(line);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        lines.push_front(format!("==> {} <==", name.unwrap_or_default()));
    }
    lines.into()
}
