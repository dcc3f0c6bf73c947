//! The scale benchmark (issue 6): many supervised connections in one process, as the app
//! would hold them. Prints one JSON object:
//!
//! - `http`: N supervisors to one `lifeline-fixture http` (each with its standalone GET
//!   stream open, `http.get: "sse"`); idle CPU (% of one core) and RSS per connection over
//!   `--idle-seconds`; then the fixture is killed and restarted on the same port, and we
//!   report the time from the kill until every supervisor is ready again, the attempts that
//!   reached the server (`initialize` requests in the fixture's log) and the most of them in
//!   any 100 ms window; and the event throughput into a subscriber meanwhile.
//! - `stdio`: M supervisors each with its own `lifeline-fixture stdio`; idle CPU and RSS.
//!
//! usage: bench-scale FIXTURE [--http N] [--stdio M] [--idle-seconds S] [--scratch DIR]

use lifeline_bench::{cpu_time, rss_kb};
use lifeline_core::Stage;
use lifeline_core::events::{EventBus, Generation, StateName};
use lifeline_core::supervisor::{Connector, Supervisor, SupervisorConfig};
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::transport::stdio::{self, StdioConfig};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long a phase may take before the benchmark reports it unfinished instead of waiting.
const PHASE_BOUND: Duration = Duration::from_secs(120);

struct Args {
    fixture: String,
    http: usize,
    stdio: usize,
    idle: Duration,
    scratch: PathBuf,
}

fn parse() -> Result<Args, String> {
    let mut argv = std::env::args().skip(1);
    let fixture = argv.next().ok_or(
        "usage: bench-scale FIXTURE [--http N] [--stdio M] [--idle-seconds S] [--scratch DIR]",
    )?;
    let mut args = Args {
        fixture,
        http: 1000,
        stdio: 100,
        idle: Duration::from_secs(10),
        scratch: std::env::temp_dir(),
    };
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag} must be a whole number, not `{value}`"))
        };
        match flag.as_str() {
            "--http" => args.http = number()? as usize,
            "--stdio" => args.stdio = number()? as usize,
            "--idle-seconds" => args.idle = Duration::from_secs(number()?),
            "--scratch" => args.scratch = PathBuf::from(&value),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(args)
}

/// Lets this process (and the fixture it spawns) hold thousands of sockets.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit read and write the struct they are given.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Starts `lifeline-fixture http` and returns it with the URL it printed.
async fn http_fixture(fixture: &str, port: u16, log: &Path) -> Result<(Child, String), String> {
    let mut child = Command::new(fixture)
        .args(["http", "--port", &port.to_string(), "--script"])
        .arg(r#"{"http":{"get":"sse"}}"#)
        .arg("--log")
        .arg(log)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {fixture}: {e}"))?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(url) = line.strip_prefix("LISTENING ") {
            let url = url.trim().to_owned();
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return Ok((child, url));
        }
    }
    Err(format!("{fixture} exited before listening"))
}

fn spawn_all(
    n: usize,
    bus: &Arc<EventBus>,
    make: impl Fn(usize) -> (Stage, Connector),
) -> Vec<Supervisor> {
    (0..n)
        .map(|i| {
            let (stage, connector) = make(i);
            let mut cfg = SupervisorConfig::new(format!("s{i}"), stage, connector);
            cfg.seed = i as u64 + 1;
            Supervisor::spawn(cfg, bus.clone())
        })
        .collect()
}

/// Waits until every supervisor satisfies `done`; false if `PHASE_BOUND` passed first.
async fn all(
    supervisors: &[Supervisor],
    done: impl Fn(&lifeline_core::supervisor::Snapshot) -> bool + Copy,
) -> bool {
    let waits = supervisors.iter().map(|s| s.wait_for(done));
    tokio::time::timeout(PHASE_BOUND, futures_join_all(waits))
        .await
        .is_ok()
}

async fn futures_join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) {
    for f in futures {
        f.await;
    }
}

fn ready(s: &lifeline_core::supervisor::Snapshot) -> bool {
    s.state.state == Some(StateName::Ready)
}

/// CPU (% of one core) and RSS growth over an idle window.
async fn idle(window: Duration) -> (f64, u64) {
    let cpu = cpu_time();
    tokio::time::sleep(window).await;
    let used = cpu_time().saturating_sub(cpu);
    (used.as_secs_f64() / window.as_secs_f64() * 100.0, rss_kb())
}

/// `initialize` requests in a fixture log: the total and the most in any 100 ms window.
fn attempts(log: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut times: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "received" && v["rpc_method"] == "initialize")
        .filter_map(|v| v["t_ms"].as_u64())
        .collect();
    times.sort_unstable();
    let mut peak = 0;
    let mut start = 0;
    for end in 0..times.len() {
        while times[end] - times[start] >= 100 {
            start += 1;
        }
        peak = peak.max(end - start + 1);
    }
    (times.len(), peak)
}

async fn http_phase(args: &Args) -> Result<Value, String> {
    let n = args.http;
    let log1 = args.scratch.join("scale-http-1.log");
    let log2 = args.scratch.join("scale-http-2.log");
    let _ = std::fs::remove_file(&log2);
    let (mut server, url) = http_fixture(&args.fixture, 0, &log1).await?;
    let port: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches("/mcp").parse().ok())
        .ok_or_else(|| format!("no port in {url}"))?;
    let bus = Arc::new(EventBus::new(1 << 16));
    let events = Arc::new(AtomicU64::new(0));
    let mut rx = bus.subscribe();
    let counter = events.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(_) => counter.fetch_add(1, Ordering::Relaxed),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(k)) => {
                    counter.fetch_add(k, Ordering::Relaxed)
                }
                Err(_) => break,
            };
        }
    });
    let rss0 = rss_kb();
    let started = Instant::now();
    let config = HttpConfig::new(url.clone());
    let supervisors = spawn_all(n, &bus, |_| {
        let config = config.clone();
        (Stage::Connect, Arc::new(move || http::connect(&config)))
    });
    let all_ready = all(&supervisors, ready).await;
    let connect_s = started.elapsed().as_secs_f64();
    let (idle_cpu, rss1) = idle(args.idle).await;

    let events_before = events.load(Ordering::Relaxed);
    let killed = Instant::now();
    server
        .kill()
        .await
        .map_err(|e| format!("cannot stop the fixture: {e}"))?;
    let (server2, _) = http_fixture(&args.fixture, port, &log2).await?;
    let back = all(&supervisors, |s| ready(s) && s.generation >= Generation(2)).await;
    let recovery_s = killed.elapsed().as_secs_f64();
    let storm_events = events.load(Ordering::Relaxed) - events_before;
    let (total, peak) = attempts(&log2);
    drop(server2);
    for s in supervisors {
        drop(s);
    }
    Ok(json!({
        "connections": n,
        "all_ready": all_ready,
        "connect_all_s": round(connect_s),
        "idle_cpu_pct_of_one_core": round(idle_cpu),
        "rss_per_connection_kb": (rss1.saturating_sub(rss0)) as f64 / n as f64,
        "rss_before_kb": rss0,
        "rss_after_kb": rss1,
        "restart": {
            "all_ready_again": back,
            "seconds_until_all_ready": round(recovery_s),
            "attempts_reaching_server": total,
            "peak_attempts_in_100ms": peak,
            "peak_share": if total > 0 { round(peak as f64 / total as f64) } else { 0.0 },
            "events": storm_events,
            "events_per_s": round(storm_events as f64 / recovery_s),
        },
    }))
}

async fn stdio_phase(args: &Args) -> Result<Value, String> {
    let m = args.stdio;
    let bus = Arc::new(EventBus::new(1 << 14));
    let rss0 = rss_kb();
    let started = Instant::now();
    let config = StdioConfig::new(args.fixture.clone(), vec!["stdio".into()]);
    let supervisors = spawn_all(m, &bus, |_| {
        let config = config.clone();
        (Stage::Spawn, Arc::new(move || stdio::spawn(&config)))
    });
    let all_ready = all(&supervisors, ready).await;
    let connect_s = started.elapsed().as_secs_f64();
    let (idle_cpu, rss1) = idle(args.idle).await;
    for s in supervisors {
        s.stop().await;
    }
    Ok(json!({
        "servers": m,
        "all_ready": all_ready,
        "connect_all_s": round(connect_s),
        "idle_cpu_pct_of_one_core": round(idle_cpu),
        "rss_per_connection_kb": (rss1.saturating_sub(rss0)) as f64 / m as f64,
        "rss_before_kb": rss0,
        "rss_after_kb": rss1,
    }))
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = runtime.block_on(async {
        // stdio first: RSS growth is measured against a process that has not yet held (and
        // kept in its allocator) the memory of 1,000 HTTP connections.
        let stdio = if args.stdio > 0 {
            Some(stdio_phase(&args).await?)
        } else {
            None
        };
        let http = if args.http > 0 {
            Some(http_phase(&args).await?)
        } else {
            None
        };
        Ok::<_, String>(json!({"http": http, "stdio": stdio}))
    });
    match result {
        Ok(v) => {
            println!("{v}");
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("scale benchmark failed: {e}");
            std::process::exit(1);
        }
    }
}
