//! The demo the app runs when there is no config file: `demo/config.json`, whose servers are
//! the `lifeline-fixture` binary found next to the app (one healthy, one crash loop) and
//! HTTP fixtures the app starts on 127.0.0.1 (one rate-limited, one that needs auth). A
//! missing fixture is a notice for the UI, never a crash.

use crate::error::ErrorView;
use lifeline_core::config::{self, Config};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const TEMPLATE: &str = include_str!("../demo/config.json");

/// The variable the template uses for the fixture's path.
const FIXTURE_VAR: &str = "DEMO_FIXTURE";

/// How long an HTTP fixture may take to print its `LISTENING` line.
const LISTEN_LIMIT: Duration = Duration::from_secs(5);

/// Notice kinds the demo adds to `AppInfo::notices`.
pub const NOTICE_DEMO: &str = "demo";
pub const NOTICE_FIXTURE_MISSING: &str = "fixture_missing";
pub const NOTICE_FIXTURE_FAILED: &str = "fixture_failed";

pub struct Demo {
    pub config: Config,
    /// The HTTP fixtures, killed when dropped (and at shutdown).
    pub fixtures: Vec<Child>,
    pub notices: Vec<ErrorView>,
}

/// `lifeline-fixture` next to the running executable (`target/debug` holds both after
/// `cargo build --workspace`), else in the installed package's resources (`demo/`, see
/// src-tauri/bundle/): the first that exists, or the first candidate so the notice names it.
pub fn fixture_path(resources: Option<&Path>) -> Option<PathBuf> {
    let name = format!("lifeline-fixture{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(&name)));
    let packaged = resources.map(|dir| dir.join("demo").join(&name));
    [beside.clone(), packaged]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or(beside)
}

/// Starts the HTTP fixtures and builds the demo config. Servers whose fixture could not be
/// started are disabled; with no fixture binary at all, the stdio servers still point at
/// the missing path, so each shows the spawn error that names it.
pub async fn start(fixture: Option<&Path>) -> Demo {
    let mut raw: Value = serde_json::from_str(TEMPLATE).unwrap_or_default();
    let mut notices = Vec::new();
    let mut urls = HashMap::new();
    let mut fixtures = Vec::new();
    match fixture.filter(|f| f.is_file()) {
        Some(program) => {
            for (var, script) in http_fixtures(&raw) {
                match spawn_http(program, &script).await {
                    Ok((child, url)) => {
                        tracing::info!("demo: HTTP fixture for {var} at {url}");
                        urls.insert(var, url);
                        fixtures.push(child);
                    }
                    Err(why) => notices.push(ErrorView::new(
                        NOTICE_FIXTURE_FAILED,
                        format!("The demo's HTTP fixture for {var} did not start: {why}."),
                    )),
                }
            }
        }
        None => notices.push(ErrorView::new(
            NOTICE_FIXTURE_MISSING,
            format!(
                "The demo runs the lifeline-fixture binary, which is not next to the app (looked \
                 for {}). Build it with `cargo build -p lifeline-it`, then restart the app.",
                fixture.map_or_else(|| "it".to_owned(), |f| f.display().to_string())
            ),
        )),
    }
    disable_unresolved(&mut raw, &urls);
    let fixture_text = fixture.map(|f| f.display().to_string());
    let lookup = |name: &str| match name {
        FIXTURE_VAR => fixture_text
            .clone()
            .or_else(|| Some("lifeline-fixture".into())),
        _ => urls.get(name).cloned(),
    };
    let config = match config::from_value(raw, None, &lookup) {
        Ok(config) => config,
        Err(e) => {
            notices.push(ErrorView::new("config", format!("the demo config: {e}")));
            Config::empty()
        }
    };
    Demo {
        config,
        fixtures,
        notices,
    }
}

/// `lifelineDemo.httpFixtures`: variable name → the fixture's script.
fn http_fixtures(raw: &Value) -> Vec<(String, Value)> {
    raw.pointer("/lifelineDemo/httpFixtures")
        .and_then(Value::as_object)
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Marks `disabled` every server that refers to an HTTP fixture without a URL. A disabled
/// server's unresolved `${…}` is not a config error, so the rest of the demo still runs.
fn disable_unresolved(raw: &mut Value, urls: &HashMap<String, String>) {
    let missing: Vec<String> = http_fixtures(raw)
        .into_iter()
        .map(|(var, _)| var)
        .filter(|var| !urls.contains_key(var))
        .map(|var| format!("${{{var}}}"))
        .collect();
    let Some(servers) = raw.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return;
    };
    for server in servers.values_mut() {
        let text = server.to_string();
        if missing.iter().any(|m| text.contains(m.as_str()))
            && let Some(entry) = server.as_object_mut()
        {
            entry.insert("disabled".into(), Value::Bool(true));
        }
    }
}

/// The URL in the fixture's one line `LISTENING http://127.0.0.1:PORT/mcp`.
fn listening_url(line: &str) -> Option<&str> {
    line.trim_end()
        .strip_prefix("LISTENING ")
        .filter(|u| u.starts_with("http://"))
}

/// Runs `lifeline-fixture http --script SCRIPT` and waits for its URL. The child is killed
/// when dropped, so one that fails here is gone at once.
async fn spawn_http(program: &Path, script: &Value) -> Result<(Child, String), String> {
    let mut child = Command::new(program)
        .arg("http")
        .arg("--script")
        .arg(script.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let found = tokio::time::timeout(LISTEN_LIMIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = listening_url(&line) {
                return Some(url.to_owned());
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(url)) => {
            // Keep reading, so the fixture never blocks on a full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            Ok((child, url))
        }
        Ok(None) => Err("it exited before it printed its address".into()),
        Err(_) => Err(format!(
            "it printed no address within {}",
            lifeline_core::fmt_duration(LISTEN_LIMIT)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_core::config::TransportConfig;

    fn template() -> Value {
        serde_json::from_str(TEMPLATE).unwrap()
    }

    fn parse(raw: Value, urls: &HashMap<String, String>) -> Config {
        let lookup = |name: &str| match name {
            FIXTURE_VAR => Some("/opt/lifeline-fixture".to_owned()),
            _ => urls.get(name).cloned(),
        };
        config::from_value(raw, None, &lookup).unwrap()
    }

    fn all_urls() -> HashMap<String, String> {
        http_fixtures(&template())
            .into_iter()
            .enumerate()
            .map(|(i, (var, _))| (var, format!("http://127.0.0.1:{}/mcp", 4000 + i)))
            .collect()
    }

    #[test]
    fn the_template_is_four_fixture_servers() {
        let config = parse(template(), &all_urls());
        let names: Vec<(&str, &str, bool)> = config
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.transport.kind(), s.disabled))
            .collect();
        assert_eq!(
            names,
            [
                ("healthy", "stdio", false),
                ("crash-loop", "stdio", false),
                ("rate-limited", "http", false),
                ("needs-auth", "http", false),
            ]
        );
        let crash = config.server("crash-loop").unwrap();
        assert_eq!(
            crash.policy.timeouts.ping_interval,
            Some(Duration::from_secs(5))
        );
        let TransportConfig::Stdio { command, args, .. } = &crash.transport else {
            panic!("crash-loop is stdio");
        };
        assert_eq!(command, "/opt/lifeline-fixture");
        let script: Value = serde_json::from_str(&args[2]).unwrap();
        assert_eq!(script["rules"][0]["action"]["kind"], "crash");
    }

    #[test]
    fn http_fixture_scripts_answer_429_then_401() {
        let fixtures: HashMap<String, Value> = http_fixtures(&template()).into_iter().collect();
        let limited = &fixtures["DEMO_RATE_LIMITED_URL"]["rules"];
        assert_eq!(limited.as_array().unwrap().len(), 3);
        assert_eq!(limited[0]["action"]["status"], 429);
        assert_eq!(limited[0]["action"]["retry_after"], "10");
        assert_eq!(
            fixtures["DEMO_AUTH_URL"]["rules"][0]["action"]["status"],
            401
        );
    }

    #[test]
    fn servers_without_their_fixture_are_disabled_and_the_rest_still_runs() {
        let mut urls = all_urls();
        urls.remove("DEMO_AUTH_URL");
        let mut raw = template();
        disable_unresolved(&mut raw, &urls);
        let config = parse(raw, &urls);
        let disabled: Vec<&str> = config
            .servers
            .iter()
            .filter(|s| s.disabled)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(disabled, ["needs-auth"]);

        let mut raw = template();
        disable_unresolved(&mut raw, &HashMap::new());
        let config = parse(raw, &HashMap::new());
        assert_eq!(config.servers.iter().filter(|s| s.disabled).count(), 2);
    }

    #[test]
    fn reads_the_fixture_address_line() {
        let check = |line: &str, expect: Option<&str>| assert_eq!(listening_url(line), expect);
        check(
            "LISTENING http://127.0.0.1:4123/mcp",
            Some("http://127.0.0.1:4123/mcp"),
        );
        check(
            "LISTENING http://127.0.0.1:4123/mcp\r\n",
            Some("http://127.0.0.1:4123/mcp"),
        );
        check("listening on 4123", None);
        check("LISTENING ftp://x", None);
    }

    #[tokio::test]
    async fn a_missing_fixture_is_a_notice_and_the_stdio_servers_name_it() {
        let missing = Path::new("/nonexistent/lifeline-fixture");
        let demo = start(Some(missing)).await;
        assert!(demo.fixtures.is_empty());
        assert_eq!(demo.notices.len(), 1);
        assert_eq!(demo.notices[0].kind, NOTICE_FIXTURE_MISSING);
        assert!(
            demo.notices[0]
                .message
                .contains("/nonexistent/lifeline-fixture")
        );
        let healthy = demo.config.server("healthy").unwrap();
        assert!(!healthy.disabled);
        assert!(matches!(&healthy.transport,
            TransportConfig::Stdio { command, .. } if command == "/nonexistent/lifeline-fixture"));
        assert!(demo.config.server("needs-auth").unwrap().disabled);
    }
}
