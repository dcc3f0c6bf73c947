//! Every configured server's supervisor on one event bus: what the CLI and the desktop app
//! run. Fleet-wide actions (reconnect all failed, stop all) live here, and so does applying
//! a changed config to the running fleet: only the servers whose entry changed restart.

use super::{Supervisor, SupervisorConfig};
use crate::config::{Config, ConfigDiff, ServerConfig};
use crate::error::{Error, ErrorKind};
use crate::events::{EventBus, StateName};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
        let supervisors = configs(config.servers.iter())?
            .into_iter()
            .map(|cfg| Supervisor::spawn(cfg, bus.clone()))
            .collect();
        Ok(Fleet { bus, supervisors })
    }

    /// Starts a supervisor for `server` after the others. A name already in the fleet is an
    /// error (replace it instead), so two supervisors never share a name.
    pub fn add(&mut self, server: &ServerConfig) -> Result<(), Error> {
        if self.get(&server.name).is_some() {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "a server named `{}` is already running; replace it instead",
                    server.name
                ),
            ));
        }
        let cfg = configs([server].into_iter())?.remove(0);
        self.supervisors
            .push(Supervisor::spawn(cfg, self.bus.clone()));
        Ok(())
    }

    /// Stops the supervisor called `name` (bounded, as `stop`) and drops it from the fleet.
    /// Returns whether there was one.
    pub async fn remove(&mut self, name: &str) -> bool {
        let Some(i) = self.position(name) else {
            return false;
        };
        self.supervisors.remove(i).stop().await;
        true
    }

    /// Stops the supervisor of `server.name` and starts a new one from `server` in its
    /// place (the old one's process is gone before the new one's starts). The new one
    /// counts generations from 1 again. A name not in the fleet is added.
    pub async fn replace(&mut self, server: &ServerConfig) -> Result<(), Error> {
        let cfg = configs([server].into_iter())?.remove(0);
        let at = match self.position(&server.name) {
            Some(i) => {
                self.supervisors.remove(i).stop().await;
                i
            }
            None => self.supervisors.len(),
        };
        let supervisor = Supervisor::spawn(cfg, self.bus.clone());
        self.supervisors.insert(at, supervisor);
        Ok(())
    }

    /// Brings the fleet to `config`, which `diff` compared with the config it runs: removed
    /// and changed servers are stopped (all at once, each bounded), changed and added ones
    /// started, unchanged ones left alone; the order becomes `config`'s. Every new
    /// supervisor's settings are built first, so an error changes nothing.
    ///
    /// Returns the bus `seq` between the two: a changed server's events above it come from
    /// its new supervisor (whose generations count from 1 again), the ones up to it from the
    /// old one.
    pub async fn apply(&mut self, config: &Config, diff: &ConfigDiff) -> Result<u64, Error> {
        let starting = diff.changed.iter().chain(&diff.added);
        let servers: Vec<&ServerConfig> = starting.filter_map(|n| config.server(n)).collect();
        let cfgs = configs(servers.into_iter())?;
        let mut leaving: Vec<usize> = diff
            .removed
            .iter()
            .chain(&diff.changed)
            .filter_map(|name| self.position(name))
            .collect();
        // Highest index first, so each removal leaves the others' indices valid.
        leaving.sort_unstable_by(|a, b| b.cmp(a));
        let leaving: Vec<Supervisor> = leaving
            .into_iter()
            .map(|i| self.supervisors.remove(i))
            .collect();
        stop_all(leaving).await;
        let fence = self.bus.last_seq();
        for cfg in cfgs {
            self.supervisors
                .push(Supervisor::spawn(cfg, self.bus.clone()));
        }
        let rank = |s: &Supervisor| config.servers.iter().position(|c| c.name == s.name());
        self.supervisors.sort_by_key(rank);
        Ok(fence)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.supervisors.iter().position(|s| s.name() == name)
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
        stop_all(self.supervisors).await;
    }
}

/// Stops supervisors at once, each bounded, and waits for all of them.
async fn stop_all(supervisors: Vec<Supervisor>) {
    let stops: Vec<_> = supervisors
        .into_iter()
        .map(|s| tokio::spawn(s.stop()))
        .collect();
    for s in stops {
        let _ = s.await;
    }
}

/// Each server's supervisor settings, with its own jitter seed, so servers that fail
/// together do not retry together.
pub(crate) fn configs<'a>(
    servers: impl Iterator<Item = &'a ServerConfig>,
) -> Result<Vec<SupervisorConfig>, Error> {
    static N: AtomicU64 = AtomicU64::new(0);
    let base = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    servers
        .map(|server| {
            let n = N.fetch_add(1, Ordering::Relaxed);
            let seed = base ^ (n + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            SupervisorConfig::from_server(server, seed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Generation;

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
        gone.wait_for(|s| {
            s.generation == Generation(2) && s.state.state == Some(StateName::Retired)
        })
        .await;
        fleet.stop().await;
    }

    fn names(fleet: &Fleet) -> Vec<&str> {
        fleet.supervisors().iter().map(|s| s.name()).collect()
    }

    fn parse(text: &str) -> Config {
        crate::config::parse(text, None, &|_| None).unwrap()
    }

    #[tokio::test]
    async fn apply_restarts_only_what_changed_and_takes_the_new_order() {
        let old = parse(
            r#"{"mcpServers": {
            "keep": {"command": "/nonexistent/lifeline-keep"},
            "edit": {"command": "/nonexistent/lifeline-edit"},
            "drop": {"command": "/nonexistent/lifeline-drop"}
        }}"#,
        );
        let mut fleet = Fleet::start(&old, Arc::new(EventBus::new(256))).unwrap();
        let keep = fleet.get("keep").unwrap();
        keep.wait_for(|s| s.state.state == Some(StateName::Retired))
            .await;
        keep.reconnect();
        keep.wait_for(|s| {
            s.generation == Generation(2) && s.state.state == Some(StateName::Retired)
        })
        .await;

        let new = parse(
            r#"{"mcpServers": {
            "added": {"command": "/nonexistent/lifeline-added", "disabled": true},
            "keep": {"command": "/nonexistent/lifeline-keep"},
            "edit": {"command": "/nonexistent/lifeline-edit", "disabled": true}
        }}"#,
        );
        let diff = crate::config::diff(&old, &new);
        fleet.apply(&new, &diff).await.unwrap();
        assert_eq!(names(&fleet), ["added", "keep", "edit"]);
        // The unchanged supervisor is the same one: its generation survived.
        assert_eq!(
            fleet.get("keep").unwrap().snapshot().generation,
            Generation(2)
        );
        for name in ["added", "edit"] {
            fleet
                .get(name)
                .unwrap()
                .wait_for(|s| s.state.state == Some(StateName::Disabled))
                .await;
        }
        assert!(fleet.get("drop").is_none());
        fleet.stop().await;
    }

    #[tokio::test]
    async fn servers_are_added_replaced_and_removed_one_by_one() {
        let config = parse(
            r#"{"mcpServers": {
            "a": {"command": "/nonexistent/lifeline-a"},
            "b": {"command": "/nonexistent/lifeline-b", "disabled": true}
        }}"#,
        );
        let mut fleet =
            Fleet::start(&parse(r#"{"mcpServers": {}}"#), Arc::new(EventBus::new(64))).unwrap();
        fleet.add(config.server("a").unwrap()).unwrap();
        let e = fleet.add(config.server("a").unwrap()).unwrap_err();
        assert_eq!(
            e.message(),
            "a server named `a` is already running; replace it instead"
        );
        fleet.add(config.server("b").unwrap()).unwrap();
        let a = fleet.get("a").unwrap();
        a.wait_for(|s| s.state.state == Some(StateName::Retired))
            .await;

        let mut disabled_a = config.server("a").unwrap().clone();
        disabled_a.disabled = true;
        fleet.replace(&disabled_a).await.unwrap();
        assert_eq!(names(&fleet), ["a", "b"]);
        fleet
            .get("a")
            .unwrap()
            .wait_for(|s| s.state.state == Some(StateName::Disabled))
            .await;

        assert!(fleet.remove("a").await);
        assert!(!fleet.remove("a").await);
        assert_eq!(names(&fleet), ["b"]);
        fleet.stop().await;
    }
}
