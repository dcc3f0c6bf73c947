//! The Rust SDK (rmcp) benchmark driver: the same loop as bench-lifeline, with rmcp's client
//! (`().serve(transport)`, `Peer::call_tool`). Prints one JSON record (lifeline_bench).

use lifeline_bench::{Client, Run, Server, main_with};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;

struct Rmcp(Peer<RoleClient>);

impl Client for Rmcp {
    async fn call(&self, tool: &str, arguments: Value) -> Result<(), String> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = self.0.call_tool(params).await.map_err(|e| e.to_string())?;
        match result.is_error {
            Some(true) => Err(format!("the tool failed: {:?}", result.content)),
            _ => Ok(()),
        }
    }
}

async fn connect(run: Run) -> Result<Rmcp, String> {
    let service = match &run.server {
        Server::Stdio { command, args } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args);
            let transport = TokioChildProcess::new(cmd).map_err(|e| e.to_string())?;
            ().serve(transport).await.map_err(|e| e.to_string())?
        }
        Server::Http { url } => {
            // Lifeline's workspace builds reqwest with no TLS provider (it installs ring
            // itself); rmcp's default client needs one too, though the URL is plain http.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            ().serve(transport).await.map_err(|e| e.to_string())?
        }
    };
    // The running service is leaked on purpose: dropping it would cancel the connection,
    // and the process exits once the record is printed.
    let peer = service.peer().clone();
    std::mem::forget(service);
    Ok(Rmcp(peer))
}

fn main() {
    main_with("rust", connect);
}
