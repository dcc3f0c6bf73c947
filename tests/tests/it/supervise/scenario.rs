//! The scenario table's vocabulary and its one runner. A `Scenario` is data: the servers
//! (each a fixture and a script, or a bare config entry), the events to wait for, what each
//! server's events and fixture log must show, and a function for what is particular to it.
//! `run` starts `lifeline watch --json` on the config, waits for each event in turn (each
//! wait bounded), stops it with SIGTERM and checks, beyond the row's expectations, what
//! every run keeps: the stream's invariants (`events::assert_stream`), no attempt before
//! its announced time, every server ends `stopping`, and no process outlives `watch`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::events::{
    assert_no_early_attempts, assert_stream, labels, now_ms, of, outline, started_pids, states,
    typed,
};
use super::fixtures::{fast_reconnect, http_server, stdio_server, with};
use super::watch::{Watch, WatchRun};
use crate::support::{
    self, HttpFixture, StdioFixture, TempDirGuard, assert_subset, is_running, write_config,
};

/// `scenarios! { name => row; ... }`: one `#[tokio::test]` per row, named by it (doc
/// comments and attributes before the name go on the test), each running its row.
macro_rules! scenarios {
    ($($(#[$meta:meta])* $name:ident => $row:expr;)*) => {
        $(
            $(#[$meta])*
            #[tokio::test]
            async fn $name() {
                super::scenario::run($row).await;
            }
        )*
    };
}
pub(super) use scenarios;

/// One row of the table.
pub struct Scenario {
    /// The servers of the config, in its order.
    pub servers: Vec<Server>,
    /// Extra environment for `lifeline watch`.
    pub env: Vec<(&'static str, String)>,
    /// The events to wait for, in order, before SIGTERM ends the run.
    pub until: Vec<Until>,
    /// What each named server's events and fixture log must show.
    pub expect: Vec<Expect>,
    /// Assertions particular to the row, run after all the others.
    pub then: fn(&Ran),
}

impl Default for Scenario {
    fn default() -> Scenario {
        Scenario {
            servers: Vec::new(),
            env: Vec::new(),
            until: Vec::new(),
            expect: Vec::new(),
            then: |_| {},
        }
    }
}

/// A server of the config: its name, what runs it, and keys merged over its entry.
pub struct Server {
    name: &'static str,
    fixture: Fixture,
    entry: Value,
}

enum Fixture {
    /// `lifeline-fixture stdio` with this script on its command line.
    Stdio(Value),
    /// `lifeline-fixture stdio` with this script in the entry's `env`, where the config
    /// expands `${env:…}` and the supervisor treats every value as a secret.
    StdioScriptInEnv(Value),
    /// `lifeline-fixture http` with this script, started before `watch`.
    Http(Value),
    /// Nothing: the entry is the whole config.
    None,
}

/// A stdio fixture with `script`, under `fast_reconnect`.
pub fn stdio(name: &'static str, script: Value) -> Server {
    Server::new(name, Fixture::Stdio(script))
}

/// A stdio fixture reading `script` from its environment, set in the entry's `env`.
pub fn stdio_script_in_env(name: &'static str, script: Value) -> Server {
    Server::new(name, Fixture::StdioScriptInEnv(script))
}

/// An HTTP fixture with `script`, under `fast_reconnect`.
pub fn http(name: &'static str, script: Value) -> Server {
    Server::new(name, Fixture::Http(script))
}

/// A server with no fixture: `entry` is its config as written.
pub fn entry(name: &'static str, entry: Value) -> Server {
    Server {
        entry,
        ..Server::new(name, Fixture::None)
    }
}

impl Server {
    fn new(name: &'static str, fixture: Fixture) -> Server {
        Server {
            name,
            fixture,
            entry: json!({}),
        }
    }

    /// The entry with the keys of `extra` added (or replaced).
    pub fn with(self, extra: Value) -> Server {
        Server {
            entry: with(self.entry, extra),
            ..self
        }
    }
}

/// An event to wait for, and how to name it when it does not come.
pub struct Until {
    what: String,
    pred: Box<dyn Fn(&Value) -> bool>,
}

/// The first event satisfying `pred`.
pub fn until(what: &str, pred: impl Fn(&Value) -> bool + 'static) -> Until {
    Until {
        what: what.to_owned(),
        pred: Box::new(pred),
    }
}

/// `server` entering `state`.
pub fn state(server: &'static str, state: &'static str) -> Until {
    until(
        &format!("{server} {state}"),
        super::events::is_state(server, state),
    )
}

/// `server` entering `state` in `generation`.
pub fn state_in(server: &'static str, state: &'static str, generation: u64) -> Until {
    let is = super::events::is_state(server, state);
    until(
        &format!("{server} {state} in generation {generation}"),
        move |e| is(e) && e["generation"] == generation,
    )
}

/// What one server's run must show. Built with `expect(server)` and the methods below;
/// what is not said is not checked (beyond what `run` checks for every server).
pub struct Expect {
    server: &'static str,
    states: States,
    processes: Option<Processes>,
    failures: Option<usize>,
    each_failure: Option<Value>,
    probes: Option<Vec<u64>>,
    waits: Option<usize>,
    running_at_stop: Option<usize>,
}

enum States {
    Any,
    /// The state labels (`events::labels`), exactly.
    Labels(Vec<&'static str>),
    /// The outline (`events::outline`), exactly.
    Outline(Vec<&'static str>),
    /// The outline begins with these.
    OutlineStartsWith(Vec<&'static str>),
}

enum Processes {
    Exactly(usize),
    AtLeast(usize),
}

pub fn expect(server: &'static str) -> Expect {
    Expect {
        server,
        states: States::Any,
        processes: None,
        failures: None,
        each_failure: None,
        probes: None,
        waits: None,
        running_at_stop: None,
    }
}

impl Expect {
    /// The state labels, stage by stage (`connecting(spawn)`, `retrying 1/3`, …).
    pub fn labels(self, labels: &[&'static str]) -> Expect {
        let states = States::Labels(labels.to_vec());
        Expect { states, ..self }
    }

    /// The states with each attempt's stages folded into one `connecting`.
    pub fn outline(self, outline: &[&'static str]) -> Expect {
        let states = States::Outline(outline.to_vec());
        Expect { states, ..self }
    }

    /// The outline's first states.
    pub fn outline_starts_with(self, outline: &[&'static str]) -> Expect {
        let states = States::OutlineStartsWith(outline.to_vec());
        Expect { states, ..self }
    }

    /// How many processes the fixture log says were started; 0 also means the fixture
    /// never ran at all (it wrote no log).
    pub fn processes(self, n: usize) -> Expect {
        let processes = Some(Processes::Exactly(n));
        Expect { processes, ..self }
    }

    pub fn at_least_processes(self, n: usize) -> Expect {
        let processes = Some(Processes::AtLeast(n));
        Expect { processes, ..self }
    }

    /// How many `failure` events the server had.
    pub fn failures(self, n: usize) -> Expect {
        Expect {
            failures: Some(n),
            ..self
        }
    }

    /// Fields every `failure` event has (`support::assert_subset`).
    pub fn each_failure(self, fields: Value) -> Expect {
        Expect {
            each_failure: Some(fields),
            ..self
        }
    }

    /// The generations whose attempts were quarantine probes (`reason: probe`).
    pub fn probes(self, generations: &[u64]) -> Expect {
        Expect {
            probes: Some(generations.to_vec()),
            ..self
        }
    }

    /// How many waits were followed by an attempt (each checked for starting on time).
    pub fn waits(self, n: usize) -> Expect {
        Expect {
            waits: Some(n),
            ..self
        }
    }

    /// How many of the fixture's processes were alive when SIGTERM was sent.
    pub fn running_at_stop(self, n: usize) -> Expect {
        Expect {
            running_at_stop: Some(n),
            ..self
        }
    }

    fn check(&self, ran: &Ran) {
        let (server, events) = (self.server, ran.events());
        match &self.states {
            States::Any => {}
            States::Labels(want) => assert_eq!(labels(events, server), *want, "{server}"),
            States::Outline(want) => assert_eq!(outline(events, server), *want, "{server}"),
            States::OutlineStartsWith(want) => {
                let got = outline(events, server);
                assert!(
                    got.len() >= want.len() && got[..want.len()] == want[..],
                    "{server}: the outline {got:?} does not begin with {want:?}"
                );
            }
        }
        match self.processes {
            None => {}
            Some(Processes::Exactly(0)) => {
                let log = ran.log_path(server);
                assert!(
                    !log.exists(),
                    "{server}: the fixture ran: {:?}",
                    support::read_log(log)
                );
            }
            Some(Processes::Exactly(n)) => {
                let pids = started_pids(ran.log_path(server));
                assert_eq!(pids.len(), n, "{server}: processes started {pids:?}");
            }
            Some(Processes::AtLeast(n)) => {
                let pids = started_pids(ran.log_path(server));
                assert!(pids.len() >= n, "{server}: processes started {pids:?}");
            }
        }
        let failures = typed(events, server, "failure");
        if let Some(n) = self.failures {
            assert_eq!(failures.len(), n, "{server}: failures {failures:?}");
        }
        if let Some(fields) = &self.each_failure {
            for f in &failures {
                assert_subset(fields, f, &format!("{server} failure {}", f["seq"]));
            }
        }
        if let Some(want) = &self.probes {
            let probes: BTreeSet<u64> = states(events, server)
                .iter()
                .filter(|e| e["reason"] == "probe")
                .map(|e| e["generation"].as_u64().unwrap())
                .collect();
            let probes: Vec<u64> = probes.into_iter().collect();
            assert_eq!(&probes, want, "{server}: the probes' generations");
        }
    }
}

/// A finished run: what `watch` printed, and the fixtures' logs.
pub struct Ran {
    pub run: WatchRun,
    logs: BTreeMap<&'static str, PathBuf>,
    /// The fixtures, alive (and their logs kept) until the checks are done.
    _stdio: Vec<StdioFixture>,
    _http: Vec<HttpFixture>,
    _dir: TempDirGuard,
}

impl Ran {
    pub fn events(&self) -> &[Value] {
        &self.run.events
    }

    /// The fixture log of `server`.
    pub fn log(&self, server: &str) -> Vec<Value> {
        support::read_log(self.log_path(server))
    }

    pub fn log_path(&self, server: &str) -> &Path {
        self.logs
            .get(server)
            .unwrap_or_else(|| panic!("{server} has no fixture"))
    }
}

/// Runs one row: writes the config, runs `watch` until the row's events, stops it and
/// checks the run.
pub async fn run(scenario: Scenario) {
    let dir = TempDirGuard::new("sup");
    let mut servers = serde_json::Map::new();
    let mut logs = BTreeMap::new();
    // Servers whose fixture log lists every process the supervisor started for them.
    let mut spawned = Vec::new();
    let (mut stdio_fixtures, mut http_fixtures) = (Vec::new(), Vec::new());
    for server in scenario.servers {
        let name = server.name;
        let mut env_script = None;
        let base = match server.fixture {
            Fixture::Stdio(script) => {
                let fixture = support::stdio_fixture(&script);
                let base = stdio_server(&fixture);
                logs.insert(name, fixture.log.clone());
                spawned.push(name);
                stdio_fixtures.push(fixture);
                base
            }
            Fixture::StdioScriptInEnv(script) => {
                let log = dir.path().join(format!("{name}.log"));
                let args = ["stdio", "--log", &log.display().to_string()].map(str::to_owned);
                let base = json!({
                    "command": support::fixture_bin(),
                    "args": args,
                    "reconnect": fast_reconnect(),
                });
                env_script = Some(script.to_string());
                logs.insert(name, log);
                spawned.push(name);
                base
            }
            Fixture::Http(script) => {
                let fixture = support::http_fixture(script).await;
                let base = http_server(&fixture.url);
                logs.insert(name, fixture.log.clone());
                http_fixtures.push(fixture);
                base
            }
            Fixture::None => json!({}),
        };
        let mut entry = with(base, server.entry);
        if let Some(script) = env_script {
            entry["env"][SCRIPT_ENV] = json!(script);
        }
        servers.insert(name.to_owned(), entry);
    }
    let names: Vec<String> = servers.keys().cloned().collect();
    let config = write_config(&dir, Value::Object(servers));
    let env: Vec<(&str, &str)> = scenario.env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let started = now_ms();
    let mut watch = Watch::start_with_env(&config, "60s", &env);
    for until in &scenario.until {
        watch.wait_for(&until.what, &*until.pred).await;
    }
    let mut running = BTreeMap::new();
    for expect in &scenario.expect {
        if expect.running_at_stop.is_some() {
            let log = &logs[expect.server];
            support::wait_for_log(log, "started", |e| e["event"] == "started").await;
            let pids = started_pids(log);
            let alive = pids.iter().filter(|pid| is_running(**pid)).count();
            running.insert(expect.server, alive);
        }
    }
    let run = watch.stop().await;
    let ended = now_ms();
    let ran = Ran {
        run,
        logs,
        _stdio: stdio_fixtures,
        _http: http_fixtures,
        _dir: dir,
    };

    assert_stream(&ran.run, started, ended);
    for server in &names {
        let events = ran.events();
        assert!(!of(events, server).is_empty(), "no events of {server}");
        let last = states(events, server).last().map(|e| e["state"].clone());
        assert_eq!(last, Some(json!("stopping")), "{server} ends stopping");
        let waits = assert_no_early_attempts(events, server);
        let expect = scenario.expect.iter().find(|e| e.server == server);
        if let Some(want) = expect.and_then(|e| e.waits) {
            assert_eq!(waits, want, "{server}: waits followed by an attempt");
        }
    }
    for server in spawned {
        for pid in started_pids(ran.log_path(server)) {
            assert!(
                !is_running(pid),
                "{server}: pid {pid} outlived `lifeline watch`"
            );
        }
    }
    for expect in &scenario.expect {
        if let Some(want) = expect.running_at_stop {
            let alive = running[expect.server];
            assert_eq!(
                alive, want,
                "{}: processes alive when stopped",
                expect.server
            );
        }
        expect.check(&ran);
    }
    (scenario.then)(&ran);
}

/// The variable `lifeline-fixture` reads its script from when no `--script` is given.
const SCRIPT_ENV: &str = "LIFELINE_FIXTURE_SCRIPT";
