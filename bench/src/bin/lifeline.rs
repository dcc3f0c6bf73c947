//! The lifeline-core benchmark driver: one supervised connection (what the app and the CLI
//! run), `tools/call` through `Supervisor::call`. Prints one JSON record (lifeline_bench).

use lifeline_bench::{Client, Run, Server, main_with};
use lifeline_core::Stage;
use lifeline_core::events::{EventBus, StateName};
use lifeline_core::supervisor::{Connector, Supervisor, SupervisorConfig};
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::transport::stdio::{self, StdioConfig};
use serde_json::Value;
use std::sync::Arc;

struct Lifeline(Supervisor);

impl Client for Lifeline {
    async fn call(&self, tool: &str, arguments: Value) -> Result<(), String> {
        self.0
            .call(tool, arguments)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

fn supervisor_config(run: &Run) -> SupervisorConfig {
    let (stage, connector): (Stage, Connector) = match &run.server {
        Server::Stdio { command, args } => {
            let config = StdioConfig::new(command.clone(), args.clone());
            (Stage::Spawn, Arc::new(move || stdio::spawn(&config)))
        }
        Server::Http { url } => {
            let config = HttpConfig::new(url.clone());
            (Stage::Connect, Arc::new(move || http::connect(&config)))
        }
    };
    let mut cfg = SupervisorConfig::new("bench", stage, connector);
    // The benchmark sets the concurrency; the supervisor's cap must not lower it.
    cfg.max_concurrent_calls = run.concurrency.max(cfg.max_concurrent_calls);
    cfg
}

/// Starts the supervisor and waits for its first verdict: ready, or the error that made it
/// retry (a supervisor retries forever; the benchmark wants the first failure).
async fn connect(run: Run) -> Result<Lifeline, String> {
    let supervisor = Supervisor::spawn(supervisor_config(&run), Arc::new(EventBus::new(1024)));
    let settled = supervisor
        .wait_for(|s| !matches!(s.state.state, None | Some(StateName::Connecting)))
        .await;
    if settled.state.state != Some(StateName::Ready) {
        let why = serde_json::to_string(&settled.state).unwrap_or_default();
        return Err(format!("could not connect: {why}"));
    }
    Ok(Lifeline(supervisor))
}

fn main() {
    main_with("lifeline", connect);
}
