//! NetworkManager on the system bus (`org.freedesktop.NetworkManager`): its `State` and
//! `Connectivity` properties, read when it is found and again from `StateChanged` and
//! `PropertiesChanged`, judged by `judge` into online or offline for remote servers. Every
//! reading is told (the watch keeps one picture), the first one too.

use super::super::{Sink, SystemEvent};
use super::{CALL_BOUND, NETWORK_MANAGER, next_wake};
use futures_util::StreamExt;
use zbus::proxy::CacheProperties;
use zbus::zvariant::Value;

const PATH: &str = "/org/freedesktop/NetworkManager";

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
    let manager: zbus::Proxy<'_> = zbus::proxy::Builder::new(bus)
        .destination(NETWORK_MANAGER)?
        .path(PATH)?
        .interface(NETWORK_MANAGER)?
        .cache_properties(CacheProperties::No)
        .build()
        .await?;
    let properties = zbus::fdo::PropertiesProxy::builder(bus)
        .destination(NETWORK_MANAGER)?
        .path(PATH)?
        .cache_properties(CacheProperties::No)
        .build()
        .await?;
    let mut states = manager.receive_signal("StateChanged").await?;
    let mut changes = properties
        .receive_properties_changed_with_args(&[(0, NETWORK_MANAGER)])
        .await?;
    let mut wakes = (sink.subscribe)();
    let mut state = read(&manager, "State").await;
    let mut connectivity = read(&manager, "Connectivity").await;
    loop {
        if let Some(event) = judge(state, connectivity) {
            (sink.tell)(event);
        }
        loop {
            tokio::select! {
                signal = states.next() => {
                    let Some(signal) = signal else { return Ok(()) };
                    if let Ok(told) = signal.body().deserialize::<u32>() {
                        state = Some(told);
                        break;
                    }
                }
                signal = changes.next() => {
                    let Some(signal) = signal else { return Ok(()) };
                    let Ok(args) = signal.args() else { continue };
                    let read_again = |name: &str, slot: &mut Option<u32>| {
                        if let Some(value) = args.changed_properties().get(name) {
                            *slot = number(value);
                            return false;
                        }
                        args.invalidated_properties().contains(&name)
                    };
                    let before = (state, connectivity);
                    if read_again("State", &mut state) {
                        state = read(&manager, "State").await;
                    }
                    if read_again("Connectivity", &mut connectivity) {
                        connectivity = read(&manager, "Connectivity").await;
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

async fn read(manager: &zbus::Proxy<'_>, name: &str) -> Option<u32> {
    match tokio::time::timeout(CALL_BOUND, manager.get_property::<u32>(name)).await {
        Ok(Ok(n)) => Some(n),
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
