"""The benchmark's serve section (issue 25 item 9): `lifeline serve` in front of the fixture's
Streamable HTTP server, called the way hosts call it. The SDK clients keep one HTTP
connection open; on a kept-alive connection a reply written in more than one piece used to
wait out the client's delayed ACK (Nagle's algorithm: ~44 ms p50 per call). Four cells, one
`tools/call` at a time, alternating run by run:

  direct kept-alive   the fixture itself, one connection for every call
  direct fresh        the fixture itself, a new connection per call
  serve kept-alive    through `lifeline serve`, one connection for every call
  serve fresh         through `lifeline serve`, a new connection per call (as curl does)

The client is Python's http.client (it sends a request's headers and body in one write, so
the client adds no Nagle wait of its own), in this process; the per-call round trip is
measured around the request and the parse of its answer (JSON or an event stream). Called
by run.py (`--only serve`).
"""

import http.client
import json
import os
import statistics
import subprocess
import threading
import time
from urllib.parse import urlsplit

ACCEPT = "application/json, text/event-stream"


class Client:
    """An MCP Streamable HTTP client over http.client: one session; one kept connection or a
    new connection per request."""

    def __init__(self, url, keep_alive):
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.keep_alive = keep_alive
        self.conn = None
        self.session = None
        self.next_id = 0

    def connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        return self.conn

    def post(self, body):
        headers = {"Content-Type": "application/json", "Accept": ACCEPT,
                   "MCP-Protocol-Version": "2025-06-18"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        conn = self.connection()
        conn.request("POST", self.path, body=json.dumps(body).encode(), headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        if not self.keep_alive or resp.will_close:
            conn.close()
            self.conn = None
        if resp.status >= 300:
            raise RuntimeError(f"POST {body.get('method')} answered {resp.status}")
        return resp, data

    def request(self, method, params):
        self.next_id += 1
        resp, data = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                "params": params})
        session = resp.getheader("mcp-session-id")
        if session:
            self.session = session
        message = parse(resp.getheader("content-type", ""), data, self.next_id)
        if "error" in message:
            raise RuntimeError(f"{method} failed: {message['error'].get('message')}")
        return message["result"]

    def notify(self, method):
        self.post({"jsonrpc": "2.0", "method": method})

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-serve", "version": "1"}})
        self.notify("notifications/initialized")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def parse(content_type, data, id_):
    """The JSON-RPC answer to `id_` in a JSON body or an event stream."""
    if content_type.startswith("application/json"):
        return json.loads(data)
    for event in data.decode().split("\n\n"):
        payload = "\n".join(l[5:].lstrip() for l in event.split("\n") if l.startswith("data:"))
        if payload:
            message = json.loads(payload)
            if message.get("id") == id_:
                return message
    raise RuntimeError("the event stream ended without the answer")


def measure(url, keep_alive, calls, warmup, tool, arguments):
    """p50/p99 (µs) and calls/s of `calls` sequential tools/call after `warmup` unmeasured."""
    client = Client(url, keep_alive)
    try:
        client.initialize()
        params = {"name": tool, "arguments": arguments}
        for _ in range(warmup):
            client.request("tools/call", params)
        times = []
        started = time.perf_counter_ns()
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            client.request("tools/call", params)
            times.append((time.perf_counter_ns() - t0) / 1000)
        wall = (time.perf_counter_ns() - started) / 1e9
    finally:
        client.close()
    times.sort()
    return {"p50_us": round(statistics.median(times), 1),
            "p99_us": round(times[min(len(times) - 1, int(len(times) * 0.99))], 1),
            "calls_per_s": round(calls / wall, 1)}


def start_serve(tools, upstream, scratch):
    """`lifeline serve --no-auth --port 0` serving the fixture at `upstream` as `fixture`;
    the process and its URL for the fixture."""
    config = scratch / "serve.json"
    config.write_text(json.dumps({"mcpServers": {"fixture": {"type": "http", "url": upstream}}}))
    state = scratch / "serve-state"
    state.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LIFELINE_LOGIN_PATH": "0", "XDG_STATE_HOME": str(state),
           "XDG_DATA_HOME": str(state), "LIFELINE_HISTORY": str(state / "history.db")}
    proc = subprocess.Popen([tools.lifeline, "serve", "--no-auth", "--port", "0",
                             "--config", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    prefix = "lifeline serve: listening on "
    for line in proc.stdout:
        if line.startswith(prefix):
            base = line[len(prefix):].strip()
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, f"{base}/servers/fixture/mcp"
    raise RuntimeError(f"lifeline serve exited before listening (exit {proc.wait()})")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(url, patience=30):
    """Until the served fixture answers an initialize (its supervisor is connected)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            client = Client(url, True)
            client.initialize()
            client.request("tools/list", {})
            client.close()
            return
        except (OSError, RuntimeError, http.client.HTTPException) as e:
            if time.monotonic() > deadline:
                raise RuntimeError(f"lifeline serve did not serve the fixture in {patience} s: {e}")
            time.sleep(0.1)


CELLS = [("direct", True), ("direct", False), ("serve", True), ("serve", False)]


def serve(tools, args, scratch, http_server, log):
    """The four cells (module doc), medians of `args.runs` runs each."""
    from_ = lambda path, keep: f"{path} {'kept-alive' if keep else 'fresh'}"
    fixture = http_server([tools.fixture, "http"])
    proc = None
    try:
        proc, served = start_serve(tools, fixture.url, scratch)
        wait_ready(served)
        urls = {"direct": fixture.url, "serve": served}
        runs = {from_(p, k): [] for p, k in CELLS}
        for _ in range(args.runs):
            for path, keep in CELLS:
                record = measure(urls[path], keep, args.calls, args.warmup, "echo",
                                 {"text": "hello"})
                runs[from_(path, keep)].append(record)
                log(f"  {from_(path, keep)}: p50 {record['p50_us']} us, "
                    f"p99 {record['p99_us']} us")
    finally:
        if proc:
            stop(proc)
        fixture.stop()
    cells = []
    for path, keep in CELLS:
        samples = runs[from_(path, keep)]
        cells.append({"path": path, "connection": "kept-alive" if keep else "fresh",
                      "runs": len(samples), "calls": args.calls,
                      **{m: round(statistics.median(s[m] for s in samples), 1)
                         for m in ("p50_us", "p99_us", "calls_per_s")}})
    p50 = {(c["path"], c["connection"]): c["p50_us"] for c in cells}
    return {"cells": cells,
            "added_p50_us": round(p50[("serve", "kept-alive")] - p50[("direct", "kept-alive")], 1)}
