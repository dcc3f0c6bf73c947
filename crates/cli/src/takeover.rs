//! When the app quits under an attached host: `lifeline connect` takes the host's session
//! over with a supervisor of its own, so the host (which would not restart a server that
//! exited) keeps working, as it would have on a direct connection.
//!
//! While attached, the bridge copies whole lines and keeps a `Tap` on them: the host's
//! `initialize` and `initialized`, its resource subscriptions, and which of its requests
//! the app has not answered yet. When the app's side closes, the host's session continues on
//! an in-process gateway: the requests the app left unanswered fail at once with
//! `UPSTREAM_LOST` (the app may or may not have run them; nothing is sent again), then the
//! recorded `initialize`, `initialized` and subscriptions are replayed to the new gateway
//! and their answers kept from the host, who already had them; then the host's stream
//! continues where it was, a line cut in half included. docs/gateway.md, "Attach mode".

use lifeline_core::gateway::UPSTREAM_LOST;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Ids of the requests the bridge replays to the new gateway itself.
const REPLAY_ID: &str = "lifeline-takeover";

/// What the bridge remembers of an attached session.
#[derive(Debug, Default)]
pub struct Tap {
    /// The host's `initialize` line and its id, once it sent one.
    initialize: Option<(String, Value)>,
    /// Whether the app answered the `initialize`.
    initialize_answered: bool,
    initialized: bool,
    /// The URIs the host subscribed to and did not unsubscribe from.
    subscriptions: BTreeSet<String>,
    /// The host's requests the app has not answered: id (as JSON text) → (id, method).
    in_flight: BTreeMap<String, (Value, String)>,
}

impl Tap {
    /// A line from the host, on its way to the app.
    pub fn host_said(&mut self, line: &[u8]) {
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return; // the host's answer to one of the server's requests
        };
        let uri = || {
            msg.pointer("/params/uri")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match method {
            "initialize" => {
                if let Some(id) = msg.get("id") {
                    let text = String::from_utf8_lossy(line).trim().to_owned();
                    self.initialize = Some((text, id.clone()));
                    self.initialize_answered = false;
                }
            }
            "notifications/initialized" => self.initialized = true,
            "resources/subscribe" => self.subscriptions.extend(uri()),
            "resources/unsubscribe" => {
                if let Some(uri) = uri() {
                    self.subscriptions.remove(&uri);
                }
            }
            _ => {}
        }
        if let Some(id) = msg.get("id") {
            self.in_flight
                .insert(id.to_string(), (id.clone(), method.to_owned()));
        }
    }

    /// A line from the app, on its way to the host.
    pub fn app_said(&mut self, line: &[u8]) {
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if msg.get("method").is_some() {
            return; // a notification, or the server's request to the host
        }
        let Some(id) = msg.get("id") else {
            return;
        };
        if self.in_flight.remove(&id.to_string()).is_some()
            && self.initialize.as_ref().is_some_and(|(_, i)| i == id)
        {
            self.initialize_answered = true;
        }
    }

    /// The hand-over: the errors the host gets for what the app left unanswered, the lines
    /// the new gateway is fed before the host's own, and the ids of the answers to keep
    /// from the host.
    pub fn hand_over(self, server: &str) -> HandOver {
        let mut to_host = Vec::new();
        let mut replay = Vec::new();
        let mut swallow = HashSet::new();
        let initialize_id = self.initialize.as_ref().map(|(_, id)| id.to_string());
        for (key, (id, method)) in &self.in_flight {
            // An unanswered initialize is simply answered by the new gateway.
            if Some(key) == initialize_id.as_ref() {
                continue;
            }
            to_host.push(lost(server, id, method));
        }
        if let Some((line, id)) = self.initialize {
            replay.push(line);
            if self.initialize_answered {
                swallow.insert(id.to_string());
            }
        }
        if self.initialized {
            replay
                .push(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        }
        for (n, uri) in self.subscriptions.iter().enumerate() {
            let id = json!(format!("{REPLAY_ID}-{n}"));
            swallow.insert(id.to_string());
            replay.push(
                json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
                       "params": {"uri": uri}})
                .to_string(),
            );
        }
        HandOver {
            to_host,
            replay,
            swallow,
        }
    }
}

/// What `Tap::hand_over` decided (each a JSON-RPC line without its newline).
#[derive(Debug)]
pub struct HandOver {
    pub to_host: Vec<String>,
    pub replay: Vec<String>,
    /// Ids (as JSON text) whose answers from the new gateway the host must not see.
    pub swallow: HashSet<String>,
}

impl HandOver {
    /// Whether an answer from the new gateway is for a replayed request (and not the
    /// host's). Each is swallowed once.
    pub fn swallows(&mut self, line: &[u8]) -> bool {
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        if msg.get("method").is_some() {
            return false;
        }
        msg.get("id")
            .is_some_and(|id| self.swallow.remove(&id.to_string()))
    }
}

fn lost(server: &str, id: &Value, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": UPSTREAM_LOST,
        "message": format!(
            "the Lifeline app quit while {method} was in flight to `{server}`; it may or may \
             not have run, and it was not sent again. `{server}` is now served from this \
             process: check its effect before you try again"),
        "data": {"server": server, "state": "app_quit"},
    }})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(v: Value) -> Vec<u8> {
        v.to_string().into_bytes()
    }

    fn request(id: Value, method: &str, params: Value) -> Vec<u8> {
        line(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    fn answer(id: Value) -> Vec<u8> {
        line(json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    }

    #[test]
    fn the_unanswered_requests_fail_and_the_session_is_replayed() {
        let mut tap = Tap::default();
        tap.host_said(&request(
            json!(0),
            "initialize",
            json!({"protocolVersion": "x"}),
        ));
        tap.app_said(&answer(json!(0)));
        tap.host_said(&line(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ));
        tap.host_said(&request(
            json!(1),
            "resources/subscribe",
            json!({"uri": "a://1"}),
        ));
        tap.host_said(&request(
            json!(2),
            "resources/subscribe",
            json!({"uri": "a://2"}),
        ));
        tap.host_said(&request(
            json!(3),
            "resources/unsubscribe",
            json!({"uri": "a://1"}),
        ));
        for id in 1..=3 {
            tap.app_said(&answer(json!(id)));
        }
        tap.host_said(&request(
            json!("call-7"),
            "tools/call",
            json!({"name": "slow"}),
        ));
        tap.host_said(&request(json!(8), "tools/list", json!({})));
        tap.app_said(&answer(json!(8)));
        // A server's request to the host, and the host's answer to it, are not the host's
        // requests.
        tap.app_said(&request(json!(0), "sampling/createMessage", json!({})));
        tap.host_said(&answer(json!(0)));

        let mut over = tap.hand_over("srv");
        assert_eq!(over.to_host.len(), 1, "{:?}", over.to_host);
        let lost: Value = serde_json::from_str(&over.to_host[0]).unwrap();
        assert_eq!(lost["id"], "call-7");
        assert_eq!(lost["error"]["code"], UPSTREAM_LOST);
        assert!(
            lost["error"]["message"]
                .as_str()
                .unwrap()
                .contains("tools/call was in flight")
        );
        let replayed: Vec<Value> = over
            .replay
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let methods: Vec<&str> = replayed
            .iter()
            .map(|m| m["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            [
                "initialize",
                "notifications/initialized",
                "resources/subscribe"
            ]
        );
        assert_eq!(replayed[2]["params"]["uri"], "a://2");
        // The replayed answers are kept from the host, once; the host's own are not.
        assert!(over.swallows(&answer(json!(0))));
        assert!(!over.swallows(&answer(json!(0))));
        assert!(over.swallows(&answer(replayed[2]["id"].clone())));
        assert!(!over.swallows(&answer(json!("call-7"))));
        assert!(!over.swallows(b"not json"));
    }

    #[test]
    fn an_unanswered_initialize_is_answered_by_the_new_gateway() {
        let mut tap = Tap::default();
        tap.host_said(&request(json!(0), "initialize", json!({})));
        let mut over = tap.hand_over("srv");
        assert!(over.to_host.is_empty());
        assert_eq!(over.replay.len(), 1);
        assert!(!over.swallows(&answer(json!(0))), "the host waits for it");
    }

    #[test]
    fn garbage_is_passed_without_a_trace() {
        let mut tap = Tap::default();
        tap.host_said(b"{not json");
        tap.app_said(b"\xff\xfe");
        let over = tap.hand_over("srv");
        assert!(over.to_host.is_empty() && over.replay.is_empty());
    }
}
