//! The table: one row a scenario of `lifeline watch --json` against fixtures, each run as
//! its own test by `scenario::run`, which also checks what every run keeps (the stream's
//! invariants, waits honoured, every server ends `stopping`, no process outlives `watch`).
//! A row's `then` holds only what is particular to it.

use serde_json::{Value, json};

use super::events::{RENDER_LAG_MS, TOOLS, first_state, label, names, of, states, typed};
use super::fixtures::{
    crash_on, fast_reconnect, http_status_on_every_request, http_status_on_initialize, with,
};
use super::scenario::{
    Scenario, entry, expect, http, scenarios, state, state_in, stdio, stdio_script_in_env, until,
};
use crate::support;

/// The reconnect policy of the servers that stay ready for a moment: a stability window
/// (the backoff cap) of 5 s, far longer than a connection lives.
fn long_stability_window() -> Value {
    json!({
        "reconnect": {"initialDelayMs": 20, "maxDelayMs": 5000, "maxAttempts": 3,
                      "quarantineMs": [100, 150, 200]},
        "timeouts": {"pingIntervalMs": 1000}
    })
}

/// A command that is on no PATH.
const MISSING: &str = "lifeline-no-such-command-9f3e";

scenarios! {
    // # The event stream

    /// `seq`, `v`, the keys and `at` are checked by the runner for every row; this one
    /// makes three servers (stdio, a crash loop, HTTP) emit at once.
    seq_is_gap_free_across_servers_and_every_event_is_v1_with_an_rfc3339_at => Scenario {
        servers: vec![
            stdio("stable", json!({})),
            stdio("looping", json!({"rules": [crash_on("initialize")]})),
            http("remote", json!({})),
        ],
        until: vec![
            state("stable", "ready"),
            state("remote", "ready"),
            state("looping", "gave_up"),
        ],
        ..Scenario::default()
    };

    // # A stable server

    /// A health ping answered: the connection is used, and nothing reconnects.
    a_stable_stdio_server_connects_in_stages_lists_ten_tools_and_stays_on_one_process => Scenario {
        servers: vec![stdio("stable", json!({}))
            .with(json!({"timeouts": {"pingIntervalMs": 1000}}))],
        until: vec![until("a round trip", |e| e["type"] == "round_trip")],
        expect: vec![expect("stable")
            .labels(&[
                "connecting(spawn)",
                "connecting(initialize)",
                "connecting(list_tools)",
                "ready",
                "stopping",
            ])
            .failures(0)
            .processes(1)],
        then: |ran| {
            let events = ran.events();
            let ping = events.iter().find(|e| e["type"] == "round_trip").unwrap();
            assert_eq!(ping["generation"], 1, "{ping}");
            let tools = typed(events, "stable", "tools");
            assert_eq!(tools.len(), 1, "{tools:?}");
            assert_eq!(tools[0]["count"], 10);
            assert_eq!(tools[0]["stale"], false);
            assert_eq!(names(tools[0]), TOOLS);
            for e in of(events, "stable") {
                assert_eq!(e["generation"], 1, "{e}");
                if e["type"] == "state" {
                    assert_eq!(e["quarantine_level"], 0, "{e}");
                    assert!(e["cause"].is_null(), "{e}");
                }
            }
            let connecting = &states(events, "stable")[0];
            assert_eq!(
                (&connecting["attempt"], &connecting["max_attempts"]),
                (&json!(1), &json!(3))
            );
        },
        ..Scenario::default()
    };

    // # A crash loop climbs the ladder

    /// Every generation appends to one log: three attempts, then one probe per level, each
    /// getting as far as listing tools, where the fixture crashes.
    a_crash_loop_climbs_retrying_quarantine_1_2_3_then_gives_up_after_six_processes => Scenario {
        servers: vec![stdio("loop", json!({"rules": [crash_on("tools/list")]}))],
        until: vec![state("loop", "gave_up")],
        expect: vec![expect("loop")
            .outline(&[
                "connecting",
                "retrying 1/3",
                "connecting",
                "retrying 2/3",
                "connecting",
                "quarantined 1",
                "connecting",
                "quarantined 2",
                "connecting",
                "quarantined 3",
                "connecting",
                "gave_up",
                "stopping",
            ])
            .processes(6)
            .failures(6)
            .each_failure(json!({"failure": {"stage": "list_tools", "exit_code": 3}}))
            .probes(&[4, 5, 6])
            .waits(5)],
        then: |ran| {
            let states = states(ran.events(), "loop");
            let last = states.iter().map(|e| e["generation"].as_u64().unwrap()).max();
            assert_eq!(last, Some(6));
            for (i, f) in typed(ran.events(), "loop", "failure").iter().enumerate() {
                assert_eq!(f["failure"]["generation"], i as u64 + 1, "{f}");
            }
            // The waits are the configured ones: 20 ms and 40 ms ±20 %, then the
            // quarantine cooldowns exactly (announced as what remains, so up to
            // RENDER_LAG_MS less).
            let delays: Vec<(String, i64)> = states
                .iter()
                .filter(|e| !e["delay_ms"].is_null())
                .map(|e| (label(e), e["delay_ms"].as_i64().unwrap()))
                .collect();
            let bounds = [
                ("retrying 1/3", 16, 24),
                ("retrying 2/3", 32, 48),
                ("quarantined 1", 100, 100),
                ("quarantined 2", 150, 150),
                ("quarantined 3", 200, 200),
            ];
            assert_eq!(delays.len(), bounds.len(), "{delays:?}");
            for ((label, delay), (want, low, high)) in delays.iter().zip(bounds) {
                assert_eq!(label, want);
                assert!(
                    (low - RENDER_LAG_MS..=high).contains(delay),
                    "{label}: delay_ms {delay} outside {low}..={high} (less {RENDER_LAG_MS} ms lag)"
                );
            }
            // gave_up drops the tools (there were none) and keeps the cause.
            let gave_up = first_state(ran.events(), "loop", "gave_up");
            assert_eq!(gave_up["quarantine_level"], 3);
            assert_eq!(gave_up["cause"]["exit_code"], 3, "{gave_up}");
            assert!(gave_up["next_attempt_at"].is_null());
        },
        ..Scenario::default()
    };

    /// A crash loop whose connects succeed for a moment: each process answers initialize
    /// and tools/list (ready), then exits on its first health ping a second later, inside
    /// the 5 s stability window. A probe that reaches ready and is lost like that is a
    /// failed probe: one round of 3 attempts and one probe per level, 6 processes, exactly
    /// as when the connects fail outright. (Counted as fresh rounds it was 3 per level, 12
    /// processes.) Each process lives about a second, so the row waits for them one at a
    /// time (each wait has its own patience), then for gave_up or, had a probe started a
    /// fresh round, a 7th generation.
    a_crash_loop_that_is_ready_for_a_moment_climbs_the_ladder_in_six_processes => Scenario {
        servers: vec![stdio(
            "brief",
            json!({"rules": [{"method": "ping", "action": {"kind": "crash", "code": 5}}]}),
        )
        .with(long_stability_window())],
        until: (1..=6)
            .map(|generation| state_in("brief", "ready", generation))
            .chain([until("gave_up or a 7th generation", |e| {
                e["server"] == "brief"
                    && (e["state"] == "gave_up" || e["generation"].as_u64() > Some(6))
            })])
            .collect(),
        expect: vec![expect("brief")
            .outline(&[
                "connecting",
                "ready",
                "reconnecting 1/3",
                "connecting",
                "ready",
                "reconnecting 2/3",
                "connecting",
                "ready",
                "quarantined 1",
                "connecting",
                "ready",
                "quarantined 2",
                "connecting",
                "ready",
                "quarantined 3",
                "connecting",
                "ready",
                "gave_up",
                "stopping",
            ])
            .processes(6)
            .probes(&[4, 5, 6])
            .failures(6)
            .each_failure(json!({"failure": {"exit_code": 5}}))],
        ..Scenario::default()
    };

    // # Final states

    /// Retired is final: the event says no attempt is scheduled (`next_attempt_at` null),
    /// and the policy's tests show none comes (supervisor/tests.rs, and the paused hour of
    /// `a_401_at_connect_retires_after_one_attempt`). So the run ends once the server
    /// retires, rather than after a window of real time in which a retry might show.
    a_401_retires_auth_after_exactly_one_request_and_watch_keeps_running => Scenario {
        servers: vec![http(
            "locked",
            json!({"rules": [
                http_status_on_every_request(401, json!({"www_authenticate": "Bearer"}))
            ]}),
        )],
        until: vec![state("locked", "retired")],
        expect: vec![expect("locked")
            .labels(&["connecting(connect)", "connecting(discover)", "retired auth", "stopping"])
            .failures(1)],
        then: |ran| {
            let retired = first_state(ran.events(), "locked", "retired");
            support::assert_subset(
                &json!({"cause": {"kind": "auth", "status": 401, "method": "POST",
                                  "url_path": "/mcp"}}),
                retired,
                "retired",
            );
            assert!(retired["next_attempt_at"].is_null(), "{retired}");
            // Besides the OAuth discovery GETs the 401 started (no metadata here).
            let requests: Vec<_> = support::events(&ran.log("locked"), "received")
                .into_iter()
                .filter(|e| e["path"] == "/mcp")
                .collect();
            assert_eq!(requests.len(), 1, "exactly one request: {requests:?}");
            assert_eq!(requests[0]["rpc_method"], "server/discover");
        },
        ..Scenario::default()
    };

    /// Retired is final (see the 401 row): the run ends once the server retires; the
    /// failure count shows no second attempt came before it.
    a_missing_command_is_retired_config_without_retries_naming_the_command => Scenario {
        servers: vec![entry(
            "missing",
            json!({"command": MISSING, "args": ["x"], "reconnect": fast_reconnect()}),
        )],
        until: vec![state("missing", "retired")],
        expect: vec![expect("missing")
            .labels(&["connecting(spawn)", "retired config", "stopping"])
            .failures(1)
            .each_failure(json!({"failure": {"kind": "spawn", "stage": "spawn"}}))],
        then: |ran| {
            let failure = typed(ran.events(), "missing", "failure")[0];
            let message = failure["failure"]["message"].as_str().unwrap();
            assert!(message.contains(MISSING), "{message}");
            assert!(message.contains("command not found"), "{message}");
            assert!(message.contains("PATH="), "shows the PATH searched: {message}");
        },
        ..Scenario::default()
    };

    // # Retry-After

    retry_after_on_initialize_is_waited_exactly_before_the_second_attempt => Scenario {
        servers: vec![http(
            "limited",
            json!({"rules": [with(
                http_status_on_initialize(429, json!({"retry_after": "1"})),
                json!({"nth": 1}),
            )]}),
        )],
        until: vec![state("limited", "ready")],
        expect: vec![expect("limited")
            .outline(&["connecting", "retrying 1/3", "connecting", "ready", "stopping"])
            .waits(1)],
        then: |ran| {
            let retrying = first_state(ran.events(), "limited", "retrying");
            // Exactly 1 s, not jittered.
            support::assert_subset(
                &json!({"cause": {"status": 429, "kind": "rate_limited", "retry_after_ms": 1000},
                        "delay_ms": 1000}),
                retrying,
                "the announced wait is exactly Retry-After",
            );
            let initializes = support::received(&ran.log("limited"), "initialize");
            assert_eq!(initializes.len(), 2, "{initializes:?}");
            let t = |i: usize| initializes[i]["t_ms"].as_i64().unwrap();
            let gap = t(1) - t(0);
            assert!(gap >= 1000, "the second initialize came {gap} ms after the first");
        },
        ..Scenario::default()
    };

    // # Disabled

    /// The other server getting all the way to ready is the window in which `off` could
    /// have started too.
    a_disabled_server_is_never_started => Scenario {
        servers: vec![
            stdio("off", json!({})).with(json!({"disabled": true})),
            stdio("on", json!({})),
        ],
        until: vec![state("off", "disabled"), state("on", "ready")],
        expect: vec![
            expect("off").labels(&["disabled", "stopping"]).processes(0),
            expect("on").processes(1),
        ],
        then: |ran| {
            let off = of(ran.events(), "off");
            assert!(off.iter().all(|e| e["type"] == "state"), "{off:?}");
        },
        ..Scenario::default()
    };

    // # Disposal outlives a server that ignores SIGTERM

    /// The runner checks that no process outlives `watch`; this server makes that cost the
    /// whole shutdown sequence: stdin closed, then SIGTERM (ignored), then SIGKILL.
    a_server_that_ignores_sigterm_is_gone_when_watch_exits => Scenario {
        servers: vec![stdio("stubborn", json!({"ignore_sigterm": true, "on_stdin_eof": "stay"}))],
        until: vec![state("stubborn", "ready")],
        expect: vec![expect("stubborn").processes(1).running_at_stop(1)],
        then: |ran| {
            let log = ran.log("stubborn");
            let count = |event| support::events(&log, event).len();
            assert_eq!(count("stdin_closed"), 1, "stdin was closed first");
            assert_eq!(count("sigterm_ignored"), 1, "then SIGTERM, then SIGKILL");
        },
        ..Scenario::default()
    };

    // # Recovery after a crash

    /// Each process answers initialize and tools/list, then dies on its third request (the
    /// first health ping). A stability window of 5 s makes that a lost connection inside
    /// the window: reconnecting, not an immediate reconnect.
    a_server_that_crashes_after_ready_reconnects_with_a_new_generation_and_the_same_tools
        => Scenario {
        servers: vec![stdio(
            "flaky",
            json!({"rules": [{"nth": 3, "action": {"kind": "crash", "code": 7}}]}),
        )
        .with(long_stability_window())],
        until: vec![
            state_in("flaky", "ready", 2),
            until("the new generation's tools", |e| {
                e["server"] == "flaky" && e["type"] == "tools" && e["generation"] == 2
            }),
        ],
        expect: vec![expect("flaky")
            .outline_starts_with(&[
                "connecting",
                "ready",
                "reconnecting 1/3",
                "connecting",
                "ready",
            ])
            .waits(1)
            .at_least_processes(2)],
        then: |ran| {
            let events = ran.events();
            let lost = typed(events, "flaky", "failure")[0];
            support::assert_subset(
                &json!({"generation": 1, "failure": {"exit_code": 7, "kind": "process_exit"}}),
                lost,
                "the loss",
            );
            let reconnecting = first_state(events, "flaky", "reconnecting");
            assert_eq!(reconnecting["cause"]["exit_code"], 7, "{reconnecting}");
            let tools = typed(events, "flaky", "tools");
            let lists: Vec<(u64, bool, Vec<&str>)> = tools
                .iter()
                .map(|e| {
                    let generation = e["generation"].as_u64().unwrap();
                    (generation, e["stale"].as_bool().unwrap(), names(e))
                })
                .collect();
            assert_eq!(
                lists[..3],
                [(1, false, TOOLS.to_vec()), (1, true, TOOLS.to_vec()), (2, false, TOOLS.to_vec())],
                "the last good list is kept, marked stale, during the outage"
            );
            // The stale list came with the loss, before the new generation connected.
            assert!(tools[1]["seq"].as_u64() < reconnecting["seq"].as_u64());
        },
        ..Scenario::default()
    };

    // # Secrets

    /// The 401 quotes the header's token in a JSON-RPC error, which the client shows. The
    /// stdio fixture reads its script from the environment, writes both env canaries to
    /// stderr at startup and crashes on initialize, so its last stderr line is shown.
    /// Trace logging is on too: logs are output and must be as clean as events.
    no_canary_secret_reaches_watch_output => Scenario {
        servers: vec![
            http("remote", json!({"rules": [http_status_on_initialize(401, json!({
                "body": json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message":
                    format!("body-marker: token {HEADER} / {API_KEY} / {EXPANDED} rejected")}})
                    .to_string(),
                "www_authenticate":
                    format!("Bearer error=\"invalid_token\", error_description=\"{HEADER}\""),
            }))]}))
            .with(json!({"headers": {
                "Authorization": format!("Bearer {HEADER}"),
                "X-Api-Key": API_KEY,
                "X-Expanded": "${env:CANARY_VAR}",
            }})),
            stdio_script_in_env("leaky", json!({
                "stderr": format!("stderr-marker ${{env:CANARY_VAR}} and {ENV}\n"),
                "rules": [crash_on("initialize")]
            }))
            .with(json!({
                "env": {"API_TOKEN": ENV},
                "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2,
                              "quarantineMs": [20, 20, 20]},
            })),
        ],
        env: vec![("CANARY_VAR", EXPANDED.to_owned()), ("LIFELINE_LOG", "trace".to_owned())],
        until: vec![state("leaky", "gave_up"), state("remote", "retired")],
        expect: vec![expect("leaky").processes(5)],
        then: |ran| {
            let everything = format!("{}\n{}", ran.run.stdout, ran.run.stderr);
            for canary in [HEADER, API_KEY, ENV, EXPANDED] {
                assert!(!everything.contains(canary), "{canary} leaked:\n{everything}");
            }
            // The places they would have been are shown (scrubbed), so the row can fail.
            assert!(everything.contains("stderr-marker"), "the stderr tail is shown: {everything}");
            assert!(
                everything.contains("body-marker"),
                "the server's message is shown: {everything}"
            );
            let received = support::received(&ran.log("remote"), "initialize");
            assert_eq!(received[0]["authorization_present"], true);
        },
    };
}

// The canaries of `no_canary_secret_reaches_watch_output`.
const HEADER: &str = "hdrcanary7Q2xK9";
const API_KEY: &str = "apikeycanary3Lm8";
const ENV: &str = "envcanary5Tz1Wq";
const EXPANDED: &str = "expandedcanary8Rv4";
