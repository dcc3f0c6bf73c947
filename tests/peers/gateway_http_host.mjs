// The TypeScript SDK's StreamableHTTPClientTransport as a host of `lifeline serve`: connect
// to the local endpoint with a bearer token, list the tools, call one, crash the upstream
// under a call, ping and call again, have the upstream ask it for sampling, elicitation and
// roots (the fixture's `ask` tool; the requests come on the GET stream, the answers go back
// as POSTs), end the session (DELETE); then try without a token and with a wrong one. Prints one JSON line with what it saw; the Rust test
// (tests/tests/it/gateway/http.rs) asserts on it.
// Usage: node gateway_http_host.mjs URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const connect = async (bearer) => {
  const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client(
    { name: "lifeline-http-test-host", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
  );
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
  await client.connect(transport);
  return { client, transport };
};
const failure = (e) => ({ code: e.code ?? null, message: String(e.message), data: e.data ?? null });

const out = {};
const asked = [];
const { client, transport } = await connect(token);
out.session = transport.sessionId ?? null;
out.server = client.getServerVersion();
out.protocol = transport.protocolVersion ?? null;
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.first = (await client.callTool({ name: "echo", arguments: { text: "one" } })).content[0].text;
try {
  await client.callTool({ name: "crash", arguments: { code: 3 } });
  out.crash = "succeeded";
} catch (e) {
  out.crash = failure(e);
}
await client.ping();
out.second = (await client.callTool({ name: "echo", arguments: { text: "two" } })).content[0].text;
out.asks = {};
for (const method of ["sampling/createMessage", "elicitation/create", "roots/list"]) {
  const r = await client.callTool({ name: "ask", arguments: { method } });
  out.asks[method] = JSON.parse(r.content[0].text);
}
out.asked = asked;
await transport.terminateSession();
out.terminated = transport.sessionId === undefined;
await client.close();

for (const [what, bearer] of [["noToken", null], ["wrongToken", "lifeline_0000"]]) {
  try {
    await connect(bearer);
    out[what] = "connected";
  } catch (e) {
    out[what] = failure(e);
  }
}
console.log(JSON.stringify(out));
