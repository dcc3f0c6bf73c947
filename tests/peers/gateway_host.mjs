// The TypeScript SDK's client as a host of `lifeline connect`: connect over stdio, list the
// tools, call one, crash the upstream under a call, call again; then have the upstream ask
// it for sampling, elicitation and roots (the fixture's `ask` tool), answering each from
// its own handlers, and tell it the roots changed. Prints one JSON line with what it saw;
// the Rust test (tests/tests/it/gateway/sdk_host.rs) asserts on it.
// Usage: node gateway_host.mjs LIFELINE_BIN CONFIG_PATH SERVER_NAME
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
  // The SDK passes only a few variables on; the tests' history directory (where the app's
  // socket is) must reach `lifeline connect` too.
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
    content: { type: "text", text: `sampled: ${r.params.messages[0].content.text}` },
  };
});
client.setRequestHandler(ElicitRequestSchema, async (r) => {
  asked.push(r.method);
  return { action: "accept", content: { answer: "from the host" } };
});
client.setRequestHandler(ListRootsRequestSchema, async (r) => {
  asked.push(r.method);
  return { roots: [{ uri: "file:///host/root", name: "host root" }] };
});
const out = {};
let listChanged = 0;
await client.connect(transport);
client.fallbackNotificationHandler = async (n) => {
  if (n.method === "notifications/tools/list_changed") listChanged += 1;
};
out.server = client.getServerVersion();
out.protocol = transport.protocolVersion ?? null;
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.first = (await client.callTool({ name: "echo", arguments: { text: "one" } })).content[0].text;
try {
  await client.callTool({ name: "crash", arguments: { code: 3 } });
  out.crash = "succeeded";
} catch (e) {
  out.crash = { code: e.code, message: e.message, data: e.data ?? null };
}
await client.ping();
out.second = (await client.callTool({ name: "echo", arguments: { text: "two" } })).content[0].text;
// The upstream asks the host; the fixture answers each call with the host's answer.
out.asks = {};
for (const method of ["sampling/createMessage", "elicitation/create", "roots/list"]) {
  const r = await client.callTool({ name: "ask", arguments: { method } });
  out.asks[method] = JSON.parse(r.content[0].text);
}
out.asked = asked;
await client.sendRootsListChanged();
// A call after the notification: the gateway read (and passed on) the notification first.
await client.callTool({ name: "echo", arguments: { text: "three" } });
out.listChanged = listChanged;
await client.close();
console.log(JSON.stringify(out));
