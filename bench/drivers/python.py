"""The Python SDK (`mcp`) benchmark driver: the same command line, loop and JSON record as
bench/src/lib.rs (see docs/benchmarks.md). Run it with the project's venv (.tools/venv):

    python bench/drivers/python.py (--stdio 'CMD ARGS' | --http URL) [--concurrency N] ...
"""

import argparse
import json
import math
import os
import resource
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:
    from mcp.client.streamable_http import streamable_http_client as http_client
except ImportError:  # older SDKs spell it without the underscore
    from mcp.client.streamable_http import streamablehttp_client as http_client


def parse(argv):
    p = argparse.ArgumentParser(prog="python.py")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", help="the server's command line")
    where.add_argument("--http", help="the server's Streamable HTTP URL")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--tool", default="echo")
    p.add_argument("--arguments", type=json.loads, default={"text": "hello"})
    p.add_argument("--once", action="store_true", help="fault matrix: connect, one call")
    return p.parse_args(argv)


def percentile(sorted_samples, p):
    if not sorted_samples:
        return 0
    rank = max(1, math.ceil(p * len(sorted_samples) / 100))
    return sorted_samples[rank - 1]


def peak_rss_kb():
    """VmHWM of /proc/self/status, not ru_maxrss: Linux carries ru_maxrss across exec, so a
    driver started by the orchestrator would count the orchestrator's size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def measure(session, run):
    async def call():
        result = await session.call_tool(run.tool, run.arguments)
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            raise RuntimeError(f"the tool failed: {result.content}")

    for _ in range(run.warmup):
        await call()
    latencies = []
    counter = {"next": 0}

    async def worker():
        while counter["next"] < run.calls:
            counter["next"] += 1
            t = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - t) * 1e6)

    cpu_before = cpu_seconds()
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(max(1, run.concurrency)):
            tg.start_soon(worker)
    wall = time.perf_counter() - started
    cpu_ms = (cpu_seconds() - cpu_before) * 1000
    latencies.sort()
    n = len(latencies)
    return {
        "client": "python",
        "transport": "stdio" if run.stdio else "http",
        "concurrency": run.concurrency,
        "calls": n,
        "p50_us": round(percentile(latencies, 50)),
        "p99_us": round(percentile(latencies, 99)),
        "calls_per_s": round(n / wall, 1),
        "cpu_ms_per_10k": round(cpu_ms * 10000 / n, 1),
        "peak_rss_kb": peak_rss_kb(),
    }


async def once(session, run):
    """Fault-matrix mode: initialize, one call, how it ended and how long the step took."""
    t = time.perf_counter()
    try:
        await session.initialize()
    except Exception as e:
        return {"client": "python", "outcome": "error", "step": "connect",
                "seconds": time.perf_counter() - t, "error": repr(e)}
    t = time.perf_counter()
    try:
        result = await session.call_tool(run.tool, run.arguments)
        failed = getattr(result, "is_error", None) or getattr(result, "isError", None)
        outcome = {"outcome": "error", "error": "the tool failed"} if failed else {"outcome": "ok"}
    except Exception as e:
        outcome = {"outcome": "error", "error": repr(e)}
    return {"client": "python", "step": "call", "seconds": time.perf_counter() - t, **outcome}


async def session_run(session, run):
    if run.once:
        return await once(session, run)
    await session.initialize()
    return await measure(session, run)


async def main(run):
    if run.stdio:
        command, *args = run.stdio.split()
        params = StdioServerParameters(command=command, args=args)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await session_run(session, run)
    async with http_client(run.http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            return await session_run(session, run)


if __name__ == "__main__":
    run = parse(sys.argv[1:])
    try:
        record = anyio.run(main, run)
    except BaseException as e:  # one line saying why, for the orchestrator's log
        if run.once and not isinstance(e, KeyboardInterrupt):
            # A transport that dies under the session raises out of the context managers.
            print(json.dumps({"client": "python", "outcome": "error", "step": "call",
                              "seconds": None, "error": repr(e)}))
            sys.exit(0)
        print(f"benchmark run failed: {e!r}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(record), flush=True)
    os._exit(0)
