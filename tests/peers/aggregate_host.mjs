// The TypeScript SDK's client as a host of `lifeline connect --all` in front of real servers
// nobody here wrote (server-everything, -filesystem and -memory from npm, mcp-server-time and
// mcp-server-git from PyPI): connect over stdio, list every server's tools, call one tool on
// each, answer server-everything's sampling request; then, when asked, kill the memory
// server mid-session, call the others while it is down, let it come back and call it again.
// Prints one JSON line with what it saw; the Rust test
// (tests/tests/it/gateway/aggregate_peers.rs) asserts on it.
// Usage: node aggregate_host.mjs SPEC, SPEC a JSON object:
//   { lifeline, config, env: {NAME: VALUE}, servers: [NAME], file, repo,
//     kill?: { pidfile, marker, gate } }
// `kill`: the memory server's wrapper writes its pid to `pidfile`; a start that finds
// `marker` waits until a line is written to the FIFO `gate` before it runs the server.
import { readFile, writeFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const spec = JSON.parse(process.argv[2]);
// Every wait of this host is bounded, and says what it waited for.
const within = (ms, what, promise) =>
  Promise.race([
    promise,
    new Promise((_, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
      t.unref();
    }),
  ]);

const transport = new StdioClientTransport({
  command: spec.lifeline,
  args: ["connect", "--all", "--config", spec.config],
  // The SDK passes only a few variables on; the test's history and data directories must
  // reach `lifeline connect --all` too.
  env: { ...getDefaultEnvironment(), ...spec.env },
  stderr: "inherit",
});
const client = new Client(
  { name: "lifeline-aggregate-test-host", version: "1.0.0" },
  { capabilities: { sampling: {} } },
);
const sampled = [];
client.setRequestHandler(CreateMessageRequestSchema, async (r) => {
  const asked = r.params.messages[0].content.text;
  sampled.push(asked);
  return {
    model: "host-model",
    role: "assistant",
    content: { type: "text", text: `the host's answer to <${asked}>` },
  };
});
let listChanges = 0;
let listChanged = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  listChanges += 1;
  listChanged();
});

await within(60_000, "initialize", client.connect(transport));
const out = { server: client.getServerVersion() };

// A server not ready within the endpoint's own wait is left out of the first list and
// comes with a list_changed: list until every server's tools are there.
const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
const missing = (tools) => spec.servers.filter((s) => !tools.some((t) => t.startsWith(`${s}__`)));
const changedSince = (seen) =>
  new Promise((resolve) => {
    listChanged = () => listChanges > seen && resolve();
    listChanged();
  });
let seen = listChanges;
let tools = await names();
const deadline = Date.now() + 60_000;
while (missing(tools).length > 0) {
  const left = Math.max(deadline - Date.now(), 0);
  const what = `list_changed bringing ${missing(tools).join(", ")}'s tools (have ${tools})`;
  await within(left, what, changedSince(seen));
  seen = listChanges;
  tools = await names();
}
out.tools = tools;

const text = (r) => (r.isError ? "ERROR: " : "") + r.content.map((c) => c.text ?? "").join("\n");
const call = async (name, args) => text(await client.callTool({ name, arguments: args }));
const others = async () => ({
  everything: await call("everything__echo", { message: "hello through lifeline" }),
  filesystem: await call("filesystem__read_text_file", { path: spec.file }),
  time: await call("time__get_current_time", { timezone: "Etc/UTC" }),
  git: await call("git__git_status", { repo_path: spec.repo }),
});
out.calls = {
  ...(await others()),
  allowed: await call("filesystem__list_allowed_directories", {}),
  created: await call("memory__create_entities", {
    entities: [{ name: "lifeline", entityType: "project", observations: ["keeps MCP alive"] }],
  }),
  memory: await call("memory__read_graph", {}),
};
out.sampling = await call("everything__trigger-sampling-request", {
  prompt: "which upstream asked?",
  maxTokens: 20,
});
out.sampled = sampled;

if (spec.kill) {
  const pid = Number((await readFile(spec.kill.pidfile, "utf8")).trim());
  const changesBefore = listChanges;
  await writeFile(spec.kill.marker, "");
  process.kill(pid, "SIGKILL");
  // The memory server's next start waits at the gate, so it is down for all of these.
  const whileDown = await others();
  const listWhileDown = await names();
  // Opening the gate for writing returns once the next start is waiting at it: Lifeline
  // saw the process die and started it again.
  await within(60_000, "the memory server's next start at the gate", writeFile(spec.kill.gate, "go\n"));
  const memory = await call("memory__read_graph", {});
  const pidAfter = Number((await readFile(spec.kill.pidfile, "utf8")).trim());
  // The answer to a ping comes after anything Lifeline wrote before it.
  await client.ping();
  out.kill = {
    pid,
    pidAfter,
    whileDown,
    sameListWhileDown: JSON.stringify(listWhileDown) === JSON.stringify(tools),
    memory,
    sameListAfter: JSON.stringify(await names()) === JSON.stringify(tools),
    listChanges: listChanges - changesBefore,
  };
}
await client.close();
console.log(JSON.stringify(out));
