//! A minimal MCP host over stdio, no SDK: newline-delimited JSON-RPC written to a spawned
//! server's stdin and read from its stdout, one request at a time, on plain blocking pipes.
//! The aggregated endpoint's benchmark (bench/aggregate.py, issue 27) drives `lifeline
//! connect NAME` and `lifeline connect --all` with it, so that what is timed is the server's
//! side and the pipe, not an SDK's: a request's time runs from writing its line to having
//! read its answer's whole line, before the host parses it (the parse is timed apart,
//! `parse_p50_us`: for a list of 500 tools it is a host's own cost, not the server's).
//!
//! usage: bench-host --stdio 'COMMAND ARGS...' [--versus 'COMMAND ARGS...'] [--list]
//!        [--list-first] [--calls N] [--warmup N] [--tool NAME] [--versus-tool NAME]
//!        [--arguments JSON]
//!
//! `--list` times `tools/list` (and says how many tools it had) instead of `tools/call`;
//! `--list-first` lists the tools once before the calls, as hosts do. `--versus` drives a
//! second server beside the first, request by request in turn (calling `--versus-tool`,
//! default `--tool`), so that both see the same moment of a busy machine; its record is
//! the first's `versus`.
//! Prints one JSON record, the shape of lifeline_bench's, with microseconds to 0.1, and on
//! Linux `server_cpu_us_per_call`: the spawned process's own user+system CPU time (all its
//! threads, not its children) over the measured requests, per request, from /proc: what the
//! server spends, less bent by a busy machine than a round trip.

use lifeline_bench::{cpu_time, peak_rss_kb, percentile};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;

const USAGE: &str = "usage: bench-host --stdio 'COMMAND ARGS...' [--versus 'COMMAND ARGS...'] \
[--list] [--list-first] [--calls N] [--warmup N] [--tool NAME] [--versus-tool NAME] \
[--arguments JSON]";

/// How long the server may take to exit once its stdin is closed (the bridge stops its
/// supervisors, bounded by 15 s) before it is killed.
const EXIT_PATIENCE: Duration = Duration::from_secs(20);

struct Args {
    command: Vec<String>,
    versus: Option<Vec<String>>,
    versus_tool: Option<String>,
    list: bool,
    list_first: bool,
    calls: usize,
    warmup: usize,
    tool: String,
    arguments: Value,
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let words = |line: String| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let mut args = Args {
        command: Vec::new(),
        versus: None,
        versus_tool: None,
        list: false,
        list_first: false,
        calls: 1000,
        warmup: 50,
        tool: "echo".into(),
        arguments: json!({"text": "hello"}),
    };
    while let Some(flag) = argv.next() {
        let mut value = || {
            argv.next()
                .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag} must be a whole number, not `{v}`"))
        };
        match flag.as_str() {
            "--stdio" => args.command = words(value()?),
            "--versus" => args.versus = Some(words(value()?)).filter(|w| !w.is_empty()),
            "--versus-tool" => args.versus_tool = Some(value()?),
            "--list" => args.list = true,
            "--list-first" => args.list_first = true,
            "--calls" => args.calls = number(value()?)?.max(1),
            "--warmup" => args.warmup = number(value()?)?,
            "--tool" => args.tool = value()?,
            "--arguments" => {
                args.arguments = serde_json::from_str(&value()?)
                    .map_err(|e| format!("--arguments must be JSON ({e})"))?;
            }
            other => return Err(format!("unknown option `{other}`; {USAGE}")),
        }
    }
    if args.command.is_empty() {
        return Err(format!("say which server to spawn; {USAGE}"));
    }
    Ok(args)
}

/// One answered request: when its whole line was read, the line, and its parse.
struct Answered {
    at: Instant,
    bytes: usize,
    parse: Duration,
    message: Value,
}

struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Host {
    fn spawn(command: &[String]) -> Result<Host, String> {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", command[0]))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped"));
        Ok(Host {
            child,
            stdin,
            stdout,
            next_id: 0,
            line: String::with_capacity(1 << 20),
        })
    }

    fn write(&mut self, message: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().expect("stdin open until the end");
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("the server closed its stdin: {e}"))
    }

    /// Sends a request and reads until its answer; lines that are not it (notifications)
    /// are read past. A request from the server is answered with an error: this host has
    /// nothing to offer (the fixture asks only when told to).
    fn request(&mut self, method: &str, params: Value) -> Result<Answered, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .map_err(|e| format!("reading the server's stdout: {e}"))?;
            let at = Instant::now();
            if n == 0 {
                return Err(format!("the server closed its stdout during {method}"));
            }
            let message: Value = serde_json::from_str(&self.line)
                .map_err(|e| format!("the server wrote a line that is not JSON: {e}"))?;
            let parse = at.elapsed();
            if message.get("method").is_some() {
                if let Some(asked) = message.get("id").cloned() {
                    self.write(&json!({"jsonrpc": "2.0", "id": asked, "error":
                        {"code": -32601, "message": "the benchmark host answers nothing"}}))?;
                }
                continue;
            }
            if message.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(format!("{method} failed: {error}"));
            }
            return Ok(Answered {
                at,
                bytes: n,
                parse,
                message,
            });
        }
    }

    fn initialize(&mut self) -> Result<(), String> {
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "bench-host", "version": "1"}});
        self.request("initialize", params)?;
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    /// Closes the server's stdin and waits for it to exit (killed past the patience), so
    /// that the next run does not start beside this one's processes still stopping.
    fn close(mut self) {
        drop(self.stdin.take());
        drop(self.stdout);
        let mut child = self.child;
        let pid = child.id();
        let (done, exited) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(child.wait()));
        if exited.recv_timeout(EXIT_PATIENCE).is_err() && kill(pid) {
            let _ = exited.recv();
        }
    }
}

/// Kills a child that is not reaped yet (its waiting thread has not returned), so `pid` is
/// still it; whether it was killed.
#[cfg(unix)]
fn kill(pid: u32) -> bool {
    // SAFETY: kill(2) with a pid and a signal number; no memory is involved.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) == 0 }
}

/// Elsewhere the server is left to end on its closed stdin.
#[cfg(not(unix))]
fn kill(_pid: u32) -> bool {
    false
}

/// User + system CPU time of process `pid`, all its threads (not its children): fields 14
/// and 15 of /proc/PID/stat, in clock ticks. `None` where there is no /proc.
#[cfg(unix)]
fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a configuration value; no memory is involved.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / hz.max(1)))
}

#[cfg(not(unix))]
fn process_cpu(_pid: u32) -> Option<Duration> {
    None
}

/// What one timed request checks and reports: the tools listed, or nothing.
fn check(args: &Args, answered: &Answered) -> Result<Option<usize>, String> {
    let result = &answered.message["result"];
    if args.list {
        let tools = result["tools"]
            .as_array()
            .ok_or("tools/list answered no `tools` array")?;
        return Ok(Some(tools.len()));
    }
    if result["isError"] == json!(true) {
        return Err(format!("the tool failed: {}", result["content"]));
    }
    Ok(None)
}

fn micros(d: Duration) -> f64 {
    (d.as_nanos() as f64 / 100.0).round() / 10.0
}

/// One server the host drives, and what was measured on it.
struct Driven {
    host: Host,
    params: Value,
    latencies: Vec<Duration>,
    parses: Vec<Duration>,
    bytes: usize,
    tools: Option<usize>,
    server_cpu: Option<Duration>,
}

impl Driven {
    fn start(args: &Args, command: &[String], tool: &str) -> Result<Driven, String> {
        let mut host = Host::spawn(command)?;
        host.initialize()?;
        if args.list_first {
            host.request("tools/list", json!({}))?;
        }
        let params = if args.list {
            json!({})
        } else {
            json!({"name": tool, "arguments": args.arguments})
        };
        Ok(Driven {
            host,
            params,
            latencies: Vec::with_capacity(args.calls),
            parses: Vec::with_capacity(args.calls),
            bytes: 0,
            tools: None,
            server_cpu: None,
        })
    }

    /// One request; timed unless it is a warm-up.
    fn request(&mut self, args: &Args, method: &str, timed: bool) -> Result<(), String> {
        let sent = Instant::now();
        let answered = self.host.request(method, self.params.clone())?;
        self.tools = check(args, &answered)?;
        if timed {
            self.latencies.push(answered.at - sent);
            self.parses.push(answered.parse);
            self.bytes = answered.bytes;
        }
        Ok(())
    }

    fn record(mut self, method: &str, wall: Duration, host_cpu: Duration, all: usize) -> Value {
        self.latencies.sort_unstable();
        self.parses.sort_unstable();
        let n = self.latencies.len();
        let mut record = json!({
            "client": "host",
            "transport": "stdio",
            "method": method,
            "concurrency": 1,
            "calls": n,
            "p50_us": micros(percentile(&self.latencies, 50)),
            "p99_us": micros(percentile(&self.latencies, 99)),
            "calls_per_s": (all as f64 / wall.as_secs_f64() * 10.0).round() / 10.0,
            "cpu_ms_per_10k": (host_cpu.as_secs_f64() * 1e7 / all as f64 * 10.0).round() / 10.0,
            "peak_rss_kb": peak_rss_kb(),
            "answer_bytes": self.bytes,
            "parse_p50_us": micros(percentile(&self.parses, 50)),
        });
        if let Some(tools) = self.tools {
            record["tools"] = json!(tools);
        }
        if let Some(cpu) = self.server_cpu {
            record["server_cpu_us_per_call"] = json!(micros(cpu / n.max(1) as u32));
        }
        self.host.close();
        record
    }
}

fn run(args: &Args) -> Result<Value, String> {
    let method = if args.list {
        "tools/list"
    } else {
        "tools/call"
    };
    let mut driven = vec![Driven::start(args, &args.command, &args.tool)?];
    if let Some(versus) = &args.versus {
        let tool = args.versus_tool.as_deref().unwrap_or(&args.tool);
        driven.push(Driven::start(args, versus, tool)?);
    }
    for _ in 0..args.warmup {
        for d in &mut driven {
            d.request(args, method, false)?;
        }
    }
    let before: Vec<_> = driven
        .iter()
        .map(|d| process_cpu(d.host.child.id()))
        .collect();
    let cpu_before = cpu_time();
    let started = Instant::now();
    let count = driven.len();
    for i in 0..args.calls {
        // Each server first in turn, so neither always follows the other.
        for k in 0..count {
            driven[(i + k) % count].request(args, method, true)?;
        }
    }
    let wall = started.elapsed();
    let host_cpu = cpu_time().saturating_sub(cpu_before);
    for (d, before) in driven.iter_mut().zip(before) {
        d.server_cpu = before
            .zip(process_cpu(d.host.child.id()))
            .map(|(before, after)| after.saturating_sub(before));
    }
    let all = args.calls * count;
    let mut records = driven
        .into_iter()
        .map(|d| d.record(method, wall, host_cpu, all));
    let mut record = records.next().expect("one server at least");
    if let Some(versus) = records.next() {
        record["versus"] = versus;
    }
    Ok(record)
}

fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(record) => println!("{record}"),
        Err(e) => {
            eprintln!("benchmark run failed: {e}");
            std::process::exit(1);
        }
    }
}
