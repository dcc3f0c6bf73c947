//! Every configured server's supervisor on one event bus: what the CLI and the desktop app
//! run. Fleet-wide actions (reconnect all failed, stop all) live here.

use super::{Supervisor, SupervisorConfig};
use crate::config::Config;
use crate::error::Error;
use crate::events::{EventBus, StateName};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Fleet {
    bus: Arc<EventBus>,
    supervisors: Vec<Supervisor>,
}

impl Fleet {
    /// Starts a supervisor per server (disabled ones report `disabled`). Each gets its own
    /// jitter seed, so servers that fail together do not retry together. Subscribe to `bus`
    /// before calling this to see every event from `seq` 1.
    pub fn start(config: &Config, bus: Arc<EventBus>) -> Result<Fleet, Error> {
        let base = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let supervisors = config
            .servers
            .iter()
            .enumerate()
            .map(|(i, server)| {
                let seed = base ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let cfg = SupervisorConfig::from_server(server, seed)?;
                Ok(Supervisor::spawn(cfg, bus.clone()))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Fleet { bus, supervisors })
    }

    pub fn bus(&self) -> &Arc<EventBus> {
        &self.bus
    }

    pub fn supervisors(&self) -> &[Supervisor] {
        &self.supervisors
    }

    pub fn get(&self, name: &str) -> Option<&Supervisor> {
        self.supervisors.iter().find(|s| s.name() == name)
    }

    /// Reconnects every server that is quarantined, gave up or retired; returns their names.
    pub fn reconnect_all_failed(&self) -> Vec<String> {
        self.supervisors
            .iter()
            .filter(|s| {
                matches!(
                    s.snapshot().state.state,
                    Some(StateName::Quarantined | StateName::GaveUp | StateName::Retired)
                )
            })
            .map(|s| {
                s.reconnect();
                s.name().to_owned()
            })
            .collect()
    }

    /// Stops every supervisor at once (each bounded) and waits for all of them.
    pub async fn stop(self) {
        let stops: Vec<_> = self
            .supervisors
            .into_iter()
            .map(|s| tokio::spawn(s.stop()))
            .collect();
        for s in stops {
            let _ = s.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reconnect_all_failed_reaches_exactly_the_failed_servers() {
        let text = r#"{"mcpServers": {
            "gone": {"command": "/nonexistent/lifeline-test-command"},
            "off": {"command": "/nonexistent/other", "disabled": true}
        }}"#;
        let config = crate::config::parse(text, None, &|_| None).unwrap();
        let bus = Arc::new(EventBus::new(256));
        let fleet = Fleet::start(&config, bus).unwrap();
        let gone = fleet.get("gone").unwrap();
        gone.wait_for(|s| s.state.state == Some(StateName::Retired))
            .await;
        assert_eq!(
            fleet.get("off").unwrap().snapshot().state.state,
            Some(StateName::Disabled)
        );
        assert_eq!(fleet.reconnect_all_failed(), ["gone"]);
        gone.wait_for(|s| s.generation == 2 && s.state.state == Some(StateName::Retired))
            .await;
        fleet.stop().await;
    }
}
