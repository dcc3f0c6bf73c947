//! The bundle builder and writer: canaries never reach a file, the manifest matches the
//! files, the size bound drops the oldest entries first, and a write that fails leaves
//! nothing behind.

use super::bundle::{BundleFile, BundleInput, BundleOptions, ServerInput, build};
use super::bundle_write::WriteErrorKind;
use crate::events::Generation;
use crate::test_support::entries;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::{Duration, SystemTime};

const CANARIES: [&str; 8] = [
    "CANARY-hdr-a1",
    "CANARY-env-b2",
    "CANARY-user-c3",
    "CANARY-pw-d4",
    "CANARY-query-e5",
    "CANARY-arg-f6",
    "CANARY-stderr-g7",
    "CANARY-log-h8",
];

fn input() -> BundleInput {
    let config = json!({
        "mcpServers": {
            "web": {
                "url": format!("https://{}:{}@h.example:8443/mcp?key={}&v=1", CANARIES[2], CANARIES[3], CANARIES[4]),
                "headers": { "Authorization": format!("Bearer {}", CANARIES[0]) }
            },
            "local/tool": {
                "command": "run",
                "args": ["--token", CANARIES[5], format!("--api-key={}", CANARIES[5])],
                "env": { "SECRET": CANARIES[1] }
            }
        },
        "x-notes": format!("pasted {}", CANARIES[1])
    });
    let web = ServerInput {
        name: "web".into(),
        state: json!({ "server": "web", "state": "retrying", "cause": { "message": format!("said {}", CANARIES[0]) } }),
        events: vec![
            json!({ "seq": 1, "type": "failure", "failure": { "message": format!("GET https://u:{}@h/?k={}", CANARIES[3], CANARIES[4]) } }),
        ],
        failures: vec![json!({ "kind": "auth", "message": format!("token {}", CANARIES[0]) })],
        stderr: Vec::new(),
    };
    let local = ServerInput {
        name: "local/tool".into(),
        state: json!({ "server": "local/tool", "state": "ready" }),
        events: Vec::new(),
        failures: Vec::new(),
        stderr: vec![
            (
                Generation(1),
                format!(
                    "starting\nusing {} and --token={}\n",
                    CANARIES[1], CANARIES[6]
                ),
            ),
            (Generation(2), "second generation\n".into()),
        ],
    };
    BundleInput {
        app: "lifeline".into(),
        app_version: "0.1.0".into(),
        config: Some(config),
        secrets: vec![CANARIES[0].into(), CANARIES[1].into(), CANARIES[5].into()],
        servers: vec![web, local],
        log_tail: vec![format!("INFO sent Bearer {}", CANARIES[7])],
    }
}

fn options() -> BundleOptions {
    BundleOptions {
        created: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
        ..BundleOptions::default()
    }
}

fn manifest(files: &[BundleFile]) -> Value {
    assert_eq!(files[0].path, "manifest.json");
    serde_json::from_str(&files[0].content).expect("manifest is JSON")
}

fn paths(files: &[BundleFile]) -> Vec<&str> {
    files.iter().map(|f| f.path.as_str()).collect()
}

#[test]
fn no_canary_reaches_any_file() {
    let bundle = build(&input(), options());
    for file in bundle.files() {
        for canary in CANARIES {
            assert!(
                !file.content.contains(canary),
                "{canary} in {}:\n{}",
                file.path,
                file.content
            );
        }
    }
    let config = &bundle.files()[1];
    assert_eq!(config.path, "config.redacted.json");
    let config: Value = serde_json::from_str(&config.content).expect("JSON");
    let web = &config["mcpServers"]["web"];
    assert_eq!(web["url"], "https://h.example:8443/mcp?key=***&v=***");
    assert_eq!(web["headers"]["Authorization"], "***");
    let local = &config["mcpServers"]["local/tool"];
    assert_eq!(local["args"], json!(["--token", "***", "--api-key=***"]));
    assert_eq!(local["env"]["SECRET"], "***");
}

#[test]
fn the_layout_is_the_documented_one() {
    let bundle = build(&input(), options());
    assert_eq!(
        paths(bundle.files()),
        [
            "manifest.json",
            "config.redacted.json",
            "servers/web/state.json",
            "servers/web/events.jsonl",
            "servers/web/failures.jsonl",
            "servers/local_tool/state.json",
            "servers/local_tool/events.jsonl",
            "servers/local_tool/failures.jsonl",
            "servers/local_tool/stderr-gen-1.txt",
            "servers/local_tool/stderr-gen-2.txt",
            "logs/tail.log",
        ]
    );
}

#[test]
fn the_manifest_lists_every_file_with_its_size_and_hash() {
    let bundle = build(&input(), options());
    let m = manifest(bundle.files());
    assert_eq!(m["format_version"], 1);
    assert_eq!(m["created"], "2026-11-18T11:06:40Z");
    assert_eq!(m["app"]["name"], "lifeline");
    assert_eq!(m["core_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["os"]["name"], std::env::consts::OS);
    assert_eq!(m["diagnostics_id"].as_str().map(str::len), Some(16));
    assert_eq!(m["diagnostics_id"], bundle.id());
    let listed = m["files"].as_array().expect("files");
    assert_eq!(listed.len(), bundle.files().len() - 1);
    for (entry, file) in listed.iter().zip(&bundle.files()[1..]) {
        assert_eq!(entry["path"], file.path.as_str());
        assert_eq!(entry["size"], file.content.len());
        let sha: String = Sha256::digest(file.content.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(entry["sha256"], sha.as_str());
    }
    let r = &m["redactions"];
    for rule in [
        "header_value",
        "env_value",
        "url_userinfo",
        "url_query_value",
        "secret_argument",
        "configured_secret",
        "auth_scheme",
    ] {
        assert!(
            r[rule].as_u64().unwrap_or(0) > 0,
            "{rule} did not fire: {r}"
        );
    }
    assert_eq!(m["truncated"], false);
}

#[test]
fn the_limit_drops_the_oldest_entries_first_and_says_so() {
    let mut input = input();
    let big = "x".repeat(1000);
    input.servers[0].events = (0..3000).map(|i| json!({ "seq": i, "pad": big })).collect();
    input.log_tail = (0..500).map(|i| format!("line {i} {big}")).collect();
    let limit = 1024 * 1024;
    let bundle = build(
        &input,
        BundleOptions {
            limit_bytes: limit,
            ..options()
        },
    );
    let total: usize = bundle.files().iter().map(|f| f.content.len()).sum();
    assert!(total <= limit, "{total} bytes");
    let events = &bundle.files()[3];
    assert_eq!(events.path, "servers/web/events.jsonl");
    let last: Value =
        serde_json::from_str(events.content.lines().last().expect("some kept")).expect("JSON");
    assert_eq!(last["seq"], 2999, "the newest entry is kept");
    assert!(
        !events.content.contains("\"seq\":0,"),
        "the oldest entry is dropped"
    );
    let m = manifest(bundle.files());
    assert_eq!(m["truncated"], true);
    let dropped = m["dropped_oldest"].as_array().expect("dropped");
    assert!(
        dropped
            .iter()
            .any(|d| d["path"] == "servers/web/events.jsonl" && d["entries"].as_u64() > Some(0)),
        "{dropped:?}"
    );
    // The small files survive whole.
    assert!(
        bundle
            .files()
            .iter()
            .any(|f| f.path == "servers/local_tool/stderr-gen-1.txt"
                && f.content.starts_with("starting"))
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("b.zip");
    let size = bundle.write(&path).expect("written");
    assert!(size <= limit as u64, "{size} bytes on disk");
}

#[test]
fn the_zip_holds_exactly_the_preview() {
    let bundle = build(&input(), options());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bundle.zip");
    let size = bundle.write(&path).expect("written");
    assert_eq!(size, std::fs::metadata(&path).expect("exists").len());
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&path).expect("open")).expect("a zip");
    assert_eq!(zip.len(), bundle.files().len());
    for (i, file) in bundle.files().iter().enumerate() {
        let mut entry = zip.by_index(i).expect("entry");
        assert_eq!(entry.name().expect("a name"), file.path.as_str());
        assert_eq!(entry.compression(), zip::CompressionMethod::Deflated);
        let mut content = String::new();
        entry.read_to_string(&mut content).expect("text");
        assert_eq!(content, file.content);
    }
    assert_eq!(
        entries(dir.path()),
        ["bundle.zip"],
        "no temporary file is left"
    );
}

#[test]
fn a_missing_folder_or_a_folder_path_is_a_clear_error() {
    let bundle = build(&input(), options());
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope").join("b.zip");
    let e = bundle.write(&missing).expect_err("no folder");
    assert_eq!(e.kind, WriteErrorKind::MissingFolder);
    let text = e.to_string();
    assert!(
        text.contains(&missing.display().to_string())
            && text.contains("does not exist")
            && text.contains("create it"),
        "{text}"
    );
    let e = bundle.write(dir.path()).expect_err("a folder");
    assert_eq!(e.kind, WriteErrorKind::IsAFolder);
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
}

/// A writer that fails like a full disk once `room` bytes are written.
struct FullDisk<W> {
    inner: W,
    room: usize,
}

impl<W: Write> Write for FullDisk<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.room {
            return Err(io::Error::from(io::ErrorKind::StorageFull));
        }
        self.room -= buf.len();
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Seek> Seek for FullDisk<W> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_nothing() {
    let bundle = build(&input(), options());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("b.zip");
    let e = bundle
        .write_with(&path, |f| FullDisk {
            inner: f,
            room: 100,
        })
        .expect_err("the disk is full");
    assert_eq!(e.kind, WriteErrorKind::DiskFull);
    let text = e.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("the disk is full"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "no partial file"
    );
    // The same writer with room enough succeeds: the failure was the disk's.
    bundle
        .write_with(&path, |f| FullDisk {
            inner: f,
            room: 1 << 20,
        })
        .expect("written");
}

/// The outside check's shape (issue 25, item 13): a password and an API key only in a
/// server's stderr (`{"password":"…"}`, `x-api-key: …`), and the same values as bare
/// positional arguments in the config, which no rule of the config's own catches. The
/// config comes first in the bundle and the stderr last: what the stderr teaches must
/// reach the config all the same.
#[test]
fn secrets_learned_from_stderr_are_masked_in_every_file() {
    let (password, api_key) = ("Pw4ssCanary7Lq", "KeyCanary3Vx9Tz");
    let config = json!({"mcpServers": {"leaky": {
        "command": "server", "args": ["stdio", "--", password, api_key],
    }}});
    let leaky = ServerInput {
        name: "leaky".into(),
        state: json!({"server": "leaky", "state": "retrying",
                      "cause": {"message": format!("exited; last words: started with {password}")}}),
        events: vec![json!({"type": "failure", "failure": {"message": format!("args {api_key}")}})],
        failures: vec![json!({"message": format!("args {password} {api_key}")})],
        stderr: vec![(
            Generation(1),
            format!(
                "{{\"password\":\"{password}\"}}\nx-api-key: {api_key}\nargs: {password} {api_key}\n"
            ),
        )],
    };
    let input = BundleInput {
        app: "lifeline".into(),
        app_version: "0.1.0".into(),
        config: Some(config),
        secrets: Vec::new(),
        servers: vec![leaky],
        log_tail: vec![format!("WARN leaky started: server {password} {api_key}")],
    };
    let bundle = build(&input, options());
    for file in bundle.files() {
        for canary in [password, api_key] {
            assert!(
                !file.content.contains(canary),
                "{canary} in {}:\n{}",
                file.path,
                file.content
            );
        }
    }
    let config: Value = serde_json::from_str(&bundle.files()[1].content).expect("JSON");
    assert_eq!(
        config["mcpServers"]["leaky"]["args"],
        json!(["stdio", "--", "***", "***"])
    );
    assert!(manifest(bundle.files())["redactions"]["learned_secret"].as_u64() > Some(0));
}
