"""The benchmark's aggregate section (issue 27, "Benchmarks"; bench/METHOD.md "The aggregated
endpoint"): `lifeline connect --all` in front of 20 `lifeline-fixture stdio` servers of 25
tools each (the fixture's ten and `"extra_tools": 15`), driven by a host over stdio, against
`lifeline connect NAME` in front of one of them. Called by run.py (`--only aggregate`).

Two hosts: `bench-host` (bench/src/bin/host.rs, raw JSON-RPC lines on blocking pipes: what it
times is Lifeline's side and the pipe, so the targets are judged on it) and the TypeScript
SDK client (bench/drivers/typescript.cjs, the gateway section's host: what a real host sees,
its own cost included). Cells:

  call one    `tools/call echo` through `lifeline connect fixture01`
  call all    `tools/call fixture01__echo` through `lifeline connect --all`
  list one    `tools/list` through `lifeline connect fixture01` (25 tools; bench-host only)
  list all    `tools/list` through `lifeline connect --all` (500 tools)

bench-host drives one and all side by side, request by request in turn (`--versus`), so a
busy machine weighs on both alike; the TypeScript host runs one and all in turn, run by run.
Every step starts fresh bridges; their config (the 20 servers) and everything Lifeline writes
(`LIFELINE_HISTORY`, the names file beside it, XDG state) are in a temporary directory.
"""

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

SERVERS = 20
EXTRA_TOOLS = 15
TOOLS_PER_SERVER = 10 + EXTRA_TOOLS
CALLED = "fixture01"
METRICS = ("p50_us", "p99_us", "calls_per_s", "cpu_ms_per_10k")
# A run's steps: (host, request, path); path None is bench-host with one and all side by
# side. typescript's list is the SDK's listTools, its validation of the 500 tools included.
STEPS = [("host", "tools/call", None),
         ("typescript", "tools/call", "one"), ("typescript", "tools/call", "all"),
         ("host", "tools/list", None), ("typescript", "tools/list", "all")]
CELLS = [("host", "tools/call", "one"), ("host", "tools/call", "all"),
         ("typescript", "tools/call", "one"), ("typescript", "tools/call", "all"),
         ("host", "tools/list", "one"), ("host", "tools/list", "all"),
         ("typescript", "tools/list", "all")]
# The most a run's processes may take to be gone before the next run starts.
LEFTOVER_PATIENCE_S = 30


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def write_config(fixture, tmp):
    """The 20 servers' config; each fixture's command line ends in `-- <tmp>` (the fixture
    ignores what follows `--`), so that this run's processes can be told by it."""
    script = json.dumps({"extra_tools": EXTRA_TOOLS}, separators=(",", ":"))
    servers = {f"fixture{n:02}": {"command": fixture,
                                  "args": ["stdio", "--script", script, "--", str(tmp)]}
               for n in range(1, SERVERS + 1)}
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": servers}, indent=1))
    return config


def bridge_lines(tools, tmp, config):
    """The bridges' command lines, one and all. The environment is on the command line: the
    TypeScript SDK hands a stdio server only HOME, PATH and a few more."""
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    env = (f"env LIFELINE_LOGIN_PATH=0 LIFELINE_HISTORY={tmp / 'history.db'} "
           f"XDG_STATE_HOME={state} XDG_DATA_HOME={state}")
    tail = f"--config {config} --no-attach"
    return {"one": f"{env} {tools.lifeline} connect {CALLED} {tail}",
            "all": f"{env} {tools.lifeline} connect --all {tail}"}


def leftovers(marker):
    """The pids of processes whose command line holds `marker` (Linux's /proc; elsewhere
    none are looked for)."""
    if not os.path.isdir("/proc"):
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker in f.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def wait_gone(marker, log):
    """Until the run's bridge and fixtures have exited; past the patience, they are killed
    (by pid: every one was started by this run)."""
    deadline = time.monotonic() + LEFTOVER_PATIENCE_S
    while leftovers(marker):
        if time.monotonic() > deadline:
            for pid in leftovers(marker):
                log(f"  killing {pid}, still running {LEFTOVER_PATIENCE_S} s after its run")
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            return
        time.sleep(0.05)


def argv(tools, step, lines, calls, warmup):
    """A step's driver command line."""
    host, request, path = step
    common = ["--calls", str(calls), "--warmup", str(warmup)]
    if request == "tools/list":
        common.append("--list")
    else:  # listed once first, as hosts do
        common += ["--list-first", "--arguments", '{"text":"hello"}']
    if host == "host":
        out = [tools.host, "--stdio", lines["one"], "--versus", lines["all"]] + common
        return out + (["--tool", "echo", "--versus-tool", f"{CALLED}__echo"]
                      if request == "tools/call" else [])
    tool = "echo" if path == "one" else f"{CALLED}__echo"
    return tools.drivers["typescript"] + ["--stdio", lines[path]] + common + (
        ["--tool", tool] if request == "tools/call" else [])


def records_of(step, record):
    """The (cell, record) pairs of a step's record: bench-host's holds one and all."""
    host, request, path = step
    if path is not None:
        return [((host, request, path), record)]
    return [((host, request, "one"), record), ((host, request, "all"), record.get("versus"))]


def expected_tools(path):
    return TOOLS_PER_SERVER * (SERVERS if path == "all" else 1)


def median_cell(host, request, path, samples):
    cell = {"host": host, "request": request, "path": path, "runs": len(samples),
            "calls": samples[0]["calls"]}
    for m in METRICS + ("server_cpu_us_per_call", "parse_p50_us", "answer_bytes", "tools"):
        if m in samples[0]:
            cell[m] = round(statistics.median(s[m] for s in samples), 1)
    return cell


def aggregate(tools, args, run_driver, log):
    """The cells above, `args.runs` runs each, alternating; medians of the runs."""
    for path, what in [(tools.host, "bench-host (build bench/: make bench-build)"),
                       (tools.lifeline, "the lifeline CLI"),
                       (tools.drivers["typescript"][-1], "the TypeScript driver")]:
        if not Path(path).exists():
            return {}, [{"cell": "aggregate", "error": f"{what} not found at {path}"}]
    calls, lists = args.calls, max(20, args.calls // 5)
    warmups = {"tools/call": args.warmup, "tools/list": max(5, args.warmup // 10)}
    tmp = Path(tempfile.mkdtemp(prefix="lifeline-bench-aggregate-"))
    marker = str(tmp).encode()
    failures, runs = [], {cell: [] for cell in CELLS}
    before = loadavg()
    try:
        lines = bridge_lines(tools, tmp, write_config(tools.fixture, tmp))
        for n in range(args.runs):
            for step in STEPS:
                count = calls if step[1] == "tools/call" else lists
                record, error = run_driver(argv(tools, step, lines, count, warmups[step[1]]),
                                           args.timeout)
                wait_gone(marker, log)
                for cell, got in records_of(step, record) if record else []:
                    if got is None:
                        error = "bench-host gave no record for `connect --all`"
                    elif cell[1] == "tools/list" and got.get("tools") != expected_tools(cell[2]):
                        error = f"listed {got.get('tools')} tools, not {expected_tools(cell[2])}"
                    else:
                        runs[cell].append(got)
                        log(f"  run {n + 1} {' '.join(cell)}: p50 {got['p50_us']} us, "
                            f"p99 {got['p99_us']} us")
                if error:
                    failures.append({"cell": "aggregate " + " ".join(map(str, step)),
                                     "error": error})
                    log(f"  FAILED aggregate {' '.join(map(str, step))}: {error}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    after = loadavg()
    cells = [median_cell(*cell, samples) for cell, samples in runs.items() if samples]
    result = {"servers": SERVERS, "tools_per_server": TOOLS_PER_SERVER, "runs": args.runs,
              "calls": calls, "lists": lists, "called": CALLED,
              "loadavg_before": before, "loadavg_after": after, "cells": cells}
    by = {(c["host"], c["request"], c["path"]): c for c in cells}
    added = {}
    for host in ("host", "typescript"):
        one, all_ = by.get((host, "tools/call", "one")), by.get((host, "tools/call", "all"))
        if one and all_:
            added[host] = {"p50_us": round(all_["p50_us"] - one["p50_us"], 1),
                           "p99_us": round(all_["p99_us"] - one["p99_us"], 1)}
    result["added"] = added
    listed = by.get(("host", "tools/list", "all"))
    if listed:
        result["list_p50_us"], result["list_p99_us"] = listed["p50_us"], listed["p99_us"]
    log(f"  aggregate: list p50 {result.get('list_p50_us')} us; added {json.dumps(added)}; "
        f"load {before} -> {after}")
    return result, failures
