//! Secrets never leave, proven with canaries: distinct values planted in header values, a
//! URL's query, userinfo and path, env values, `--token=` arguments, positional arguments
//! (a connection string, a high-entropy token, the value after `-p`), an `oauth` block's
//! client secret, a value from the secret store (`${keyring:NAME}`: the real keychain inside
//! scripts/with-keyring.sh, else the file fallback), a server's stderr (compact JSON, header lines, URL fragments, connection
//! strings, token prefixes), HTTP error bodies and JSON-RPC error messages, then searched
//! for in everything `lifeline watch --json`, `check --json`, `call --json` and `lifeline
//! bundle` produce, the unzipped bundle file by file. Also: an env value that is a plain
//! word is not masked in tool results, the manifest's sizes and hashes match the files,
//! and an unwritable destination fails cleanly, leaving nothing.

use crate::cli::CliRun;
use crate::support::{self, TempDirGuard, http_fixture};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

// Canaries in no token shape (except where a shape is the point): only the config's own
// secrets, the URL rules and the argument rule can catch them.
const HEADER: &str = "hdrval4Kq9Zt";
const API_KEY: &str = "apikey7Wn2Rb";
const QUERY: &str = "qryval3Hs8Lp";
const USER: &str = "usrnm6Tg1Vc";
const PASSWORD: &str = "passwd9Jd4Xe";
const ENV: &str = "envval2Mf7Qa";
const ARG: &str = "argval5Pz3Nw";
const EXPANDED: &str = "expand8Bc6Yk";
const STDERR_SHAPED: &str = "sk-stderrshaped0Ru5";
const BODY_SHAPED: &str = "ghp_bodyshaped1Lx7";
const LOG_SHAPED: &str = "xoxb-logshaped2Ci4";
// The shapes of issue 12: each is caught by its shape alone, never configured as a secret.
/// A key in an HTTP server's URL path.
const PATH_KEY: &str = "pathkey7Zq2Xw9Lm4Rt6Yb";
/// The password of a connection string given as a positional argument.
const ARG_CONN: &str = "argconn3Vb8Tk";
/// The password of a connection string in an env value, printed with another host.
const ENV_CONN: &str = "envconn5Hn9Bq";
/// A connection string's password a server prints on its own.
const STDERR_CONN: &str = "mongopw8Kd3Lz";
/// A high-entropy positional argument.
const ARG_ENTROPY: &str = "entropy4Fz8Qm2Lx7Wc9Rv";
/// The value after `-p`.
const P_FLAG: &str = "pflagval6Jn3";
/// A client secret in an `oauth` block (masked in the bundle; docs/bundle.md).
const OAUTH: &str = "oauthsec2Xp7Lq";
/// A value stored with `lifeline secrets set` and referenced as `${keyring:NAME}` in a
/// header, an env value and an argument (which the fixture prints to stderr).
const KEYRING: &str = "keyring9Vd3Hx";
/// Compact JSON, a cookie header line and a URL fragment in a server's stderr.
const JSON_FIELD: &str = "jsonpw6Rt2Yh";
const COOKIE: &str = "cookie3Gv8Nm";
const FRAGMENT: &str = "fragtok4Ws1Qe";
/// Token prefixes new in issue 12.
const PREFIXED: [&str; 5] = [
    "AIzaSyFixture0123456789abcdefghijklmno",
    "hf_Fixture0123456789abcdefghijklmnop",
    "npm_Fixture0123456789abcdefghijklmnop",
    "ghu_fixture0Lx7Kq2Zt",
    "rk_live_fixture1Mw3Hs",
];

const ALL: [&str; 29] = [
    HEADER,
    KEYRING,
    API_KEY,
    QUERY,
    USER,
    PASSWORD,
    ENV,
    ARG,
    EXPANDED,
    STDERR_SHAPED,
    BODY_SHAPED,
    LOG_SHAPED,
    PATH_KEY,
    ARG_CONN,
    ENV_CONN,
    STDERR_CONN,
    ARG_ENTROPY,
    P_FLAG,
    OAUTH,
    JSON_FIELD,
    COOKIE,
    FRAGMENT,
    PREFIXED[0],
    PREFIXED[1],
    PREFIXED[2],
    PREFIXED[3],
    PREFIXED[4],
    // Also the shorter forms a partial leak would show.
    "Fixture0123456789abcdefghij",
    "fixture0Lx7Kq2Zt",
];

fn assert_clean(what: &str, text: &str) {
    let leaked: Vec<&str> = ALL.into_iter().filter(|c| text.contains(c)).collect();
    assert!(leaked.is_empty(), "{leaked:?} leaked in {what}:\n{text}");
}

fn fast() -> Value {
    json!({"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2, "quarantineMs": [50, 50, 50]})
}

/// `http://USER:PASSWORD@127.0.0.1:PORT/mcp?api_key=QUERY`
fn with_credentials(url: &str) -> String {
    url.replace("http://", &format!("http://{USER}:{PASSWORD}@")) + &format!("?api_key={QUERY}")
}

fn headers() -> Value {
    json!({
        "Authorization": format!("Bearer {HEADER}"),
        "X-Api-Key": API_KEY,
        "X-Expanded": "${env:LIFELINE_IT_CANARY}",
        "X-Keyring": keyring_ref(),
    })
}

/// `${keyring:NAME}` for this test process's canary (names are per process: test processes
/// share the keychain).
fn keyring_ref() -> String {
    format!("${{keyring:{}}}", crate::secrets::unique_name("bundle"))
}

/// Where the file fallback keeps this process's secrets when there is no keychain.
fn secrets_file() -> PathBuf {
    std::env::temp_dir().join(format!("lifeline-it-secrets-{}.json", std::process::id()))
}

/// A config with every kind of secret, and servers that echo them back: a 401 whose
/// JSON-RPC body quotes them, a tool whose JSON-RPC error quotes them, a 500 whose plain
/// body quotes them, a stdio server writing them to stderr before it crashes, and one that
/// rejects its `--token=` argument by echoing it.
struct Scene {
    dir: TempDirGuard,
    config: PathBuf,
    logs: PathBuf,
    _fixtures: Vec<support::HttpFixture>,
    _secrets: SecretsFile,
}

/// Removes the file fallback's files (when it was used) with the scene.
struct SecretsFile;

impl Drop for SecretsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(secrets_file());
        let _ = std::fs::remove_file(secrets_file().with_extension("lock"));
    }
}

async fn scene() -> Scene {
    let name = crate::secrets::unique_name("bundle");
    let file = secrets_file();
    let stored = crate::secrets::lifeline_secrets(
        &["secrets", "set", &name],
        KEYRING,
        crate::secrets::Store::Ambient(&file),
    )
    .await;
    assert_eq!(stored.code, 0, "{stored:?}");
    let quoted = format!(
        "body-marker {HEADER} {API_KEY} {EXPANDED} {KEYRING} {QUERY} {PASSWORD} {BODY_SHAPED}"
    );
    let rpc_body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": quoted}});
    let unauthorized = http_fixture(json!({"rules": [{"method": "initialize", "action": {
        "kind": "http_status", "status": 401, "body": rpc_body.to_string(),
        "www_authenticate": format!("Bearer error_description=\"{HEADER}\""),
    }}]}))
    .await;
    let rpc_error = http_fixture(json!({"rules": [{"method": "tools/call", "action": {
        "kind": "rpc_error", "code": -32000, "message": format!("rpc-marker {quoted}"),
    }}]}))
    .await;
    let plain_500 = http_fixture(json!({"rules": [{"method": "tools/call", "action": {
        "kind": "http_status", "status": 500, "body": format!("plain-marker {quoted}"),
    }}]}))
    .await;
    let dir = TempDirGuard::new("bundle-canary");
    // The last line is the one a crash's failure quotes (watch, check, events): as many
    // shapes as fit in it; the others are in the stderr file of the bundle.
    let keyring = keyring_ref();
    let shapes = [
        format!("Cookie: theme=dark; session={COOKIE}"),
        format!("keys {}", PREFIXED.join(" ")),
        format!(
            r#"stderr-marker {ENV} ${{env:LIFELINE_IT_CANARY}} {keyring} {STDERR_SHAPED} --token={ARG} shape-marker {{"password":"{JSON_FIELD}","user":"me"}} /callback#access_token={FRAGMENT}&state=x mongodb+srv://app:{STDERR_CONN}@c0.example.net/db postgres://app:{ENV_CONN}@10.1.2.3/app"#
        ),
    ];
    let stderr_script = json!({
        "stderr": shapes.join("\n") + "\n",
        "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 3}}],
    });
    let http = |url: &str| json!({"url": with_credentials(url), "headers": headers(), "reconnect": fast()});
    let servers = json!({
        "unauthorized": http(&unauthorized.url),
        "rpc": http(&rpc_error.url),
        "plain": http(&plain_500.url),
        "leaky": {
            "command": support::fixture_bin(),
            "args": ["stdio", "--script", stderr_script.to_string()],
            "env": {
                "API_TOKEN": ENV,
                "KEYRING_TOKEN": keyring_ref(),
                "OTHER": "${env:LIFELINE_IT_CANARY}",
                "DATABASE_URL": format!("postgres://app:{ENV_CONN}@db.internal/app"),
            },
            "reconnect": fast(),
        },
        "echoes-args": {
            "command": support::fixture_bin(),
            "args": ["stdio", format!("--token={ARG}"), "--api-key", ARG],
            "reconnect": fast(),
        },
        // The fixture rejects its first unknown argument by echoing it.
        "echoes-conn": {
            "command": support::fixture_bin(),
            "args": ["stdio", format!("postgresql://app:{ARG_CONN}@db.example:5432/app")],
            "reconnect": fast(),
            "oauth": {"clientId": "lifeline-it", "clientSecret": OAUTH},
        },
        "echoes-token": {
            "command": support::fixture_bin(),
            "args": ["stdio", ARG_ENTROPY, "-p", P_FLAG],
            "reconnect": fast(),
        },
        "pathkey": {"url": format!("{}/{PATH_KEY}/sse", plain_500.url), "reconnect": fast()},
    });
    let config = support::write_config(&dir, servers);
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("a log folder");
    std::fs::write(
        logs.join("lifeline-app.2026-11-29.log"),
        format!(
            "INFO log-marker Authorization: Bearer {LOG_SHAPED}\nWARN log-marker {HEADER}\n\
             WARN log-marker GET https://h.example/mcp/{PATH_KEY}/sse {{\"password\":\"{JSON_FIELD}\"}}\n\
             Cookie: session={COOKIE}\n"
        ),
    )
    .expect("a log file");
    Scene {
        dir,
        config,
        logs,
        _fixtures: vec![unauthorized, rpc_error, plain_500],
        _secrets: SecretsFile,
    }
}

async fn run(args: &[&str]) -> CliRun {
    let file = secrets_file();
    crate::cli::lifeline_with_env(
        args,
        &[
            ("LIFELINE_IT_CANARY", EXPANDED),
            ("LIFELINE_LOG", "trace"),
            ("LIFELINE_SECRETS_FILE", file.to_str().expect("utf-8")),
        ],
    )
    .await
}

/// Every file of a zip: name and bytes.
pub(crate) fn unzip(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut zip = zip::ZipArchive::new(file).expect("a zip");
    (0..zip.len())
        .map(|i| {
            let mut entry = zip.by_index(i).expect("an entry");
            let name = entry.name().expect("a name").into_owned();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("readable");
            (name, bytes)
        })
        .collect()
}

#[tokio::test]
async fn no_canary_reaches_watch_check_or_call_output() {
    let scene = scene().await;
    let config = scene.config.display().to_string();
    let watch = run(&["watch", "--json", "--for", "3s", "--config", &config]).await;
    assert_eq!(watch.code, 0, "{watch:?}");
    assert_clean("watch --json", &watch.everything());
    // The places the canaries were are shown, scrubbed, so this test can fail.
    for marker in [
        "body-marker",
        "stderr-marker",
        "shape-marker",
        "/mcp/***/sse",
    ] {
        assert!(
            watch.stdout.contains(marker),
            "{marker} not shown: {}",
            watch.stdout
        );
    }
    let check = run(&["check", "--json", "--config", &config]).await;
    assert_ne!(check.code, 0, "{check:?}");
    assert_clean("check --json", &check.everything());
    assert!(check.stdout.contains("/mcp/***/sse"), "{check:?}");
    for (server, marker) in [("rpc", "rpc-marker"), ("plain", "500")] {
        let call = run(&[
            "call",
            server,
            "echo",
            "{\"text\":\"x\"}",
            "--json",
            "--config",
            &config,
        ])
        .await;
        assert_ne!(call.code, 0, "{call:?}");
        assert_clean(&format!("call {server} --json"), &call.everything());
        assert!(call.stdout.contains(marker), "{marker} not shown: {call:?}");
    }
}

#[tokio::test]
async fn no_canary_reaches_the_bundle_and_the_manifest_matches_its_files() {
    let scene = scene().await;
    let out = scene.dir.path().join("diagnostics.zip");
    let args = [
        "bundle",
        "--config",
        scene.config.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--for",
        "20s",
        "--logs",
        scene.logs.to_str().expect("utf-8"),
        "--json",
    ];
    let bundle = run(&args).await;
    assert_eq!(bundle.code, 0, "{bundle:?}");
    assert_clean("bundle output", &bundle.everything());
    let result = &bundle.outcome()["result"];
    assert_eq!(
        result["bytes"],
        std::fs::metadata(&out).expect("written").len()
    );

    let files = unzip(&out);
    for (name, bytes) in &files {
        assert_clean(name, &String::from_utf8_lossy(bytes));
    }
    let text = |name: &str| -> String {
        let (_, bytes) = files.iter().find(|(n, _)| n == name).unwrap_or_else(|| {
            panic!(
                "{name} missing from {:?}",
                files.iter().map(|f| &f.0).collect::<Vec<_>>()
            )
        });
        String::from_utf8(bytes.clone()).expect("utf-8")
    };
    // What was scrubbed is there, so the search above could have failed.
    assert!(text("servers/leaky/stderr-gen-1.txt").contains("stderr-marker"));
    assert!(text("servers/echoes-args/stderr-gen-1.txt").contains("unknown argument"));
    for marker in [
        "shape-marker",
        "Cookie: ***",
        "access_token=***",
        "mongodb+srv://app:***@",
    ] {
        assert!(
            text("servers/leaky/stderr-gen-1.txt").contains(marker),
            "{marker}"
        );
    }
    assert!(text("servers/echoes-conn/stderr-gen-1.txt").contains("postgresql://app:***@db"));
    assert!(text("servers/pathkey/failures.jsonl").contains("/mcp/***/sse"));
    assert!(text("servers/unauthorized/failures.jsonl").contains("body-marker"));
    assert!(text("logs/tail.log").contains("log-marker"));
    let config: Value = serde_json::from_str(&text("config.redacted.json")).expect("JSON");
    assert_eq!(config["mcpServers"]["rpc"]["headers"]["X-Api-Key"], "***");
    assert_eq!(
        config["mcpServers"]["echoes-conn"]["oauth"],
        serde_json::json!({"clientId": "lifeline-it", "clientSecret": "***"})
    );
    assert_eq!(
        config["mcpServers"]["echoes-token"]["args"],
        json!(["stdio", "***", "-p", "***"])
    );
    assert!(
        config["mcpServers"]["pathkey"]["url"]
            .as_str()
            .expect("a url")
            .ends_with("/mcp/***/sse")
    );
    assert!(
        config["mcpServers"]["rpc"]["url"]
            .as_str()
            .expect("a url")
            .ends_with("/mcp?api_key=***")
    );

    let manifest: Value = serde_json::from_str(&text("manifest.json")).expect("JSON");
    assert_eq!(manifest["diagnostics_id"], result["diagnostics_id"]);
    let listed = manifest["files"].as_array().expect("a file list");
    assert_eq!(
        listed.len() + 1,
        files.len(),
        "every file but the manifest is listed"
    );
    for entry in listed {
        let name = entry["path"].as_str().expect("a path");
        let (_, bytes) = files
            .iter()
            .find(|(n, _)| n == name)
            .expect("listed file exists");
        assert_eq!(entry["size"], bytes.len(), "{name}");
        let sha: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(entry["sha256"], sha.as_str(), "{name}");
    }
    for rule in [
        "header_value",
        "env_value",
        "url_userinfo",
        "url_query_value",
        "secret_argument",
        "configured_secret",
        "url_path_segment",
        "unknown_key",
        "high_entropy",
        "json_field",
        "header_line",
        "key_prefix",
    ] {
        assert!(
            manifest["redactions"][rule].as_u64() > Some(0),
            "{rule}: {manifest}"
        );
    }
}

/// An env value that is a plain word is configuration, not a secret: `NODE_ENV=production`
/// must not turn every "production" in a tool result into `***`.
#[tokio::test]
async fn a_plain_word_env_value_is_not_masked_in_tool_results() {
    let dir = TempDirGuard::new("bundle-plain-env");
    let servers = json!({"local": {
        "command": support::fixture_bin(),
        "args": ["stdio"],
        "env": {"NODE_ENV": "production", "LOG_LEVEL": "debug", "API_TOKEN": ENV},
    }});
    let config = support::write_config(&dir, servers);
    let config = config.to_str().expect("utf-8");
    let call = run(&[
        "call",
        "local",
        "echo",
        &json!({"text": format!("running in production with {ENV}")}).to_string(),
        "--json",
        "--config",
        config,
    ])
    .await;
    assert_eq!(call.code, 0, "{call:?}");
    assert!(
        call.stdout.contains("running in production with ***"),
        "{call:?}"
    );
}

/// The effective user id, read off a file this process just made.
#[cfg(unix)]
fn running_as_root(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join("uid-probe");
    std::fs::write(&probe, b"").expect("a probe file");
    let uid = std::fs::metadata(&probe).expect("metadata").uid();
    std::fs::remove_file(&probe).expect("removing the probe");
    uid == 0
}

/// Unix only: it takes write permission away with a mode (and drops root with setpriv).
#[cfg(unix)]
#[tokio::test]
async fn an_unwritable_destination_fails_clearly_and_leaves_nothing() {
    use crate::cli::{lifeline, lifeline_bin};
    let dir = TempDirGuard::new("bundle-dest");
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"mcpServers": {}}"#).expect("a config");
    let config = config.display().to_string();

    let missing = dir.path().join("no-such-folder").join("b.zip");
    let run = lifeline(&[
        "bundle",
        "--config",
        &config,
        "--out",
        missing.to_str().expect("utf-8"),
        "--json",
    ])
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    let message = run.error()["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert!(
        message.contains(&missing.display().to_string()) && message.contains("does not exist"),
        "{message}"
    );

    // A read-only folder, for real: root may write anywhere, so as root the command runs
    // as `nobody`, for whom the folder is read-only.
    let read_only = dir.path().join("read-only");
    std::fs::create_dir(&read_only).expect("a folder");
    let target = read_only.join("b.zip");
    let mut cmd = if running_as_root(dir.path()) {
        let mut c = tokio::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(lifeline_bin());
        c
    } else {
        tokio::process::Command::new(lifeline_bin())
    };
    use std::os::unix::fs::PermissionsExt;
    // `nobody` must reach the config through the temp folder whatever the umask was.
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    mode(dir.path(), 0o755);
    mode(Path::new(&config), 0o644);
    mode(&read_only, 0o555);
    let output = cmd
        .args([
            "bundle",
            "--config",
            &config,
            "--out",
            target.to_str().expect("utf-8"),
            "--json",
        ])
        .output()
        .await
        .expect("running lifeline");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&target.display().to_string()) && stdout.contains("not writable"),
        "{stdout}"
    );
    let left = std::fs::read_dir(&read_only).expect("listing").count();
    assert_eq!(left, 0, "nothing is left in the read-only folder");
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o755))
        .expect("chmod back");
}
