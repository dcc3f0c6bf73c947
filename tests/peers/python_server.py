"""A real MCP server built on the official Python SDK, for Lifeline's integration tests.

Run it with the interpreter of the venv that scripts/setup.sh makes:

    <repo>/.tools/venv/bin/python <repo>/tests/peers/python_server.py [--port N]
        [--stateless] [--json-response] [--sse]

It serves Streamable HTTP at /mcp on 127.0.0.1 only (with --sse: the legacy HTTP+SSE
transport of 2024-11-05, GET /sse and POST /messages/, announced as /sse). With the default --port 0 the
kernel picks a free port. Once the socket is bound and the server accepts
connections, it writes exactly one line to stdout, and flushes it:

    LISTENING http://127.0.0.1:<port>/mcp

Nothing else is written to stdout; logs go to stderr. SIGTERM or SIGINT stops it
within about a second, even with open SSE streams.

Tools: echo(text) -> text, add(a, b) -> a + b.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

HOST = "127.0.0.1"

mcp = MCPServer(name="lifeline-python-peer", version="1.0.0")


@mcp.tool(description="Return the text unchanged.")
def echo(text: str) -> str:
    return text


@mcp.tool(description="Add two numbers.")
def add(a: int | float, b: int | float) -> int | float:
    return a + b


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: a free one)")
    p.add_argument("--stateless", action="store_true", help="no sessions (no Mcp-Session-Id)")
    p.add_argument(
        "--json-response",
        action="store_true",
        help="answer POSTs with application/json instead of an SSE stream",
    )
    p.add_argument(
        "--sse",
        action="store_true",
        help="serve the legacy HTTP+SSE transport (GET /sse, POST /messages/) instead",
    )
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    # Bind before starting uvicorn, so the port we announce is the one really bound.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, args.port))
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]

    if args.sse:
        app = mcp.sse_app(host=HOST)
        path = "/sse"
    else:
        app = mcp.streamable_http_app(
            stateless_http=args.stateless,
            json_response=args.json_response,
            host=HOST,
        )
        path = "/mcp"
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            # Startup failed; surface the error (or a plain failure) and stop.
            task.result()
            raise SystemExit("python_server: uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    sys.stdout.write(f"LISTENING http://{HOST}:{port}{path}\n")
    sys.stdout.flush()
    await task


def main() -> None:
    args = parse_args(sys.argv[1:])
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
