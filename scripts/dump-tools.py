#!/usr/bin/env python3
"""Dumps the `tools/list` of the real MCP servers the peer tests run, as they list them, into
crates/core/tests/data/real-tools.json: the corpus of the search mode's labelled query set
(crates/core/tests/data/tool-queries.json, docs/gateway.md "Search mode").

    scripts/dump-tools.py [--node-modules DIR] [--venv DIR] [--out FILE]

The servers: npm @modelcontextprotocol/server-everything, server-filesystem and server-memory
(from tests/peers/node_modules, which scripts/setup.sh installs), PyPI mcp-server-time and
mcp-server-git (from the venv's bin/). Each is spawned over stdio, initialized, and asked for
every page of `tools/list`; nothing else is called. Settings that would leak into the text
are fixed: the time server's local timezone is UTC, the filesystem server's one allowed
directory and the memory server's file are in a temporary directory, the git server is
given none. Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_version(path):
    """The `version` of the package.json (npm) or METADATA (PyPI) at `path`."""
    if path.name == "package.json":
        return json.loads(path.read_text())["version"]
    for line in path.read_text().splitlines():
        if line.startswith("Version: "):
            return line.split(": ", 1)[1]
    return "unknown"


def list_tools(argv, env):
    """Every tool `argv` lists over stdio, in its order (all pages)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **env})

    def ask(id_, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                                     "params": params}) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a server's stray output on stdout
            if msg.get("id") == id_:
                if "error" in msg:
                    raise RuntimeError(f"{argv[-1]}: {method} failed: {msg['error']}")
                return msg["result"]
        raise RuntimeError(f"{argv}: exited (status {proc.wait()}) during {method}")

    try:
        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "lifeline-dump-tools", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0",
                                     "method": "notifications/initialized"}) + "\n")
        tools, cursor, n = [], None, 2
        while True:
            page = ask(n, "tools/list", {"cursor": cursor} if cursor else {})
            tools += page.get("tools", [])
            cursor, n = page.get("nextCursor"), n + 1
            if not cursor or n > 100:
                return tools
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--node-modules", default=str(ROOT / "tests/peers/node_modules"))
    p.add_argument("--venv", default=str(ROOT / ".tools/venv"))
    p.add_argument("--node", default="node")
    p.add_argument("--out", default=str(ROOT / "crates/core/tests/data/real-tools.json"))
    args = p.parse_args()
    npm = Path(args.node_modules) / "@modelcontextprotocol"
    venv = Path(args.venv)
    site = next(venv.glob("lib/python*/site-packages"), venv)
    scratch = Path(tempfile.mkdtemp(prefix="lifeline-dump-tools-"))
    (scratch / "allowed").mkdir()

    def node(package):
        entry = npm / package / "dist/index.js"
        if not entry.exists():
            sys.exit(f"dump-tools: {entry} not found: run scripts/setup.sh (or pass "
                     "--node-modules)")
        version = package_version(npm / package / "package.json")
        return f"@modelcontextprotocol/{package}", version, [args.node, str(entry)]

    def python(package):
        exe = venv / "bin" / package
        if not exe.exists():
            sys.exit(f"dump-tools: {exe} not found: run scripts/setup.sh (or pass --venv)")
        meta = next(site.glob(f"{package.replace('-', '_')}-*.dist-info/METADATA"), None)
        return package, package_version(meta) if meta else "unknown", [str(exe)]

    servers = [
        ("everything", node("server-everything"), ["stdio"], {}),
        ("filesystem", node("server-filesystem"), [str(scratch / "allowed")], {}),
        ("memory", node("server-memory"), [], {"MEMORY_FILE_PATH": str(scratch / "memory.jsonl")}),
        ("time", python("mcp-server-time"), ["--local-timezone", "UTC"], {}),
        ("git", python("mcp-server-git"), [], {}),
    ]
    out = {"_about": "tools/list of real MCP servers, as listed (scripts/dump-tools.py); the "
                     "host-facing name of each tool is `server__tool`",
           "servers": {}}
    for name, (package, version, argv), extra, env in servers:
        tools = list_tools(argv + extra, env)
        out["servers"][name] = {"package": f"{package}@{version}", "tools": tools}
        print(f"dump-tools: {name}: {package}@{version}, {len(tools)} tools", file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"dump-tools: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
