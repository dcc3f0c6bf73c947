//! `lifeline-fixture`: the fault-injecting MCP server for Lifeline's integration tests.
//! Everything lives in the `lifeline_it` library; this only parses arguments and runs it.

use lifeline_it::cli::{Args, SCRIPT_ENV, USAGE};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some(lifeline_it::process::SLEEP_ARG) {
        let seconds = argv.next().and_then(|s| s.parse().ok()).unwrap_or(60);
        tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
        return Ok(());
    }
    let args = match Args::parse(std::env::args().skip(1), std::env::var(SCRIPT_ENV).ok()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("lifeline-fixture: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    lifeline_it::run(args).await?;
    Ok(())
}
