//! What every Rust benchmark driver shares: the command line (the same one the Node and
//! Python drivers take), the measurement loop, and the one JSON line a run prints. Keeping
//! the loop here means lifeline-core and rmcp are timed by exactly the same code; only the
//! `Client` differs.

use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Where the server is: a command line to spawn (stdio) or a Streamable HTTP URL.
#[derive(Debug, Clone)]
pub enum Server {
    Stdio { command: String, args: Vec<String> },
    Http { url: String },
}

impl Server {
    pub fn transport(&self) -> &'static str {
        match self {
            Server::Stdio { .. } => "stdio",
            Server::Http { .. } => "http",
        }
    }
}

/// One run: connect, `warmup` unmeasured calls, then `calls` measured calls by
/// `concurrency` workers.
#[derive(Debug, Clone)]
pub struct Run {
    pub server: Server,
    pub concurrency: usize,
    pub calls: usize,
    pub warmup: usize,
    pub tool: String,
    pub arguments: Value,
    /// Fault-matrix mode: connect, make one call, report how it ended and when.
    pub once: bool,
}

const USAGE: &str = "usage: DRIVER (--stdio 'COMMAND ARGS...' | --http URL) [--concurrency N] \
[--calls N] [--warmup N] [--tool NAME] [--arguments JSON] [--once]";

impl Run {
    /// Parses the drivers' shared command line; the error says what was wrong.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Run, String> {
        let mut server = None;
        let mut run = Run {
            server: Server::Http { url: String::new() },
            concurrency: 1,
            calls: 1000,
            warmup: 50,
            tool: "echo".into(),
            arguments: json!({"text": "hello"}),
            once: false,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))
            };
            let number = |v: String| {
                v.parse::<usize>()
                    .map_err(|_| format!("{flag} must be a whole number, not `{v}`"))
            };
            match flag.as_str() {
                "--stdio" => {
                    let line = value()?;
                    let mut words = line.split_whitespace().map(str::to_owned);
                    let command = words
                        .next()
                        .ok_or_else(|| "--stdio needs a command line".to_owned())?;
                    server = Some(Server::Stdio {
                        command,
                        args: words.collect(),
                    });
                }
                "--http" => server = Some(Server::Http { url: value()? }),
                "--concurrency" => run.concurrency = number(value()?)?.max(1),
                "--calls" => run.calls = number(value()?)?.max(1),
                "--warmup" => run.warmup = number(value()?)?,
                "--tool" => run.tool = value()?,
                "--once" => run.once = true,
                "--arguments" => {
                    let v = value()?;
                    run.arguments = serde_json::from_str(&v)
                        .map_err(|e| format!("--arguments must be a JSON object ({e})"))?;
                }
                other => return Err(format!("unknown option `{other}`; {USAGE}")),
            }
        }
        run.server = server.ok_or_else(|| format!("say where the server is; {USAGE}"))?;
        Ok(run)
    }
}

/// A connected client: one `tools/call` per `call`, shareable between workers.
pub trait Client: Send + Sync + 'static {
    fn call(&self, tool: &str, arguments: Value)
    -> impl Future<Output = Result<(), String>> + Send;
}

/// The run's result, in the record shape of docs/benchmarks.json.
pub fn measure<C: Client>(
    client_name: &'static str,
    run: &Run,
    client: C,
) -> impl Future<Output = Result<Value, String>> {
    let run = run.clone();
    async move {
        let client = Arc::new(client);
        for _ in 0..run.warmup {
            client.call(&run.tool, run.arguments.clone()).await?;
        }
        let cpu_before = cpu_time();
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..run.concurrency {
            let (client, next, run) = (client.clone(), next.clone(), run.clone());
            workers.spawn(async move {
                let mut latencies = Vec::with_capacity(run.calls / run.concurrency + 1);
                while next.fetch_add(1, Ordering::Relaxed) < run.calls {
                    let t = Instant::now();
                    client.call(&run.tool, run.arguments.clone()).await?;
                    latencies.push(t.elapsed());
                }
                Ok::<_, String>(latencies)
            });
        }
        let mut latencies = Vec::with_capacity(run.calls);
        while let Some(done) = workers.join_next().await {
            latencies.extend(done.map_err(|e| format!("a worker panicked: {e}"))??);
        }
        let wall = started.elapsed();
        let cpu = cpu_time().saturating_sub(cpu_before);
        Ok(record(client_name, &run, &mut latencies, wall, cpu))
    }
}

fn record(
    client: &str,
    run: &Run,
    latencies: &mut [Duration],
    wall: Duration,
    cpu: Duration,
) -> Value {
    latencies.sort_unstable();
    let n = latencies.len();
    json!({
        "client": client,
        "transport": run.server.transport(),
        "concurrency": run.concurrency,
        "calls": n,
        "p50_us": percentile(latencies, 50) .as_micros() as u64,
        "p99_us": percentile(latencies, 99).as_micros() as u64,
        "calls_per_s": (n as f64 / wall.as_secs_f64() * 10.0).round() / 10.0,
        "cpu_ms_per_10k": (cpu.as_secs_f64() * 1000.0 * 10_000.0 / n as f64 * 10.0).round() / 10.0,
        "peak_rss_kb": peak_rss_kb(),
    })
}

/// Nearest-rank percentile of sorted samples (the same rule as the Node and Python drivers).
pub fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn rusage() -> libc::rusage {
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid rusage.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    }
}

/// User + system CPU time of this process (its children, e.g. a stdio server, excluded).
pub fn cpu_time() -> Duration {
    let u = rusage();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The process's peak resident set, in KiB: `VmHWM` of /proc/self/status. Not getrusage's
/// `ru_maxrss`, which Linux carries across exec: a driver started by the Python
/// orchestrator would report at least the orchestrator's own size.
pub fn peak_rss_kb() -> u64 {
    status_kb("VmHWM:")
}

/// Fault-matrix mode: how one connection and one call ended, and how long each took. The
/// orchestrator reads `outcome` (`ok` or `error`, with the error's text) and the seconds of
/// the step that failed or the call that succeeded; a hang is its timeout, not ours.
pub async fn once<C, Fut>(client_name: &'static str, run: &Run, connect: Fut) -> Value
where
    C: Client,
    Fut: Future<Output = Result<C, String>>,
{
    let started = Instant::now();
    let client = match connect.await {
        Ok(c) => c,
        Err(e) => {
            let s = started.elapsed().as_secs_f64();
            return json!({"client": client_name, "outcome": "error", "step": "connect",
                          "seconds": s, "error": e});
        }
    };
    let called = Instant::now();
    let result = client.call(&run.tool, run.arguments.clone()).await;
    let s = called.elapsed().as_secs_f64();
    match result {
        Ok(()) => json!({"client": client_name, "outcome": "ok", "step": "call", "seconds": s}),
        Err(e) => json!({"client": client_name, "outcome": "error", "step": "call",
                         "seconds": s, "error": e}),
    }
}

/// The process's current resident set, in KiB (`VmRSS` of /proc/self/status).
pub fn rss_kb() -> u64 {
    status_kb("VmRSS:")
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Runs a driver's `main`: parses, connects with `connect`, measures (or, with `--once`,
/// makes one call), prints the record or the error (exit 2 for bad usage, 1 for a failed
/// run). Exits without closing politely: the record is out, and stdio servers end on EOF.
pub fn main_with<C, F, Fut>(client_name: &'static str, connect: F)
where
    C: Client,
    F: FnOnce(Run) -> Fut,
    Fut: Future<Output = Result<C, String>>,
{
    let run = match Run::from_args(std::env::args().skip(1)) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(async {
        if run.once {
            return Ok(once(client_name, &run, connect(run.clone())).await);
        }
        let client = connect(run.clone()).await?;
        measure(client_name, &run, client).await
    });
    match outcome {
        Ok(record) => {
            println!("{record}");
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("benchmark run failed: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&samples, 50), Duration::from_micros(50));
        assert_eq!(percentile(&samples, 99), Duration::from_micros(99));
        assert_eq!(percentile(&samples[..1], 99), Duration::from_micros(1));
    }

    #[test]
    fn bad_command_lines_say_what_to_fix() {
        let parse = |a: &[&str]| Run::from_args(a.iter().map(|s| s.to_string()));
        assert!(parse(&[]).unwrap_err().contains("say where the server is"));
        assert!(
            parse(&["--http"])
                .unwrap_err()
                .contains("--http needs a value")
        );
        assert!(
            parse(&["--http", "u", "--calls", "x"])
                .unwrap_err()
                .contains("whole number")
        );
        let run = parse(&["--stdio", "fixture stdio", "--concurrency", "4"]).unwrap();
        assert_eq!(run.concurrency, 4);
        assert!(matches!(run.server, Server::Stdio { ref args, .. } if args == &["stdio"]));
    }
}
