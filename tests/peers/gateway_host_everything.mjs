// The TypeScript SDK's client as a host of `lifeline connect` in front of
// @modelcontextprotocol/server-everything (stdio), declaring sampling, elicitation and roots:
// server-everything registers its trigger-sampling-request, trigger-elicitation-request and
// get-roots-list tools only for a client that declared those capabilities, and each of them
// asks the client. Prints one JSON line with what it saw; the Rust test
// (tests/tests/it/gateway/sdk_host.rs) asserts on it.
// Usage: node gateway_host_everything.mjs LIFELINE_BIN CONFIG_PATH SERVER_NAME
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [lifeline, config, name] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: lifeline,
  args: ["connect", name, "--config", config],
  // The SDK passes only a few variables on; the test's history directory (where its tool
  // pins are) must reach `lifeline connect` too.
  env: {
    ...getDefaultEnvironment(),
    ...(process.env.LIFELINE_HISTORY ? { LIFELINE_HISTORY: process.env.LIFELINE_HISTORY } : {}),
  },
  stderr: "inherit",
});
const client = new Client(
  { name: "lifeline-gateway-test-host", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
);
const asked = [];
client.setRequestHandler(CreateMessageRequestSchema, async (r) => {
  asked.push(r.method);
  return {
    model: "host-model",
    role: "assistant",
    content: { type: "text", text: "the host sampled this" },
  };
});
client.setRequestHandler(ElicitRequestSchema, async (r) => {
  asked.push(r.method);
  return { action: "accept", content: { name: "Host Person", check: true } };
});
client.setRequestHandler(ListRootsRequestSchema, async (r) => {
  asked.push(r.method);
  return { roots: [{ uri: "file:///host/root", name: "host root" }] };
});
await client.connect(transport);
const out = {};
const text = (r) => r.content.map((c) => c.text ?? "").join("\n");
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.sampling = text(
  await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hi" } }),
);
out.elicitation = text(
  await client.callTool({ name: "trigger-elicitation-request", arguments: {} }),
);
out.roots = text(await client.callTool({ name: "get-roots-list", arguments: {} }));
out.asked = asked;
await client.close();
console.log(JSON.stringify(out));
