"""The official Python SDK's client as a host of `lifeline connect --all` in front of real
servers nobody here wrote (server-everything, -filesystem and -memory from npm,
mcp-server-time and mcp-server-git from PyPI), for tests/tests/it/gateway/aggregate_peers.rs:
connect over stdio, list every server's tools, call one tool on each, and answer
server-everything's sampling request from its own callback. Prints one JSON line with what
it saw; logs go to stderr.

    <repo>/.tools/venv/bin/python <repo>/tests/peers/aggregate_host.py SPEC

SPEC is a JSON object: {lifeline, config, env: {NAME: VALUE}, servers: [NAME], file, repo}.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.stdio import get_default_environment

SAMPLED = []


async def sampling(context, params):
    asked = params.messages[0].content.text
    SAMPLED.append(asked)
    return types.CreateMessageResult(
        model="host-model",
        role="assistant",
        content=types.TextContent(type="text", text=f"the host's answer to <{asked}>"),
    )


class ListChanges:
    """Counts `notifications/tools/list_changed`, and lets the host wait for the next."""

    def __init__(self):
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.count += 1
            self.event.set()
            self.event = anyio.Event()


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text(result):
    r = dump(result)
    prefix = "ERROR: " if r.get("isError") else ""
    return prefix + "\n".join(c.get("text", "") for c in r["content"])


async def main(spec: dict) -> None:
    # The SDK passes only a few variables on; the test's history and data directories must
    # reach `lifeline connect --all` too.
    params = StdioServerParameters(
        command=spec["lifeline"],
        args=["connect", "--all", "--config", spec["config"]],
        env={**get_default_environment(), **spec["env"]},
    )
    changes = ListChanges()
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, sampling_callback=sampling, message_handler=changes
        ) as session:
            with anyio.fail_after(60):
                init = dump(await session.initialize())
            out["server"] = init.get("serverInfo")

            async def names():
                return sorted(t.name for t in (await session.list_tools()).tools)

            def missing(tools):
                return [s for s in spec["servers"] if not any(t.startswith(s + "__") for t in tools)]

            # A server not ready within the endpoint's own wait is left out of the first
            # list and comes with a list_changed: list until every server's tools are there.
            with anyio.fail_after(60):
                while True:
                    next_change = changes.event
                    tools = await names()
                    if not missing(tools):
                        break
                    await next_change.wait()
            out["tools"] = tools

            async def call(name, arguments):
                return text(await session.call_tool(name, arguments))

            out["calls"] = {
                "everything": await call("everything__echo", {"message": "hello through lifeline"}),
                "filesystem": await call("filesystem__read_text_file", {"path": spec["file"]}),
                "time": await call("time__get_current_time", {"timezone": "Etc/UTC"}),
                "git": await call("git__git_status", {"repo_path": spec["repo"]}),
                "allowed": await call("filesystem__list_allowed_directories", {}),
                "created": await call(
                    "memory__create_entities",
                    {
                        "entities": [
                            {
                                "name": "lifeline",
                                "entityType": "project",
                                "observations": ["keeps MCP alive"],
                            }
                        ]
                    },
                ),
                "memory": await call("memory__read_graph", {}),
            }
            out["sampling"] = await call(
                "everything__trigger-sampling-request",
                {"prompt": "which upstream asked?", "maxTokens": 20},
            )
            out["sampled"] = SAMPLED
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
