"""The official Python SDK's client as a host of `lifeline connect`, for Lifeline's
integration tests (tests/tests/it/gateway/sdk_host.rs): connect over stdio, initialize,
list the tools, call one, crash the upstream under a call, ping and call again; then have
the upstream ask it for sampling, elicitation and roots (the fixture's `ask` tool),
answered by its own callbacks. Prints one JSON line with what it saw; logs go to stderr.

    <repo>/.tools/venv/bin/python <repo>/tests/peers/gateway_host.py LIFELINE_BIN CONFIG NAME
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.stdio import get_default_environment

ASKED = []


async def sampling(context, params):
    ASKED.append("sampling/createMessage")
    return types.CreateMessageResult(
        model="host-model",
        role="assistant",
        content=types.TextContent(type="text", text="sampled: " + params.messages[0].content.text),
    )


async def elicitation(context, params):
    ASKED.append("elicitation/create")
    return types.ElicitResult(action="accept", content={"answer": "from the host"})


async def roots(context):
    ASKED.append("roots/list")
    return types.ListRootsResult(roots=[types.Root(uri="file:///host/root", name="host root")])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(lifeline: str, config: str, name: str) -> None:
    # The SDK passes only a few variables on; the test's history directory (where its tool
    # pins are) must reach `lifeline connect` too.
    env = get_default_environment()
    if "LIFELINE_HISTORY" in os.environ:
        env["LIFELINE_HISTORY"] = os.environ["LIFELINE_HISTORY"]
    params = StdioServerParameters(
        command=lifeline, args=["connect", name, "--config", config], env=env
    )
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read,
            write,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            list_roots_callback=roots,
        ) as session:
            init = dump(await session.initialize())
            out["server"] = init.get("serverInfo")
            out["protocol"] = init.get("protocolVersion")
            out["tools"] = [t.name for t in (await session.list_tools()).tools]
            first = await session.call_tool("echo", {"text": "one"})
            out["first"] = dump(first)["content"][0]["text"]
            try:
                await session.call_tool("crash", {"code": 3})
                out["crash"] = "succeeded"
            except MCPError as e:
                out["crash"] = {"code": e.code, "message": e.message, "data": e.error.data}
            await session.send_ping()
            second = await session.call_tool("echo", {"text": "two"})
            out["second"] = dump(second)["content"][0]["text"]
            out["asks"] = {}
            for method in ["sampling/createMessage", "elicitation/create", "roots/list"]:
                r = await session.call_tool("ask", {"method": method})
                out["asks"][method] = json.loads(dump(r)["content"][0]["text"])
            out["asked"] = ASKED
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
