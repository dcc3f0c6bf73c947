//! Sign-ins kept between runs and shared, through the real `lifeline` binary against the
//! fixture's authorization server (`server.rs`): `lifeline login` signs in once (the test
//! is the browser: it opens the printed address, which redirects to Lifeline's loopback
//! listener), and then every run is signed in; tokens that expire are refreshed while the
//! server stays ready; ten servers behind one authorization server refresh once; a revoked
//! refresh token ends in sign-in needed, once; a reconnect after the network was lost uses
//! the refreshed token; `lifeline logout` revokes and forgets. Each test keeps its secrets in
//! a file of its own (`LIFELINE_SECRETS=file`) and its locks in its own data dir.

use super::server::{CANARY, serve, serve_behind_proxy};
use crate::cli::{lifeline_bin, lifeline_with_env};
use crate::supervise::watch::Watch;
use crate::support::{PATIENCE, TempDirGuard, http_client};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// A test's config and private store.
struct Setup {
    dir: TempDirGuard,
    config: PathBuf,
    /// The secrets file and the data dir (the refresh locks), as the environment names them.
    secrets_file: String,
    data_dir: String,
}

impl Setup {
    /// `servers` (name → URL path under the origin), pinged every second so that expired
    /// tokens are noticed without calls, reconnecting after 100 ms.
    fn new(label: &str, origin: &str, servers: &[(&str, &str)]) -> Setup {
        let dir = TempDirGuard::new(label);
        let mut map = serde_json::Map::new();
        for (name, path) in servers {
            map.insert(
                (*name).to_owned(),
                json!({
                    "url": format!("{origin}{path}"),
                    "timeouts": { "pingIntervalMs": 1000 },
                    "reconnect": { "initialDelayMs": 100, "maxDelayMs": 200 },
                }),
            );
        }
        let config = dir.path().join("config.json");
        std::fs::write(&config, json!({ "mcpServers": map }).to_string()).unwrap();
        let secrets_file = dir.path().join("secrets.json").display().to_string();
        let data_dir = dir.path().join("data").display().to_string();
        Setup {
            dir,
            config,
            secrets_file,
            data_dir,
        }
    }

    /// One server, `remote` at `/mcp`, signed in with `lifeline login`.
    async fn signed_in(label: &str, origin: &str) -> Setup {
        let setup = Setup::new(label, origin, &[("remote", "/mcp")]);
        setup.login("remote").await;
        setup
    }

    fn env(&self) -> [(&str, &str); 3] {
        [
            ("LIFELINE_SECRETS", "file"),
            ("LIFELINE_SECRETS_FILE", &self.secrets_file),
            ("XDG_DATA_HOME", &self.data_dir),
        ]
    }

    /// `lifeline ARGS --config CONFIG`.
    async fn run(&self, args: &[&str]) -> crate::cli::CliRun {
        let mut all = args.to_vec();
        all.extend(["--config", self.config.to_str().unwrap()]);
        self.run_bare(&all).await
    }

    /// `lifeline ARGS` with this test's store.
    async fn run_bare(&self, all: &[&str]) -> crate::cli::CliRun {
        self.run_with(all, &[]).await
    }

    /// `lifeline ARGS` with this test's store and `extra` in its environment.
    async fn run_with(&self, all: &[&str], extra: &[(&str, &str)]) -> crate::cli::CliRun {
        let mut env = self.env().to_vec();
        env.extend_from_slice(extra);
        let run = lifeline_with_env(all, &env).await;
        assert!(
            !run.everything().contains(CANARY),
            "a token leaked: {run:?}"
        );
        run
    }

    /// `lifeline login NAME --no-browser`, with the test as the browser.
    async fn login(&self, name: &str) {
        let mut child = Command::new(lifeline_bin())
            .args(["login", name, "--no-browser", "--config"])
            .arg(&self.config)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning lifeline login");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let address = tokio::time::timeout(PATIENCE, async {
            while let Some(line) = stderr.next_line().await.unwrap() {
                if let Some(url) = line.trim().strip_prefix("http") {
                    return format!("http{url}");
                }
            }
            panic!("lifeline login printed no sign-in address");
        })
        .await
        .expect("the sign-in address in time");
        // The browser: the authorization endpoint redirects to Lifeline's listener at once.
        let page = http_client().get(&address).send().await.expect("browsing");
        assert!(page.status().is_success(), "{page:?}");
        let out = tokio::time::timeout(PATIENCE, child.wait_with_output())
            .await
            .expect("login finished in time")
            .expect("login ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{out:?}");
        assert!(stdout.contains(&format!("signed in to {name}")), "{stdout}");
        assert!(!stdout.contains(CANARY), "{stdout}");
    }

    fn watch(&self) -> Watch {
        self.watch_with(&[])
    }

    /// `watch` with `extra` in its environment too.
    fn watch_with(&self, extra: &[(&str, &str)]) -> Watch {
        let mut env = self.env().to_vec();
        env.extend_from_slice(extra);
        Watch::start_with_env(&self.config, "120s", &env)
    }

    /// `watch`, once `remote` is ready.
    async fn watch_ready(&self) -> Watch {
        let mut watch = self.watch();
        watch
            .wait_for("ready", |e| is_state(e, "remote", "ready"))
            .await;
        watch
    }
}

fn is_state(e: &Value, server: &str, state: &str) -> bool {
    e["server"] == server && e["type"] == "state" && e["state"] == state
}

fn is_auth(e: &Value, server: &str, change: &str) -> bool {
    e["server"] == server && e["type"] == "auth" && e["change"] == change
}

#[tokio::test]
async fn login_signs_in_once_for_every_run_and_logout_revokes() {
    let state = serve().await;
    let setup = Setup::new("oauth-login", &state.origin, &[("remote", "/mcp")]);
    let before = setup.run(&["check", "--json"]).await;
    let server = &before.outcome()["servers"][0];
    assert_eq!(server["reason"], "sign_in", "{before:?}");
    assert_eq!(server["auth"]["needs_sign_in"], true, "{before:?}");
    let told = setup.run(&["check"]).await;
    assert!(
        told.stderr
            .contains("remote: sign-in needed — run `lifeline login remote`"),
        "{told:?}"
    );

    setup.login("remote").await;
    let c = state.counts();
    assert_eq!((c.authorize, c.code_grants), (1, 1));
    let unauthorized = c.unauthorized;
    let after = setup.run(&["check", "--json"]).await;
    let server = &after.outcome()["servers"][0];
    assert_eq!(server["state"], "ready", "{after:?}");
    assert_eq!(server["auth"]["signed_in"], true, "{after:?}");
    assert_eq!(server["auth"]["issuer"], state.origin);
    assert_eq!(
        state.counts().unauthorized,
        unauthorized,
        "the kept token went with the first request"
    );
    // Lifeline's own entries are not the user's secrets.
    let listed = setup.run_bare(&["secrets", "list", "--json"]).await;
    assert_eq!(listed.outcome()["result"]["names"], json!([]), "{listed:?}");

    let out = setup.run(&["logout", "remote"]).await;
    assert!(out.stdout.contains("signed out of remote"), "{out:?}");
    assert_eq!(state.counts().revocations, 1);
    let gone = setup.run(&["check", "--json"]).await;
    assert_eq!(
        gone.outcome()["servers"][0]["reason"],
        "sign_in",
        "{gone:?}"
    );
    assert_eq!(state.counts().code_grants, 1, "no sign-in on its own");
}

#[tokio::test]
async fn a_supervised_server_stays_ready_across_three_expiries() {
    let state = serve().await;
    let setup = Setup::signed_in("oauth-expiries", &state.origin).await;
    let mut watch = setup.watch_ready().await;
    for n in 1..=3 {
        state.expire_all();
        watch
            .wait_for_nth("refreshed", n, |e| is_auth(e, "remote", "refreshed"))
            .await;
    }
    let run = watch.stop().await;
    let states: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e["type"] == "state" && e["state"] != "stopping")
        .collect();
    let last = states.last().expect("states");
    assert_eq!(last["state"], "ready", "{states:?}");
    assert_eq!(last["generation"], 1, "never reconnected: {states:?}");
    let c = state.counts();
    assert_eq!((c.code_grants, c.refresh_grants), (1, 3), "{c:?}");
    assert!(!run.stdout.contains(CANARY) && !run.stderr.contains(CANARY));
}

/// Ten servers under `/mcp/1`…`/mcp/10`, named `s1`…`s10`.
fn ten() -> Vec<(String, String)> {
    (1..=10)
        .map(|n| (format!("s{n}"), format!("/mcp/{n}")))
        .collect()
}

fn refs(servers: &[(String, String)]) -> Vec<(&str, &str)> {
    servers
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str()))
        .collect()
}

#[tokio::test]
async fn ten_servers_behind_one_authorization_server_refresh_once() {
    let state = serve().await;
    let servers = ten();
    let refs = refs(&servers);
    let setup = Setup::new("oauth-ten", &state.origin, &refs);
    // One sign-in, for the first; the others find it behind the same authorization server.
    setup.login("s1").await;
    let mut watch = setup.watch();
    for (name, _) in &refs {
        watch
            .wait_for("ready", |e| is_state(e, name, "ready"))
            .await;
    }
    assert_eq!(state.counts().code_grants, 1, "one sign-in for all ten");
    state.expire_all();
    for (name, _) in &refs {
        watch
            .wait_for("refreshed", |e| is_auth(e, name, "refreshed"))
            .await;
    }
    let run = watch.stop().await;
    let c = state.counts();
    assert_eq!(c.refresh_grants, 1, "one refresh for ten servers: {c:?}");
    assert!(
        !run.events.iter().any(|e| e["type"] == "state"
            && e["state"] != "ready"
            && e["state"] != "connecting"
            && e["state"] != "stopping"),
        "every server stayed up"
    );
}

#[tokio::test]
async fn a_revoked_refresh_token_ends_in_sign_in_needed_once() {
    let state = serve().await;
    let setup = Setup::signed_in("oauth-revoked", &state.origin).await;
    let mut watch = setup.watch_ready().await;
    *state.revoked.lock().unwrap() = true;
    state.expire_all();
    let retired = watch
        .wait_for("retired", |e| is_state(e, "remote", "retired"))
        .await;
    assert_eq!(retired["reason"], "sign_in", "{retired}");
    let failed = watch
        .wait_for("refresh_failed", |e| is_auth(e, "remote", "refresh_failed"))
        .await;
    assert_eq!(failed["failure"]["kind"], "auth", "{failed}");
    watch
        .wait_for("sign_in_needed", |e| is_auth(e, "remote", "sign_in_needed"))
        .await;
    let run = watch.stop().await;
    let c = state.counts();
    assert_eq!(
        (c.refresh_grants, c.authorize, c.code_grants),
        (1, 1, 1),
        "one refused refresh, no sign-in attempt, no loop: {c:?}"
    );
    let needed = run
        .events
        .iter()
        .filter(|e| is_auth(e, "remote", "sign_in_needed"))
        .count();
    assert_eq!(needed, 1, "said once");
    // The dead sign-in is forgotten: the next run says sign-in needed without trying it.
    let next = setup.run(&["check", "--json"]).await;
    assert_eq!(
        next.outcome()["servers"][0]["reason"],
        "sign_in",
        "{next:?}"
    );
    assert_eq!(state.counts().refresh_grants, 1, "{next:?}");
}

#[tokio::test]
async fn a_reconnect_after_the_network_was_lost_uses_the_refreshed_token() {
    let (state, proxy) = serve_behind_proxy().await;
    let setup = Setup::signed_in("oauth-netloss", &state.origin).await;
    let mut watch = setup.watch_ready().await;
    state.expire_all();
    watch
        .wait_for("refreshed", |e| is_auth(e, "remote", "refreshed"))
        .await;
    let refreshed = state.latest.lock().unwrap().clone();
    let unauthorized = state.counts().unauthorized;
    proxy.cut();
    watch
        .wait_for("the loss", |e| {
            e["server"] == "remote" && e["type"] == "state" && e["state"] == "reconnecting"
        })
        .await;
    proxy.restore();
    let back = watch
        .wait_for("ready again", |e| {
            is_state(e, "remote", "ready") && e["generation"].as_u64() > Some(1)
        })
        .await;
    watch.stop().await;
    assert!(back["generation"].as_u64() >= Some(2), "{back}");
    let c = state.counts();
    assert_eq!((c.code_grants, c.refresh_grants), (1, 1), "{c:?}");
    assert_eq!(c.unauthorized, unauthorized, "no 401 after the refresh");
    let last = state.initialized_with.lock().unwrap().last().cloned();
    assert_eq!(
        last,
        Some(refreshed),
        "the new session used the refreshed token"
    );
}

#[tokio::test]
async fn two_processes_sharing_a_sign_in_refresh_once() {
    let state = serve().await;
    let setup = Setup::signed_in("oauth-two", &state.origin).await;
    // As the app and a `lifeline connect` bridge would: two processes, one kept sign-in.
    let mut a = setup.watch();
    let mut b = setup.watch();
    for w in [&mut a, &mut b] {
        w.wait_for("ready", |e| is_state(e, "remote", "ready"))
            .await;
    }
    state.expire_all();
    for w in [&mut a, &mut b] {
        w.wait_for("refreshed", |e| is_auth(e, "remote", "refreshed"))
            .await;
    }
    a.stop().await;
    b.stop().await;
    let c = state.counts();
    assert_eq!(
        c.refresh_grants, 1,
        "the second process used the first's: {c:?}"
    );
}

#[tokio::test]
async fn no_token_reaches_a_bundle_or_the_logs() {
    let state = serve().await;
    let setup = Setup::signed_in("oauth-bundle", &state.origin).await;
    // The run below refreshes, so the refreshed tokens are about too.
    state.expire_all();
    let zip = setup.dir.path().join("bundle.zip");
    let logs = setup.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let args = [
        "bundle",
        "--out",
        zip.to_str().unwrap(),
        "--for",
        "5s",
        "--logs",
        logs.to_str().unwrap(),
        "--config",
        setup.config.to_str().unwrap(),
    ];
    // Trace logs on stderr, which `run` checks for tokens with everything else.
    let run = setup.run_with(&args, &[("LIFELINE_LOG", "trace")]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(state.counts().refresh_grants, 1, "refreshed during the run");
    let files = crate::bundle::unzip(&zip);
    assert!(!files.is_empty());
    for (name, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(CANARY), "a token in the bundle's {name}");
    }
}

#[tokio::test]
async fn a_refresh_the_authorization_server_fails_transiently_is_tried_again() {
    let state = serve().await;
    let setup = Setup::signed_in("oauth-transient", &state.origin).await;
    let mut watch = setup.watch_ready().await;
    *state.refresh_outages.lock().unwrap() = 1;
    state.expire_all();
    let failed = watch
        .wait_for("refresh_failed", |e| is_auth(e, "remote", "refresh_failed"))
        .await;
    assert_eq!(failed["failure"]["kind"], "server", "{failed}");
    assert_eq!(failed["auth"]["last_refresh_ok"], false, "{failed}");
    let refreshed = watch
        .wait_for("refreshed", |e| is_auth(e, "remote", "refreshed"))
        .await;
    assert_eq!(refreshed["auth"]["last_refresh_ok"], true, "{refreshed}");
    let run = watch.stop().await;
    assert!(
        !run.events
            .iter()
            .any(|e| is_auth(e, "remote", "sign_in_needed") || is_state(e, "remote", "retired")),
        "a transient failure never asks for a sign-in"
    );
    let c = state.counts();
    assert_eq!((c.code_grants, c.refresh_grants), (1, 2), "{c:?}");
}

/// Issue 29: the machine slept past the tokens' expiry (the authorization server no longer
/// takes them). At the wake every server is probed, and the ten, behind one authorization
/// server, refresh once between them: ready again, no sign-in asked for, no browser.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn after_a_wake_ten_servers_whose_tokens_expired_refresh_once() {
    use lifeline_it::system_bus::{Daemon, StandIns};
    let state = serve().await;
    let servers = ten();
    let refs = refs(&servers);
    let setup = Setup::new("oauth-wake", &state.origin, &refs);
    // No idle pings: whatever reaches the servers after the wake is the wake's.
    let config = std::fs::read_to_string(&setup.config).unwrap();
    let quiet = config.replace("\"pingIntervalMs\":1000", "\"pingIntervalMs\":3600000");
    assert_ne!(config, quiet, "the config's ping interval was found");
    std::fs::write(&setup.config, quiet).unwrap();
    let bus = format!(
        "unix:path={}",
        setup.dir.path().join("system_bus").display()
    );
    let _daemon = Daemon::start(&bus);
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_lifeline-system-bus"));
    let mut os = StandIns::start(exe, &bus, &["--state", "70", "--connectivity", "4"]);
    setup.login("s1").await;
    let mut watch = setup.watch_with(&[("DBUS_SYSTEM_BUS_ADDRESS", &bus)]);
    for (name, _) in &refs {
        watch
            .wait_for("ready", |e| is_state(e, name, "ready"))
            .await;
    }
    os.run("sleep", PATIENCE).await;
    state.expire_all();
    os.run("wake", PATIENCE).await;
    for (name, _) in &refs {
        watch
            .wait_for("refreshed after the wake", |e| {
                is_auth(e, name, "refreshed")
            })
            .await;
    }
    let run = watch.stop().await;
    let c = state.counts();
    assert_eq!(
        (c.code_grants, c.refresh_grants),
        (1, 1),
        "one sign-in ever, one refresh for ten servers: {c:?}"
    );
    assert!(
        !run.events
            .iter()
            .any(|e| e["type"] == "auth" && e["change"] == "sign_in_needed"),
        "no sign-in asked for"
    );
}
