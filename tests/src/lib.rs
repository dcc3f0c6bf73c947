//! lifeline-it: a scriptable fixture MCP server (`lifeline-fixture`) that integration tests use
//! to inject faults into the client under test, independent of lifeline-core.
//!
//! `script` says what goes wrong, `faults` decides which request it hits, `mcp` and `tools`
//! answer like a healthy server, and `stdio`/`http` (with `session`, `sse` and `resume`),
//! `legacy` (HTTP+SSE, 2024-11-05) and `stateless` (stateless 2026-07-28) put the answer — or the
//! fault — on the wire. `log` records what the client sent, for tests to
//! assert on. `system_bus` (Linux) is a private system bus with stand-ins for logind and
//! NetworkManager on it (`lifeline-system-bus`).

pub mod cli;
pub mod faults;
pub mod http;
pub mod legacy;
pub mod log;
pub mod mcp;
pub mod process;
pub mod resume;
pub mod script;
pub mod session;
pub mod sse;
pub mod stateless;
pub mod stdio;
#[cfg(target_os = "linux")]
pub mod system_bus;
pub mod tools;

use cli::{Args, Transport};

/// Runs the fixture until stdin closes (stdio), the process is killed, or a fault exits it.
pub async fn run(args: Args) -> std::io::Result<()> {
    let log = log::Log::open(args.log.as_deref())?;
    let mut script = args.script;
    if args.transport == Transport::Sse {
        // A legacy HTTP+SSE server speaks the revision of its day, whatever it is offered.
        script
            .protocol_version
            .get_or_insert_with(|| legacy::PROTOCOL_VERSION.to_owned());
    }
    let server = mcp::Server::new(script, log);
    match args.transport {
        Transport::Stdio => stdio::serve(server).await,
        Transport::Http => http::serve(server, args.port).await,
        Transport::Sse => legacy::serve(server, args.port).await,
        Transport::Stateless => stateless::serve(server, args.port).await,
    }
}
