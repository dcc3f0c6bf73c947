#!/usr/bin/env python3
"""The benchmark orchestrator (docs/benchmarks.md says what it measures and why).

Runs every client driver against every server, transport and concurrency, alternating the
clients (A B C D, A B C D, ...) so that a drift in the machine's load hits them alike, takes
the median of the runs per metric, and writes the JSON record and the Markdown report with
SVG charts. Standard library only; the drivers are separate processes so that each client's
CPU time and peak RSS are its own.

    bench/run.py                 the full run: docs/benchmarks.json, docs/benchmarks.md
    bench/run.py --smoke         seconds long, into target/bench-smoke/ (keeps the harness working)
    bench/run.py --only app      one section (call_path, gateway, serve, faults, scale, app,
                                 search, aggregate, wake); the others are kept
    bench/run.py --only serve    `lifeline serve` on a kept-alive connection against a fresh one
                                 and the server direct (needs only release lifeline and
                                 lifeline-fixture: cargo build --release -p lifeline-cli -p
                                 lifeline-it)
"""

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import aggregate as aggregate_section
import app as app_section
import report
import search as search_section
import serve as serve_section
import wake as wake_section

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["p50_us", "p99_us", "calls_per_s", "cpu_ms_per_10k", "peak_rss_kb"]
CLIENTS = ["lifeline", "typescript", "python", "rust"]
# Windows' executables end in .exe (CI runs the smoke run there too: docs/ci.md).
EXE = ".exe" if os.name == "nt" else ""


def env_paths():
    """The LIFELINE_* paths of scripts/env.sh (the one place that says where tools live)."""
    out = subprocess.run(
        ["bash", "-c", f". {shlex.quote(str(ROOT / 'scripts/env.sh'))} && env"],
        capture_output=True, text=True, check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if line.startswith("LIFELINE_"))


def require(path, what):
    if not Path(path).exists():
        sys.exit(f"bench: {what} not found at {path}; run `make bench` (it builds and installs "
                 "everything), or scripts/setup.sh and `cargo build --release "
                 "--manifest-path bench/Cargo.toml`")
    return str(path)


class Tools:
    def __init__(self, build="release"):
        env = env_paths()
        # `build` is where the bench binaries and the app come from: release for the numbers,
        # debug for the smoke run that CI makes (keeps the harness working, measures nothing).
        built = ROOT / "target" / build
        fixture = ROOT / f"target/release/lifeline-fixture{EXE}"
        if build == "debug" or not fixture.exists():
            fixture = ROOT / f"target/debug/lifeline-fixture{EXE}"
        self.fixture = require(fixture, "lifeline-fixture")
        self.fixture_build = "release" if "release" in self.fixture else "debug"
        if os.name == "nt":
            # scripts/env.sh names Git Bash's path to the node on PATH, which Python cannot open.
            self.node = require(shutil.which("node") or "node.exe", "Node 22")
        else:
            self.node = require(Path(env["LIFELINE_NODE22_BIN"]) / "node", "Node 22")
        self.python = require(env["LIFELINE_PYTHON"], "the venv's Python")
        self.everything = require(env["LIFELINE_SERVER_EVERYTHING"], "server-everything")
        self.loopback = require(env["LIFELINE_LOOPBACK_PRELOAD"], "loopback.cjs")
        bench = ROOT / "bench"
        # Checked where a section uses them (`need`), so one section runs without the rest.
        self.drivers = {
            "lifeline": [str(built / f"bench-lifeline{EXE}")],
            "typescript": [self.node, str(bench / "drivers/typescript.cjs")],
            "python": [self.python, str(bench / "drivers/python.py")],
            "rust": [str(built / f"bench-rmcp{EXE}")],
        }
        self.scale = str(built / f"bench-scale{EXE}")
        self.search = str(built / f"bench-search{EXE}")
        self.host = str(built / f"bench-host{EXE}")
        self.lifeline = str(built / f"lifeline{EXE}")
        # logind and NetworkManager on a private system bus (the wake section; Linux).
        self.system_bus = str(built / f"lifeline-system-bus{EXE}")
        # The desktop app (make bench-build builds it in release); the app section says so
        # if it is missing.
        app = built / "lifeline-app"
        self.app = str(app) if app.exists() else None

    def need(self, clients):
        """Exits naming what is missing unless every driver of `clients` is built."""
        for client in clients:
            require(self.drivers[client][-1], f"the {client} driver")


class HttpServer:
    """A server process that prints `LISTENING URL`; its output is drained so it never blocks."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, **(env or {})},
        )
        self.url = None
        for line in self.proc.stdout:
            if line.startswith("LISTENING "):
                self.url = line.split()[1]
                break
        if self.url is None:
            raise RuntimeError(f"{argv[0]} exited before listening (exit {self.proc.wait()})")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stop(self):
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def servers(tools):
    """(name, tool, arguments, stdio command line, HTTP server argv, HTTP env) per server."""
    return [
        ("fixture", "echo", {"text": "hello"},
         f"{tools.fixture} stdio", [tools.fixture, "http"], {}),
        ("server-everything", "echo", {"message": "hello"},
         f"{tools.node} --require {tools.loopback} {tools.everything} stdio",
         [tools.node, "--require", tools.loopback, tools.everything, "streamableHttp"],
         {"PORT": "0"}),
    ]


def run_driver(argv, timeout):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout} s"
    if done.returncode != 0:
        lines = [l for l in done.stderr.splitlines() if l.strip()] or ["(no stderr)"]
        said = [l for l in lines if l.startswith("benchmark run failed")]
        return None, said[0] if said else " ".join(lines[:2])
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def call_path(tools, args, log):
    tools.need(args.clients)
    records, failures = [], []
    for name, tool, arguments, stdio_line, http_argv, http_env in servers(tools):
        for transport in args.transports:
            for concurrency in args.concurrency:
                try:
                    http = HttpServer(http_argv, http_env) if transport == "http" else None
                except RuntimeError as e:  # a peer that cannot start fails its cell, not the run
                    failures.append({"cell": f"{name} {transport} c={concurrency}", "error": str(e)})
                    log(f"  FAILED {name} {transport}: {e}")
                    continue
                where = ["--http", http.url] if http else ["--stdio", stdio_line]
                common = where + [
                    "--concurrency", str(concurrency), "--calls", str(args.calls),
                    "--warmup", str(args.warmup), "--tool", tool,
                    "--arguments", json.dumps(arguments),
                ]
                runs = {c: [] for c in args.clients}
                try:
                    for _ in range(args.runs):
                        for client in args.clients:  # alternated: A B C D, A B C D
                            record, error = run_driver(tools.drivers[client] + common, args.timeout)
                            cell = f"{client} {name} {transport} c={concurrency}"
                            if error:
                                failures.append({"cell": cell, "error": error})
                                log(f"  FAILED {cell}: {error}")
                            else:
                                runs[client].append(record)
                                log(f"  {cell}: p50 {record['p50_us']} us, "
                                    f"{record['calls_per_s']} calls/s")
                finally:
                    if http:
                        http.stop()
                for client, samples in runs.items():
                    if samples:
                        records.append(median_record(client, name, transport, concurrency, samples))
    return records, failures


def gateway(tools, args, scratch, log):
    """Direct against through `lifeline connect` (issue 14), with the TypeScript SDK client
    as the host: the same stdio server, spawned by the host directly or by `lifeline connect
    NAME --no-attach` (the bridge running that server's supervisor in its own process, the
    case with no app running and the heavier of the two). The two alternate, run by run;
    each figure is the median of the runs. Then the bridge's own cost (`bridge_cost`)."""
    tools.need(["typescript"])
    require(tools.lifeline, "the lifeline CLI")
    state = scratch / "gateway-state"
    state.mkdir(parents=True, exist_ok=True)
    config = scratch / "gateway.json"
    rows, failures, bridge = [], [], {}
    for name, tool, arguments, stdio_line, _, _ in servers(tools):
        if args.smoke and name != "fixture":
            continue
        command, *rest = stdio_line.split()
        config.write_text(json.dumps({"mcpServers": {name: {"command": command, "args": rest}}}))
        # The SDK hands a stdio server only HOME, PATH, SHELL, TERM, USER and LOGNAME, so
        # the bridge's environment is set on its command line: state in the scratch
        # directory, no login-shell PATH lookup (the fixture's path is absolute).
        through = (f"env LIFELINE_LOGIN_PATH=0 XDG_STATE_HOME={state} XDG_DATA_HOME={state} "
                   f"{tools.lifeline} connect {name} --config {config} --no-attach")
        for concurrency in args.gateway_concurrency:
            common = ["--concurrency", str(concurrency), "--calls", str(args.calls),
                      "--warmup", str(args.warmup), "--tool", tool,
                      "--arguments", json.dumps(arguments)]
            runs = {"direct": [], "through": []}
            for _ in range(args.runs):
                for path, line in [("direct", stdio_line), ("through", through)]:
                    record, error = run_driver(
                        tools.drivers["typescript"] + ["--stdio", line] + common, args.timeout)
                    cell = f"typescript {path} {name} stdio c={concurrency}"
                    if error:
                        failures.append({"cell": cell, "error": error})
                        log(f"  FAILED {cell}: {error}")
                    else:
                        runs[path].append(record)
                        log(f"  {cell}: p50 {record['p50_us']} us, p99 {record['p99_us']} us")
            if runs["direct"] and runs["through"]:
                med = {path: {m: statistics.median(r[m] for r in samples) for m in
                              ("p50_us", "p99_us", "calls_per_s")}
                       for path, samples in runs.items()}
                rows.append({
                    "server": name, "transport": "stdio", "concurrency": concurrency,
                    "host": "typescript", "runs": len(runs["through"]),
                    "direct": med["direct"], "through": med["through"],
                    "added_p50_us": round(med["through"]["p50_us"] - med["direct"]["p50_us"], 1),
                    "p99_ratio": round(med["through"]["p99_us"] / max(med["direct"]["p99_us"], 1),
                                       2),
                })
        if name == "fixture":
            try:
                bridge = bridge_cost(through.split(), 100 if args.smoke else 1000, tool, arguments)
                log(f"  bridge: {json.dumps(bridge)}")
            except (OSError, RuntimeError, ValueError) as e:
                failures.append({"cell": "gateway bridge", "error": str(e)})
                log(f"  FAILED gateway bridge: {e}")
    return {"cells": rows, "bridge": bridge}, failures


def bridge_cost(argv, calls, tool, arguments):
    """One `lifeline connect` driven by a minimal host (JSON-RPC lines on its stdin and
    stdout, one call at a time): its peak RSS (`VmHWM`) and CPU time over `calls` calls,
    read from /proc before its stdin closes. The server it supervises is a process of its
    own and is not counted."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def ask(id_, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                                     "params": params}) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == id_:
                if "error" in msg:
                    raise RuntimeError(f"{method} failed through the bridge: {msg['error']}")
                return msg["result"]
        raise RuntimeError(f"the bridge exited (status {proc.wait()}) during {method}")

    def cpu_ms():
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    try:
        ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench-bridge", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0",
                                     "method": "notifications/initialized"}) + "\n")
        before = cpu_ms()
        for i in range(calls):
            ask(i + 1, "tools/call", {"name": tool, "arguments": arguments})
        cpu = cpu_ms() - before
        status = Path(f"/proc/{proc.pid}/status").read_text()
        kb = lambda key: int(next(l for l in status.splitlines() if l.startswith(key)).split()[1])
        return {"calls": calls, "peak_rss_kb": kb("VmHWM:"), "rss_kb": kb("VmRSS:"),
                "cpu_ms_per_10k": round(cpu * 10000 / calls, 1)}
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# The fault matrix (issue 6): the same fault for every client, each against a fresh fixture.
# (name, transport, fixture script). The call is always `echo`; the first tools/call is hit.
FAULTS = [
    ("resume answered 404", "http",
     {"rules": [{"method": "tools/call", "nth": 1,
                 "action": {"kind": "sse_close", "resume": ["404"]}}]}),
    ("day-long retry:", "http",
     {"rules": [{"method": "tools/call", "nth": 1,
                 "action": {"kind": "sse_close", "retry": "86400000"}}]}),
    ("retry: 0", "http",
     {"rules": [{"method": "tools/call", "nth": 1,
                 "action": {"kind": "sse_close", "retry": "0"}}]}),
    ("429 with Retry-After: 2", "http",
     {"rules": [{"method": "tools/call", "nth": 1,
                 "action": {"kind": "http_status", "status": 429, "retry_after": "2"}}]}),
    ("stalled initialize", "http",
     {"rules": [{"method": "initialize", "action": {"kind": "never_answer"}}]}),
    ("stdio server crashes on a call", "stdio",
     {"rules": [{"method": "tools/call", "tool": "echo", "action": {"kind": "crash"}}]}),
]
SMOKE_FAULTS = {"429 with Retry-After: 2", "stdio server crashes on a call"}
RESTART = "server restart in the middle of a call"


def restart_mid_call(tools, client, args, scratch):
    """The fixture holds the first call (a 3 s delay); once the call has reached it (its
    log says so), it is killed and a healthy one starts on the same port. Seconds count
    from the kill."""
    script = scratch / "fault-restart.json"
    script.write_text(json.dumps({"rules": [{"method": "tools/call", "nth": 1,
                                             "action": {"kind": "delay", "ms": 3000}}]}))
    log_path = scratch / "fault-restart.log"
    log_path.unlink(missing_ok=True)
    first = HttpServer([tools.fixture, "http", "--script", f"@{script}", "--log", str(log_path)])
    port = first.url.rsplit(":", 1)[1].split("/")[0]
    driver = subprocess.Popen(tools.drivers[client] + ["--http", first.url, "--once"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        deadline = time.monotonic() + args.hang_bound
        # Wait for the real condition: the call is in the server (polling its log file).
        while '"tools/call"' not in log_path.read_text() and driver.poll() is None:
            if time.monotonic() > deadline:
                return {"outcome": "hung", "seconds": args.hang_bound,
                        "error": "the call never reached the server"}
            time.sleep(0.01)
        first.stop()
        fault = time.monotonic()
        second = HttpServer([tools.fixture, "http", "--port", port])
        try:
            out, err = driver.communicate(timeout=args.hang_bound)
        except subprocess.TimeoutExpired:
            return {"outcome": "hung", "seconds": args.hang_bound}
        seconds = round(time.monotonic() - fault, 2)
        lines = out.strip().splitlines()
        if driver.returncode != 0 or not lines:
            return {"outcome": "error", "seconds": seconds,
                    "error": f"the driver failed: {err.strip()[-300:]}"}
        record = json.loads(lines[-1])
        row = {"outcome": "recovered" if record["outcome"] == "ok" else "error",
               "seconds": seconds}
        if record.get("error"):
            row["error"] = record["error"][:300]
        return row
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        first.stop()
        if second:
            second.stop()


def fault_matrix(tools, args, scratch, log):
    """`{client, scenario, outcome, seconds}`: `recovered` (the call succeeded), `error` (it
    failed with an error, in `error`), or `hung` (nothing within the bound)."""
    tools.need(args.clients)
    records = []
    for n, (scenario, transport, script) in enumerate(FAULTS):
        if args.smoke and scenario not in SMOKE_FAULTS:
            continue
        script_file = scratch / f"fault-{n}.json"
        script_file.write_text(json.dumps(script))
        script_arg = f"@{script_file}"
        for client in args.clients:
            http = HttpServer([tools.fixture, "http", "--script", script_arg]) \
                if transport == "http" else None
            where = ["--http", http.url] if http else \
                ["--stdio", f"{tools.fixture} stdio --script {script_arg}"]
            argv = tools.drivers[client] + where + ["--once"]
            t = time.monotonic()
            try:
                record, error = run_driver(argv, args.hang_bound)
            finally:
                if http:
                    http.stop()
            wall = round(time.monotonic() - t, 2)
            if record is None and error.startswith("no answer within"):
                row = {"outcome": "hung", "seconds": args.hang_bound}
            elif record is None:
                row = {"outcome": "error", "seconds": wall, "error": f"the driver failed: {error}"}
            else:
                seconds = record.get("seconds")
                row = {"outcome": "recovered" if record["outcome"] == "ok" else "error",
                       "seconds": round(seconds, 2) if seconds is not None else wall}
                if record.get("error"):
                    row["error"] = record["error"][:300]
                    row["step"] = record.get("step")
            records.append({"client": client, "scenario": scenario, **row})
            log(f"  {client} / {scenario}: {row['outcome']} in {row['seconds']} s")
    if not args.smoke:
        for client in args.clients:
            row = restart_mid_call(tools, client, args, scratch)
            records.append({"client": client, "scenario": RESTART, **row})
            log(f"  {client} / {RESTART}: {row['outcome']} in {row['seconds']} s")
    return records


def scale(tools, args, scratch, log):
    """bench-scale: many supervised connections in one lifeline-core process."""
    # The idle window is longer than the 30 s ping interval, so health pings are in it.
    require(tools.scale, "bench-scale")
    n_http, n_stdio, idle = (20, 5, 1) if args.smoke else (1000, 100, 40)
    argv = [tools.scale, tools.fixture, "--http", str(n_http), "--stdio", str(n_stdio),
            "--idle-seconds", str(idle), "--scratch", str(scratch)]
    record, error = run_driver(argv, 600)
    if error:
        log(f"  FAILED scale: {error}")
        return {"error": error}
    log(f"  scale: {json.dumps(record)}")
    return {"idle_seconds": idle, **record}


def median_record(client, server, transport, concurrency, samples):
    record = {"client": client, "server": server, "transport": transport,
              "concurrency": concurrency, "runs": len(samples),
              "calls": samples[0]["calls"]}
    for m in METRICS:
        value = statistics.median(s[m] for s in samples)
        record[m] = round(value, 1) if isinstance(value, float) else value
    return record


def ratios(records):
    """Lifeline against the best peer, per server x transport x concurrency (>1 = better)."""
    out = []
    cells = {(r["server"], r["transport"], r["concurrency"]) for r in records}
    for cell in sorted(cells):
        here = [r for r in records if (r["server"], r["transport"], r["concurrency"]) == cell]
        mine = next((r for r in here if r["client"] == "lifeline"), None)
        peers = [r for r in here if r["client"] != "lifeline"]
        if not mine or not peers:
            continue
        best_p50 = min(peers, key=lambda r: r["p50_us"])
        best_tput = max(peers, key=lambda r: r["calls_per_s"])
        out.append({
            "server": cell[0], "transport": cell[1], "concurrency": cell[2],
            "best_peer_p50": best_p50["client"],
            "p50_speedup": round(best_p50["p50_us"] / max(mine["p50_us"], 1), 2),
            "best_peer_throughput": best_tput["client"],
            "throughput_ratio": round(mine["calls_per_s"] / best_tput["calls_per_s"], 2),
        })
    return out


def carried_groups(record):
    """A record's `carried_over` as a list of {sections, from, machine}: older records hold
    one such dict, newer ones a list (sections carried from runs of different days)."""
    carried = record.get("carried_over") or []
    return [carried] if isinstance(carried, dict) else carried


def keep_sections(result, path, sections):
    """With --only, the sections not rerun keep their previous results (and say when)."""
    if not path.exists():
        return
    previous = json.loads(path.read_text())
    carried = []
    for section, keys in [("call_path", ["call_path", "ratios"]), ("gateway", ["gateway"]),
                          ("serve", ["serve"]),
                          ("faults", ["fault_matrix"]),
                          ("scale", ["scale"]), ("app", ["app"]), ("search", ["search"]),
                          ("aggregate", ["aggregate"]), ("wake", ["wake"])]:
        if section not in sections and previous.get(keys[0]):
            for k in keys:
                result[k] = previous.get(k)
            carried.append(section)
    # The profiles (call path, the aggregate's list) are written by hand (perf): keep them.
    for key in ("profile", "aggregate_profile"):
        if previous.get(key):
            result[key] = previous[key]
    if carried:
        # A section the previous record itself carried over keeps the run it came from; the
        # others come from the previous run. One group per run, oldest first.
        groups = {}
        for section in carried:
            origin = next((g for g in carried_groups(previous) if section in g["sections"]),
                          {"from": previous.get("generated_at"),
                           "machine": previous.get("machine")})
            group = groups.setdefault(origin["from"], {"sections": [], "from": origin["from"],
                                                       "machine": origin["machine"]})
            group["sections"].append(section)
        result["carried_over"] = sorted(groups.values(), key=lambda g: g["from"] or "")
        old = previous.get("method", {})
        owned = {"call_path": ["runs", "calls", "warmup", "order", "fixture_build"],
                 "faults": ["hang_bound_s"]}
        for section in carried:
            for k in owned.get(section, []):
                if k in old:
                    result["method"][k] = old[k]


def machine():
    with open("/proc/loadavg") as f:
        load = [float(x) for x in f.read().split()[:3]]
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "loadavg": load}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="seconds long; writes target/bench-smoke/")
    p.add_argument("--build", choices=["release", "debug"], default="release",
                   help="where the bench binaries and the app come from (debug: CI's smoke run)")
    p.add_argument("--runs", type=int, default=5, help="runs per client and cell (median)")
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--timeout", type=int, default=300, help="seconds one driver run may take")
    p.add_argument("--hang-bound", type=int, default=90,
                   help="fault matrix: seconds after which a client counts as hung")
    p.add_argument("--out", help="directory for benchmarks.json/.md (default docs/)")
    p.add_argument("--only",
                   default="call_path,gateway,serve,faults,scale,app,search,aggregate,wake",
                   help="sections to run")
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument("--note", default="", help="said in the report, e.g. that the machine was busy")
    args = p.parse_args()
    if args.build == "debug" and not args.smoke:
        p.error("--build debug is for --smoke only: numbers from a debug build mean nothing")
    args.clients = args.clients.split(",")
    args.transports = ["stdio", "http"]
    args.concurrency = [1, 4]
    args.gateway_concurrency = [1, 4]
    if args.smoke:
        args.runs, args.calls, args.warmup, args.timeout, args.hang_bound = 1, 100, 5, 60, 15
        args.concurrency = [4]
        args.gateway_concurrency = [1]
        out_dir = ROOT / "target/bench-smoke"
    else:
        out_dir = ROOT / "docs"
    if args.out:
        out_dir = Path(args.out).resolve()
    unknown = set(args.clients) - set(CLIENTS)
    if unknown:
        sys.exit(f"bench: unknown client(s) {sorted(unknown)}; choose from {CLIENTS}")

    tools = Tools(args.build)
    log = lambda s: print(s, file=sys.stderr, flush=True)
    started = time.time()
    before = machine()
    sections = args.only.split(",")
    records, failures = [], []
    if "call_path" in sections:
        log(f"bench: call path ({args.runs} runs x {args.calls} calls, "
            f"fixture {tools.fixture_build})")
        records, failures = call_path(tools, args, log)
    scratch = ROOT / "target/bench-scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    gateway_result = {}
    if "gateway" in sections:
        log("bench: gateway (the TypeScript SDK client, direct and through `lifeline connect`)")
        gateway_result, gateway_failures = gateway(tools, args, scratch, log)
        failures += gateway_failures
    serve_result = {}
    if "serve" in sections:
        log("bench: serve (one kept-alive connection against a fresh one per call, and direct)")
        require(tools.lifeline, "the lifeline CLI")
        try:
            serve_result = serve_section.serve(tools, args, scratch, HttpServer, log)
            log(f"  serve: a kept-alive call adds {serve_result['added_p50_us']} us p50")
        except (OSError, RuntimeError, ValueError) as e:
            failures.append({"cell": "serve", "error": str(e)})
            log(f"  FAILED serve: {e}")
    faults = []
    if "faults" in sections:
        log(f"bench: fault matrix (hung past {args.hang_bound} s)")
        faults = fault_matrix(tools, args, scratch, log)
    scale_result = {}
    if "scale" in sections:
        log("bench: scale")
        scale_result = scale(tools, args, scratch, log)
        if "error" in scale_result:
            failures.append({"cell": "scale", "error": scale_result["error"]})
    search_result = {}
    if "search" in sections:
        log("bench: search mode (the ranking over 1,000 tools; the first tool list's tokens)")
        search_result, search_failures = search_section.search(tools, args, ROOT, run_driver,
                                                               log)
        failures += search_failures
    aggregate_result = {}
    if "aggregate" in sections:
        log("bench: aggregate (connect --all over 20 servers x 25 tools against connect NAME)")
        aggregate_result, aggregate_failures = aggregate_section.aggregate(tools, args,
                                                                           run_driver, log)
        failures += aggregate_failures
    wake_result = {}
    if "wake" in sections:
        log("bench: wake (HTTP servers whose connections died in a sleep, back at each wake)")
        wake_result, wake_failures = wake_section.wake(tools, args, log)
        failures += wake_failures
    app_result = {}
    if "app" in sections and sys.platform != "linux":
        # Xvfb, a private D-Bus session bus and /proc (bench/app.py) are Linux's.
        log(f"bench: app SKIPPED on {platform.system()}: it runs the app under Xvfb with a "
            "private D-Bus session bus and reads /proc (Linux only)")
    elif "app" in sections:
        log(f"bench: app ({args.build} build under Xvfb)")
        app_result = app_section.app(tools, args, scratch, log)
        if "error" in app_result:
            failures.append({"cell": "app", "error": app_result["error"]})
    result = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "smoke": args.smoke,
        "note": args.note,
        "machine": {**machine(), "loadavg_before": before["loadavg"]},
        "method": {"hang_bound_s": args.hang_bound, "runs": args.runs, "calls": args.calls, "warmup": args.warmup,
                   "fixture_build": tools.fixture_build, "order": "alternating " + " ".join(args.clients)},
        "call_path": records,
        "ratios": ratios(records),
        "gateway": gateway_result,
        "serve": serve_result,
        "fault_matrix": faults,
        "scale": scale_result,
        "app": app_result,
        "search": search_result,
        "aggregate": aggregate_result,
        "wake": wake_result,
        "failures": failures,
        "seconds": round(time.time() - started, 1),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    keep_sections(result, out_dir / "benchmarks.json", sections)
    (out_dir / "benchmarks.json").write_text(json.dumps(result, indent=2) + "\n")
    report.write(result, out_dir / "benchmarks.md", out_dir / "benchmarks")
    log(f"bench: wrote {out_dir / 'benchmarks.json'} and benchmarks.md in {result['seconds']} s")
    if failures:
        log(f"bench: {len(failures)} run(s) failed; see `failures` in benchmarks.json")
        sys.exit(1)


if __name__ == "__main__":
    main()
