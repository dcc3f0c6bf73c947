//! NetworkManager on the system bus (`org.freedesktop.NetworkManager`): its `State` and
//! `Connectivity` properties, read when it is found and again from `StateChanged` and
//! `PropertiesChanged`, judged by `judge` into online or offline for remote servers. Every
//! reading is told (the watch keeps one picture), the first one too.

use super::super::{Sink, SystemEvent};
use super::{CALL_BOUND, NETWORK_MANAGER, Signal, call, next_wake, signals};
use futures_util::StreamExt;
use std::collections::HashMap;
use zbus::zvariant::{OwnedValue, Value};

const PATH: &str = "/org/freedesktop/NetworkManager";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const STATE_CHANGED: Signal = Signal::of(NETWORK_MANAGER, PATH, NETWORK_MANAGER, "StateChanged");
const PROPERTIES_CHANGED: Signal =
    Signal::of(NETWORK_MANAGER, PATH, PROPERTIES, "PropertiesChanged");

/// `NMState`, as far as remote servers care.
mod state {
    pub const ASLEEP: u32 = 10;
    pub const CONNECTED_SITE: u32 = 60;
    pub const CONNECTED_GLOBAL: u32 = 70;
}

/// `NMConnectivityState`.
mod connectivity {
    pub const NONE: u32 = 1;
    pub const LIMITED: u32 = 3;
    pub const FULL: u32 = 4;
}

/// What NetworkManager says of the network, for remote servers: `None` when it says nothing
/// (UNKNOWN, or a value it does not define). A state short of CONNECTED_GLOBAL (asleep,
/// disconnected, connecting, local or site only) is offline whatever the connectivity check
/// last found; otherwise the check decides when it ran (FULL online; NONE, PORTAL, LIMITED
/// offline), and the state when it is off or has not run.
pub fn judge(state: Option<u32>, connectivity: Option<u32>) -> Option<SystemEvent> {
    use SystemEvent::{Offline, Online};
    if state.is_some_and(|s| (state::ASLEEP..=state::CONNECTED_SITE).contains(&s) && s % 10 == 0) {
        return Some(Offline);
    }
    match connectivity {
        Some(connectivity::FULL) => Some(Online),
        Some(connectivity::NONE..=connectivity::LIMITED) => Some(Offline),
        _ => (state == Some(state::CONNECTED_GLOBAL)).then_some(Online),
    }
}

/// Follows NetworkManager on `bus` until the connection closes (`Ok`).
pub async fn follow(bus: &zbus::Connection, sink: Sink) -> zbus::Result<()> {
    let mut states = signals(bus, &STATE_CHANGED, None).await?;
    let mut changes = signals(bus, &PROPERTIES_CHANGED, Some(NETWORK_MANAGER)).await?;
    let mut wakes = (sink.subscribe)();
    let mut state = read(bus, "State").await;
    let mut connectivity = read(bus, "Connectivity").await;
    loop {
        if let Some(event) = judge(state, connectivity) {
            (sink.tell)(event);
        }
        loop {
            tokio::select! {
                signal = states.next() => {
                    let Some(Ok(signal)) = signal else { return Ok(()) };
                    if let Ok(told) = signal.body().deserialize::<u32>() {
                        state = Some(told);
                        break;
                    }
                }
                signal = changes.next() => {
                    let Some(Ok(signal)) = signal else { return Ok(()) };
                    let body = signal.body();
                    let Ok((_, changed, invalidated)) =
                        body.deserialize::<(&str, HashMap<&str, Value<'_>>, Vec<&str>)>()
                    else {
                        continue;
                    };
                    // A property sent is read from the signal; one invalidated, asked for.
                    let again = |name: &str, slot: &mut Option<u32>| match changed.get(name) {
                        Some(value) => {
                            *slot = number(value);
                            false
                        }
                        None => invalidated.contains(&name),
                    };
                    let before = (state, connectivity);
                    if again("State", &mut state) {
                        state = read(bus, "State").await;
                    }
                    if again("Connectivity", &mut connectivity) {
                        connectivity = read(bus, "Connectivity").await;
                    }
                    if (state, connectivity) != before {
                        break;
                    }
                }
                // A wake takes the network for back: NetworkManager still saying otherwise
                // is told again.
                woke = next_wake(&mut wakes) => if woke {
                    break;
                },
            }
        }
    }
}

/// A property's value as NetworkManager sends it (`u`): anything else says nothing.
fn number(value: &Value<'_>) -> Option<u32> {
    match value {
        Value::U32(n) => Some(*n),
        _ => None,
    }
}

/// A property of NetworkManager's, asked for: `None` when it cannot be had or is not a `u`.
async fn read(bus: &zbus::Connection, name: &str) -> Option<u32> {
    let asked = async {
        let get = (NETWORK_MANAGER, PATH, PROPERTIES, "Get");
        let reply = call(bus, get, &(NETWORK_MANAGER, name)).await?;
        reply.body().deserialize::<OwnedValue>()
    };
    match tokio::time::timeout(CALL_BOUND, asked).await {
        Ok(Ok(value)) => number(&value),
        Ok(Err(e)) => {
            tracing::debug!("NetworkManager's {name}: {e}");
            None
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SystemEvent::{Offline, Online};

    #[test]
    fn state_and_connectivity_say_online_or_offline() {
        // (State, Connectivity, what is told); None is a property that could not be read.
        let table: &[(Option<u32>, Option<u32>, Option<SystemEvent>)] = &[
            (Some(70), Some(4), Some(Online)), // CONNECTED_GLOBAL, FULL
            (Some(70), Some(0), Some(Online)), // checking off: the state decides
            (Some(70), None, Some(Online)),
            (Some(70), Some(2), Some(Offline)), // a captive portal
            (Some(70), Some(3), Some(Offline)), // LIMITED
            (Some(60), Some(3), Some(Offline)), // CONNECTED_SITE
            (Some(50), Some(0), Some(Offline)), // CONNECTED_LOCAL
            (Some(40), Some(4), Some(Offline)), // CONNECTING, the last check stale
            (Some(30), Some(4), Some(Offline)), // DISCONNECTING
            (Some(20), Some(1), Some(Offline)), // DISCONNECTED, NONE
            (Some(10), Some(0), Some(Offline)), // ASLEEP
            (Some(0), Some(0), None),           // UNKNOWN, UNKNOWN
            (Some(0), Some(4), Some(Online)),   // UNKNOWN state, FULL
            (Some(0), Some(1), Some(Offline)),
            (None, None, None),
            (Some(45), Some(0), None), // not an NMState: nothing
            (Some(80), Some(9), None),
            (Some(70), Some(9), Some(Online)), // not a connectivity: the state decides
        ];
        for (i, &(state, connectivity, want)) in table.iter().enumerate() {
            assert_eq!(
                judge(state, connectivity),
                want,
                "row {i}: State {state:?}, Connectivity {connectivity:?}"
            );
        }
    }

    #[test]
    fn a_property_of_another_type_says_nothing() {
        assert_eq!(number(&Value::U32(70)), Some(70));
        assert_eq!(number(&Value::I32(70)), None);
        assert_eq!(number(&Value::from("70")), None);
    }
}
