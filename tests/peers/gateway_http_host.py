"""The official Python SDK's Streamable HTTP client as a host of `lifeline serve`, for
Lifeline's integration tests (tests/tests/it/gateway/http.rs): connect with a bearer token,
initialize, list the tools, call one, crash the upstream under a call, ping and call again,
and end the session (DELETE). Prints one JSON line with what it saw.

    <repo>/.tools/venv/bin/python <repo>/tests/peers/gateway_http_host.py URL TOKEN
"""

import json
import sys

import anyio
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(url: str, token: str) -> None:
    out = {}
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
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
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
